"""A TaskManager's own records out of a log file it shares with the JobMaster and other TaskManagers: whole
records (a traceback's lines stay with their record), by the marker its forwarded records begin with."""

from __future__ import annotations

from fluvial.common.logs import records_marked, task_manager_log_marker

LOG = """\
2026-12-02 04:41:21,894 INFO    fluvial.cluster.process.pool [main] - TaskManager 0 registered
2026-12-02 04:41:22,001 WARNING fluvial.tests [t] - [TaskManager 0] shouting river
2026-12-02 04:41:22,002 ERROR   fluvial.runtime.task [t] - [TaskManager 1] failed
Traceback (most recent call last):
  File "job.py", line 3, in shout
ValueError: no
2026-12-02 04:41:22,003 INFO    fluvial.runtime.task [t] - [TaskManager 0] done
"""


def test_a_taskmanagers_records_are_kept_whole_and_only_its_own():
    assert task_manager_log_marker(1) == "[TaskManager 1] "
    assert records_marked(LOG, task_manager_log_marker(0)).splitlines() == [LOG.splitlines()[1], LOG.splitlines()[6]]
    assert records_marked(LOG, task_manager_log_marker(1)).splitlines() == LOG.splitlines()[2:6]
    assert records_marked(LOG, task_manager_log_marker(2)) == ""
