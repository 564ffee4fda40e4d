"""What the tests import from `pyflink.java_gateway`, `pyflink.util.java_utils` and `py4j`: every name exists
(so a test module imports), and calling one says the test needs a JVM (the selection leaves such tests out; one
that reaches it anyway fails with this line)."""

from __future__ import annotations

from typing import Any, NoReturn


class NeedsJVMError(RuntimeError):
    """Raised by every stand-in: the test touched PyFlink's Java gateway, which fluvial does not have."""


def _needs_jvm(name: str):
    def stand_in(*args: Any, **kwargs: Any) -> NoReturn:
        raise NeedsJVMError(f"{name} needs PyFlink's Java gateway (a JVM); fluvial runs without one")

    stand_in.__name__ = name
    return stand_in


class JavaObject:
    """py4j's JavaObject: nothing is one (isinstance checks are false)."""


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return _needs_jvm(name)
