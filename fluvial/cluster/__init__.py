"""The cluster: what turns a JobGraph into running tasks and keeps it running (Flink's JobMaster, scheduler,
TaskExecutor and MiniCluster).

`execution_graph.py` expands a JobGraph into subtask attempts; `scheduler.py` deploys them into slots
(`slots.py`), fails over and restarts by the job's restart strategy; `job_master.py` owns one job on one mailbox
thread, with its checkpointing (`job_checkpointing.py`); `task_manager.py` hosts tasks; `gateways.py` are the
Protocols between JobMaster and TaskManagers and `messages.py` the dataclasses they carry — the only
cross-process contract. One folder per deployment: `process/` (TaskManagers as processes of this machine),
`session/` (a long-running session cluster), `ray/` (TaskManagers as Ray actors). `local_executor.py` and
`mini_cluster.py` run a job embedded; `compile.py` is the executors' one compile step; `code_shipping.py` is how
the job's code reaches TaskManagers in other processes, whatever the deployment (`shipping_checks.py` what must
hold first).

May import every layer below it: `common`, `datastream`, `metrics`, `graph`, `state`, `checkpoint`, `receiver`,
`runtime`. Never `web` or `cli`: a composition root that puts the REST API on a cluster lives above both.
"""
