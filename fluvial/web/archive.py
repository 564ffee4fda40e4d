"""Job archives, as Flink's JobManager writes them for its history server (`jobmanager.archive.fs.dir`).

When a job ends, its REST answers — the ones the dashboard reads for a job — are written to one file named by
the job's id in the archive directory (a local path or any fsspec URL): `{"archive": [{"path": "/jobs/<id>",
"json": "<the answer>"}, ...]}`, Flink's format. The file appears whole (written aside, then renamed), so a
history server reading the directory never sees half of one. `fluvial history-server` serves them
(`history_server.py`).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from fluvial.web import views

logger = logging.getLogger(__name__)

ARCHIVE_KEY = "jobmanager.archive.fs.dir"


def job_archive(view: Any) -> list[dict[str, str]]:
    """The REST answers of an ended job (a JobView), as (path, JSON text) entries."""
    details = view.details
    base = f"/jobs/{details.job_id}"
    answers: dict[str, Any] = {
        "/jobs/overview": views.jobs_overview_json([details]),
        base: views.job_json(view),
        f"{base}/plan": views.plan_json(details),
        f"{base}/exceptions": views.exceptions_json(details, None),
        f"{base}/checkpoints": views.checkpoints_json(details),
        f"{base}/checkpoints/config": views.checkpoint_config_json(details),
        f"{base}/config": {"jid": details.job_id, "name": details.name, "execution-config": details.execution_config},
    }
    for vertex in details.vertices:
        rest_id = views.vertex_hex_id(details.job_id, vertex.id)
        answers[f"{base}/vertices/{rest_id}"] = views.vertex_json(view, vertex)
        answers[f"{base}/vertices/{rest_id}/backpressure"] = views.backpressure_json(view, vertex)
        answers[f"{base}/vertices/{rest_id}/watermarks"] = views.watermarks_json(view, vertex)
    return [{"path": path, "json": json.dumps(answer)} for path, answer in answers.items()]


def write_archive(view: Any, file_system: Any, root: str) -> str:
    """Write the archive of an ended job into directory `root` of `file_system` (fsspec); its location."""
    job_id = view.details.job_id
    target = f"{root.rstrip('/')}/{job_id}"
    partial = f"{target}.inprogress"
    with file_system.open(partial, "w") as out:
        json.dump({"archive": job_archive(view)}, out)
    file_system.mv(partial, target)
    return target


class JobArchivist:
    """Archives each job of a dispatcher when it ends, into `directory` (jobmanager.archive.fs.dir).

    A job's end is heard after its result was set, so a program can reach its exit while the archive is being
    written: an embedded job is `expect`ed at submission, and `wait` (run at the program's exit) gives the
    archives still due a bounded time to be written."""

    def __init__(self, dispatcher: Any, directory: str) -> None:
        import fsspec

        self._dispatcher = dispatcher
        self._directory = directory
        # resolved and created now: a job can end while the program exits, when no module can be imported any more
        self._file_system, self._root = fsspec.core.url_to_fs(directory)
        self._file_system.makedirs(self._root, exist_ok=True)
        self._due: set[str] = set()
        self._done: set[str] = set()  # archived (or given up on): a job can end before it is expected
        self._changed = threading.Condition()

    def attach(self) -> JobArchivist:
        self._dispatcher.when_job_ended(self.archive)
        return self

    def expect(self, job_id: str) -> None:
        with self._changed:
            if job_id not in self._done:
                self._due.add(job_id)

    def wait(self, timeout: float) -> None:
        with self._changed:
            self._changed.wait_for(lambda: not self._due, timeout)

    def archive(self, job_id: str) -> None:
        try:
            location = write_archive(self._dispatcher.job(job_id), self._file_system, self._root)
        except Exception as error:  # noqa: BLE001 - a job's end must not fail because its archive could not be written
            logger.warning(
                "job %s could not be archived in %s (%s: %s): the history server will not show it",
                job_id,
                self._directory,
                type(error).__name__,
                error,
            )
        else:
            logger.info("job %s archived at %s", job_id, location)
        finally:
            with self._changed:
                self._due.discard(job_id)
                self._done.add(job_id)
                self._changed.notify_all()
