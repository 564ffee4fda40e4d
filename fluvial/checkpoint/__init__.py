"""Checkpoints on the JobMaster's side (DESIGN 2.3): the CheckpointCoordinator (`coordinator.py`) triggering
and collecting acks into pending checkpoints (`pending.py`), the plan of which tasks to trigger and wait for
(`plan.py`), checkpoint storage (`storage.py`: JobManager or file system), retained completed checkpoints
(`store.py`), their metadata in an explicit format (`metadata.py`, `metadata_format.py`), savepoints, failure
handling, and restore with rescaling by key groups (`restore.py`). Barrier alignment happens in the tasks, in
`runtime/alignment.py`.

May import `common`, `datastream`, `metrics` and `state`; never the runtime or the cluster.
"""
