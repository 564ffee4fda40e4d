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
the TaskManager processes (an embedded cluster's start with the client's `sys.path` and working directory). A
session cluster's TaskManagers started elsewhere and cannot import the job's own modules: their classes are
captured the same way and installed as modules of their names (`fluvial.cluster.session.user_modules`).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Any

logger = logging.getLogger(__name__)

_installed: set[bytes] = set()  # payloads this process has installed already (one per job, usually the same)


def capture_main_classes(modules: Iterable[ModuleType] = ()) -> bytes | None:
    """The top-level classes of the client's `__main__` (its script) and of `modules` (the job's own modules,
    for a cluster that cannot import them: call while cloudpickle pickles them by value), cloudpickled by value
    as {module name: {class name: class}}; None if there are none."""
    namespaces: dict[str, dict[str, type]] = {}
    main = sys.modules.get("__main__")
    if main is not None and getattr(main, "__file__", None):  # not an interactive session or `python -c`
        namespaces["__main__"] = _shippable_classes(main, "__main__")
    for module in modules:
        for name, inner in list(sys.modules.items()):  # a package's submodules too
            if name == module.__name__ or name.startswith(module.__name__ + "."):
                namespaces[name] = _shippable_classes(inner, name)
    namespaces = {name: classes for name, classes in namespaces.items() if classes}
    if not namespaces:
        return None
    from fluvial.common.wire import dumps_code

    return dumps_code(namespaces)


def _shippable_classes(module: ModuleType, module_name: str) -> dict[str, type]:
    """The classes `module` defines at its top level that cloudpickle can ship."""
    from fluvial.common.wire import dumps_code

    classes = {name: value for name, value in vars(module).items()
               if isinstance(value, type) and value.__module__ == module_name and value.__qualname__ == name}
    shippable = {}
    for name, cls in classes.items():
        try:
            dumps_code(cls)
        except Exception as error:  # noqa: BLE001 - such a class fails later, where its records cross, by name
            logger.debug("class %s of %s cannot be shipped: %s", name, module_name, error)
            continue
        shippable[name] = cls
    return shippable


def install_main_classes(payload: bytes | None) -> None:
    """Put the script's classes into this TaskManager process's `__main__`, and the job's own modules' classes
    into modules of their names (created when this process has none), once per payload.

    They stay `__main__` classes, not classes of a module named after the job: state and savepoints refer to
    them as `__main__.Event`, which a later job from the same script — restored from that savepoint — resolves
    again. The price, in a session cluster whose TaskManagers run jobs of different scripts: a job's class
    replaces a same-named class of an earlier job (logged), which matters only while both jobs run."""
    if not payload or payload in _installed:
        return
    from fluvial.common.wire import loads_code

    namespaces: dict[str, dict[str, Any]] = loads_code(payload)
    for module_name, classes in namespaces.items():
        namespace = vars(_module_named(module_name))
        for name, cls in classes.items():
            previous = namespace.get(name)
            if isinstance(previous, type) and previous is not cls:
                logger.warning("class %s.%s of a job replaces the one of an earlier job in this TaskManager: jobs "
                               "that run at once should not define different classes of one name", module_name, name)
            namespace[name] = cls
    _installed.add(payload)


def _module_named(name: str) -> ModuleType:
    """The module `name` of this process; created empty (with its parent packages) when there is none, so that
    pickle finds the classes put into it as `name.Class`."""
    module = sys.modules.get(name)
    if module is None:
        module = sys.modules[name] = ModuleType(name)
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(_module_named(parent), child, module)
    return module
