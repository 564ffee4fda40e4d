"""How the job's code reaches TaskManagers in other processes — the processes of an embedded cluster, a session
cluster's, Ray's actors: captured once here, installed one way by every kind of TaskManager.

Records cross processes pickled by reference: an instance of `Event`, defined in the script a user ran, is
written as "`__main__.Event`, with these fields". In the client `__main__` is the script; in a TaskManager
process it is not, so without help the first record of such a class that crosses a process boundary fails
("Can't pickle <class '__main__.Event'>"). Running the script in the TaskManager is not an option (a script
without an `if __name__ == "__main__"` guard would submit its job again).

1. The job's own modules (`job_modules`): those its program imported from the job file's directory or from
   `python.files`, not from site-packages, the standard library or fluvial. A cluster that cannot import them
   (a session cluster, started elsewhere) gets them by value: the JobGraph is pickled inside
   `pickled_by_value(modules)`, so every function and class of theirs the job uses travels as code. Ray gets
   their files as `py_modules` in its runtime environment (`fluvial.cluster.ray.runtime_environment`, which also
   ships `ray.working-dir`).
2. The classes (`prepare_for_shipping` → `capture_classes`): the script's own top-level classes, and those of the
   modules shipped by value, are cloudpickled by value into `JobGraph.main_classes`.
3. The install (`install_classes`): each TaskManager, before the job's first subtask runs, puts the script's
   classes into its `__main__` and the modules' classes into modules of their names. cloudpickle gives a class
   the same identity wherever it is unpickled in one process, so the class a function builds records with and
   the class records are read back as are one object, and `isinstance` holds.

What is not shipped: a module the program never imported (one imported inside a function at run time, only in
the TaskManager). Import the job's modules at the top of the job file.
"""

from __future__ import annotations

import contextlib
import logging
import os
import site
import sys
import sysconfig
from collections.abc import Iterable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import fluvial

if TYPE_CHECKING:
    from fluvial.graph.job_graph import JobGraph

logger = logging.getLogger(__name__)

_installed: set[bytes] = set()  # payloads this process has installed already (one per job, usually the same)


# -- 1: the job's own modules ----------------------------------------------------------------------------------


def job_modules(python_files: Sequence[str] = ()) -> list[ModuleType]:
    """The imported top-level modules and packages of the job file's directory and of `python_files`, other than
    the job file itself; none when `__main__` is no job file of the user's (an interactive session, a tool
    installed in an environment) and no `python_files` are named."""
    job_file = _job_file()
    roots = [os.path.dirname(job_file)] if job_file else []
    roots += [os.path.realpath(path if os.path.isdir(path) else os.path.dirname(path)) for path in python_files]
    if not roots:
        return []
    installed = _installed_locations()

    def own(path: str | None) -> bool:
        return path is not None and path != job_file and _under(path, roots) and not _under(path, installed)

    found: dict[str, ModuleType] = {}
    for name, module in list(sys.modules.items()):
        if name == "__main__" or not own(_file_of(module)):
            continue
        top = name.partition(".")[0]
        top_module = sys.modules.get(top)
        if top_module is not None and own(_file_of(top_module)):
            found[top] = top_module
    return [found[name] for name in sorted(found)]


def module_paths(modules: Iterable[ModuleType]) -> list[str]:
    """Where `modules` live on disk: a single-file module's file, a package's directory (Ray's `py_modules`)."""
    paths = []
    for module in modules:
        path = _file_of(module)
        if path is not None:
            paths.append(os.path.dirname(path) if os.path.basename(path) == "__init__.py" else path)
    return sorted(paths)


@contextlib.contextmanager
def pickled_by_value(modules: Iterable[ModuleType]) -> Iterator[None]:
    """While the block runs, cloudpickle pickles `modules` by value (modules registered before stay registered)."""
    import cloudpickle

    before = set(cloudpickle.list_registry_pickle_by_value())
    added = [module for module in modules if module.__name__ not in before]
    for module in added:
        cloudpickle.register_pickle_by_value(module)
    try:
        yield
    finally:
        for module in added:
            cloudpickle.unregister_pickle_by_value(module)


def _job_file() -> str | None:
    """The running job file (`python job.py`, `fluvial run job.py`), or None when __main__ is no job file of the
    user's (an interactive session, `python -c`, a tool installed in an environment)."""
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    if not isinstance(path, str) or not path.endswith(".py"):
        return None
    path = os.path.realpath(path)
    if any(part in ("site-packages", "dist-packages") for part in path.split(os.sep)):
        return None
    return path


def _file_of(module: ModuleType) -> str | None:
    path = getattr(module, "__file__", None)
    return os.path.realpath(path) if isinstance(path, str) else None


def _installed_locations() -> list[str]:
    """Where installed code lives: site-packages, the interpreter's prefixes, the standard library, fluvial."""
    places = [
        *site.getsitepackages(),
        site.getusersitepackages(),
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sysconfig.get_paths()["stdlib"],
        os.path.dirname(fluvial.__file__),
    ]
    return [os.path.realpath(place) for place in places if place]


def _under(path: str, directories: list[str]) -> bool:
    return any(path == directory or path.startswith(directory.rstrip(os.sep) + os.sep) for directory in directories)


# -- 2: the classes, captured ----------------------------------------------------------------------------------


def prepare_for_shipping(job_graph: JobGraph, modules: Iterable[ModuleType] = ()) -> None:
    """Before a job goes to TaskManagers in other processes: check that its functions and files travel
    (`shipping_checks`), and give it the classes of the job's script and of `modules` (the modules shipped by
    value: call inside `pickled_by_value(modules)`), which the TaskManagers install before the job's first record."""
    from fluvial.cluster.shipping_checks import check_functions_can_be_shipped, check_locations_reach_task_managers

    check_functions_can_be_shipped(job_graph)
    check_locations_reach_task_managers(job_graph)
    job_graph.main_classes = capture_classes(modules)


def capture_classes(modules: Iterable[ModuleType] = ()) -> bytes | None:
    """The top-level classes of the client's `__main__` (its script) and of `modules` (with their submodules),
    cloudpickled by value as {module name: {class name: class}}; None if there are none."""
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

    classes = {
        name: value
        for name, value in vars(module).items()
        if isinstance(value, type) and value.__module__ == module_name and value.__qualname__ == name
    }
    shippable = {}
    for name, cls in classes.items():
        try:
            dumps_code(cls)
        except Exception as error:  # noqa: BLE001 - such a class fails later, where its records cross, by name
            logger.debug("class %s of %s cannot be shipped: %s", name, module_name, error)
            continue
        shippable[name] = cls
    return shippable


# -- 3: the classes, installed ---------------------------------------------------------------------------------


def install_classes(payload: bytes | None) -> None:
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
                logger.warning(
                    "class %s.%s of a job replaces the one of an earlier job in this TaskManager: jobs "
                    "that run at once should not define different classes of one name",
                    module_name,
                    name,
                )
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
