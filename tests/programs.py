"""Running a program in a process of its own as a user runs it, for tests that check what it prints."""

from __future__ import annotations

import os


def user_environment(**extra: str) -> dict[str, str]:
    """This process's environment without the suite's $FLUVIAL_LOG_LEVEL (tests/conftest.py sets NOTSET, so that
    pytest captures every fluvial record): in a user's shell fluvial's records reach the program's logging only
    from WARNING on, so a PyFlink example's `logging.basicConfig(stream=sys.stdout, level=INFO)` adds nothing to
    its output. `extra` variables are added."""
    environment = {key: value for key, value in os.environ.items() if key != "FLUVIAL_LOG_LEVEL"}
    environment.update(extra)
    return environment
