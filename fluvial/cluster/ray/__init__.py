"""TaskManagers as Ray actors (`execution.target: ray`, DESIGN 4): the same jobs on a Ray cluster, with Ray
owning placement and process lifetime, and fluvial its own dataflow.

Flink's concepts on Ray (docs/ray.md says it for users):
- the cluster manager is the Ray cluster itself; fluvial connects to one or starts a local one
  (`connection.py`, `local_cluster.py`);
- the JobMaster runs in the client, as in process mode (`cluster.py`), or — submitted detached — in a named
  detached actor (`detached.py`);
- a TaskManager is a long-lived Ray actor holding `taskmanager.numberOfTaskSlots` slots (`actor.py`,
  `task_managers.py`); the job's slots are one placement group, a bundle per TaskManager, reserved before
  anything deploys (`placement.py`); subtasks that share a slot share the actor's process;
- control messages JobMaster → TaskManager are actor calls carrying the dataclasses of `cluster/messages.py`,
  at most a window in flight (`gateway.py`); TaskManager → JobMaster they travel over the process mode's
  authenticated control connection back to the client;
- data flows over the process mode's TCP data plane between actors, authenticated with the job's secret;
- the job's code travels cloudpickled, and the modules it imports from its own directory through Ray's runtime
  environment (`runtime_environment.py`), and its classes as in every kind of cluster (`cluster/code_shipping.py`).
"""
