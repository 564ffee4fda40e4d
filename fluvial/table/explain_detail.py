"""`ExplainDetail` (PyFlink's): extra details `explain` may show."""

from enum import Enum


class ExplainDetail(Enum):
    ESTIMATED_COST = 0
    CHANGELOG_MODE = 1
    JSON_EXECUTION_PLAN = 2
    PLAN_ADVICE = 3
