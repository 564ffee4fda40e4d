"""The runtime: runs the subtasks of a finished JobGraph (Flink's Task, StreamTask and their parts).

A `Task` (`task.py`) runs one subtask attempt from its deployment descriptor (`deployment.py`): its input
(`input_processor.py`: a source reader, or an input gate over `channels.py` with barrier handling in
`alignment.py` and the event-time clock in `watermarks.py`), its `OperatorChain` (`chain.py`, made of the
operators in `operators/`) and its `RecordWriter`s (`writer.py`, `channel_selectors.py`). One thread owns a task
(`mailbox.py`, `mailbox_executor.py`); a `TaskExecutor` (`executor.py`) runs the mailboxes of a TaskManager's tasks
cooperatively. `checkpointing.py` is a subtask's part in checkpoints; `network/` carries buffers and control
messages between processes.

May import: `common`, `datastream` (the vocabulary a job is described in, never its facade), `metrics`, `graph`
(the JobVertex it runs), `state`, `checkpoint`, `receiver`. Never `cluster`, `web`, `cli`: the TaskManager that
hosts tasks lives in `cluster/` and talks to them through the Protocols declared here.
"""
