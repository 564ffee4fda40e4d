"""How a job's code reaches TaskManager actors on other machines: Ray's runtime environment.

The job's functions travel inside its deployments, cloudpickled (`fluvial.common.wire`): a function defined in
the job file itself travels by value. A function of a module the job file imports from its own directory
(`from helpers import parse`) travels by reference, so that module must be importable where the TaskManager
runs. Such modules — the job's own modules as `fluvial.cluster.code_shipping.job_modules` finds them for every
kind of cluster, already imported when the job is submitted — are shipped as Ray `py_modules`; their classes and
the script's travel in the JobGraph (`code_shipping.prepare_for_shipping`) and are installed as in any
TaskManager. `ray.working-dir` ships a whole directory as the actors' working directory (Ray's `working_dir`: it
is their current directory and on their sys.path), for data files the job opens by relative path and for
modules imported only inside functions. fluvial itself and the packages the job uses must be installed on every node, as Ray must.
"""

from __future__ import annotations

import logging
from typing import Any

from fluvial.cluster.code_shipping import job_modules, module_paths

logger = logging.getLogger(__name__)


def runtime_environment(working_dir: str | None, env_vars: dict[str, str]) -> dict[str, Any]:
    """Ray's runtime_env for the job's TaskManager actors, its local paths uploaded to the cluster (Ray takes
    local paths only in `ray.init`'s job-level environment, so they are uploaded here as `ray.init` would: to the
    cluster's storage, as content-addressed packages that later jobs with the same files reuse)."""
    environment: dict[str, Any] = {}
    modules = module_paths(job_modules())
    if modules:
        environment["py_modules"] = modules
    if working_dir is not None:
        environment["working_dir"] = working_dir
    if modules or working_dir is not None:
        environment = _uploaded(environment)
    if env_vars:
        environment["env_vars"] = dict(env_vars)
    return environment


def _uploaded(environment: dict[str, Any]) -> dict[str, Any]:
    """`environment` with its local paths replaced by the URIs of their uploaded packages (Ray's own upload
    functions, those `ray.init` calls)."""
    from ray._private.runtime_env.py_modules import upload_py_modules_if_needed
    from ray._private.runtime_env.working_dir import upload_working_dir_if_needed
    from ray._private.worker import global_worker

    # connected to Ray (RayExecutor connects first): the worker's node is set; Ray types it Optional
    scratch_dir = global_worker.node.get_runtime_env_dir_path()  # type: ignore[union-attr]
    environment = upload_py_modules_if_needed(
        environment, include_gitignore=True, scratch_dir=scratch_dir, logger=logger
    )
    return upload_working_dir_if_needed(environment, include_gitignore=True, scratch_dir=scratch_dir, logger=logger)
