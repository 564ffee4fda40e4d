"""The job's own modules — those its program imported from its own directory or from `python.files`, not from
site-packages or the standard library — shipped with the job to a session cluster.

A session cluster's JobManager and TaskManagers were started before the job, from another directory: they cannot
import `helper.py` that sits next to the job file. So, when the JobGraph is pickled, those modules are pickled
by value (cloudpickle.register_pickle_by_value, only for that one dump): every function and class of theirs that
the job uses travels as code, not as a name to import. Their classes also travel in the job's class payload
(`fluvial.cluster.process.main_classes`), which each TaskManager installs as the module of that name before the
job's first record, so that records and state of those classes pickle between processes and restore after a
failover, as the script's own classes do.

What is not shipped: a module the program never imported (one imported inside a function at run time, only in
the TaskManager). Import the job's modules at the top of the job file.
"""

from __future__ import annotations

import contextlib
import os
import site
import sys
import sysconfig
from collections.abc import Iterator
from types import ModuleType

import fluvial


def user_modules(python_files: list[str] = ()) -> list[ModuleType]:
    """The imported top-level modules and packages of the job file's directory and of `python_files`."""
    main = sys.modules.get("__main__")
    main_file = getattr(main, "__file__", None)
    roots = [os.path.dirname(os.path.realpath(main_file))] if main_file else []
    roots += [os.path.realpath(path if os.path.isdir(path) else os.path.dirname(path)) for path in python_files]
    if not roots:
        return []
    installed = _installed_locations()
    found: dict[str, ModuleType] = {}
    for name, module in list(sys.modules.items()):
        path = _file_of(module)
        if name == "__main__" or path is None or not _under(path, roots) or _under(path, installed):
            continue
        top = name.partition(".")[0]
        top_module = sys.modules.get(top)
        top_path = _file_of(top_module) if top_module is not None else None
        if top_path is not None and _under(top_path, roots) and not _under(top_path, installed):
            found[top] = top_module
    return list(found.values())


@contextlib.contextmanager
def pickled_by_value(modules: list[ModuleType]) -> Iterator[None]:
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


def _file_of(module: ModuleType) -> str | None:
    path = getattr(module, "__file__", None)
    return os.path.realpath(path) if isinstance(path, str) else None


def _installed_locations() -> list[str]:
    """Where installed code lives: site-packages, the interpreter's prefixes, the standard library, fluvial."""
    places = [*site.getsitepackages(), site.getusersitepackages(), sys.prefix, sys.base_prefix, sys.exec_prefix,
              sysconfig.get_paths()["stdlib"], os.path.dirname(fluvial.__file__)]
    return [os.path.realpath(place) for place in places if place]


def _under(path: str, directories: list[str]) -> bool:
    return any(path == directory or path.startswith(directory.rstrip(os.sep) + os.sep) for directory in directories)
