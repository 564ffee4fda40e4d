"""Classes defined in the job's script, made known to TaskManager processes.

Records cross processes pickled by reference: an instance of `Event`, defined in the script a user ran, is
written as "`__main__.Event`, with these fields". In the client `__main__` is the script; in a TaskManager
process it is not, so without help the first record of such a class that crosses a process boundary fails
("Can't pickle <class '__main__.Event'>"). Running the script in the TaskManager is not an option (a script
without an `if __name__ == "__main__"` guard would submit its job again).

So at submission the script's own top-level classes are captured by value (cloudpickle, which also ships the
functions that use them), and each TaskManager process puts them into its `__main__` before it runs the job's
first subtask. cloudpickle gives a class the same identity wherever it is unpickled in one process, so the
class a function builds records with and the class records are read back as are one object, and `isinstance`
holds. Classes of modules the script imports travel by reference as usual: those modules must be importable in
the TaskManager processes (they start with the client's `sys.path` and working directory).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

logger = logging.getLogger(__name__)

_installed: set[bytes] = set()  # payloads this process has installed already (one per job, usually the same)


def capture_main_classes() -> bytes | None:
    """The top-level classes of the client's `__main__` (its script), cloudpickled by value; None if none."""
    main = sys.modules.get("__main__")
    if main is None or not getattr(main, "__file__", None):
        return None  # an interactive session or `python -c`: nothing a TaskManager could miss but cannot get
    classes = {name: value for name, value in vars(main).items()
               if isinstance(value, type) and value.__module__ == "__main__" and value.__qualname__ == name}
    if not classes:
        return None
    from fluvial.common.wire import dumps_code

    shippable = {}
    for name, cls in classes.items():
        try:
            dumps_code(cls)
        except Exception as error:  # noqa: BLE001 - such a class fails later, where its records cross, by name
            logger.debug("class %s of the job's script cannot be shipped: %s", name, error)
            continue
        shippable[name] = cls
    return dumps_code(shippable) if shippable else None


def install_main_classes(payload: bytes | None) -> None:
    """Put the script's classes into this TaskManager process's `__main__` (once per payload).

    They stay `__main__` classes, not classes of a module named after the job: state and savepoints refer to
    them as `__main__.Event`, which a later job from the same script — restored from that savepoint — resolves
    again. The price, in a session cluster whose TaskManagers run jobs of different scripts: a job's class
    replaces a same-named class of an earlier job (logged), which matters only while both jobs run."""
    if not payload or payload in _installed:
        return
    from fluvial.common.wire import loads_code

    classes: dict[str, Any] = loads_code(payload)
    namespace = vars(sys.modules["__main__"])
    for name, cls in classes.items():
        previous = namespace.get(name)
        if isinstance(previous, type) and previous is not cls:
            logger.warning("class %s of a job's script replaces the one of an earlier job in this TaskManager: "
                           "jobs that run at once should not define different classes of one name", name)
        namespace[name] = cls
    _installed.add(payload)
