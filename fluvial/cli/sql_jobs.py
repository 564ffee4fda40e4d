"""The SQL client's job statements (Flink's, 1.17 on): `SHOW JOBS` and `STOP JOB '<id>' [WITH SAVEPOINT] [WITH
DRAIN]`, answered by the session cluster the session's jobs go to (`execution.target: remote` at
`rest.address`:`rest.port`). They live here, not in fluvial.table, because they talk to the cluster's REST
API, a layer above the table planner; the session finds them through its `job_statements` seam.

`SHOW JOBS` prints job id, job name, status and start time as Flink's does; `STOP JOB` cancels the job, or,
`WITH SAVEPOINT`, stops it with a savepoint into its `state.savepoints.dir` (`WITH DRAIN` first emits
MAX_WATERMARK) and prints the savepoint's path. Embedded, they are an error naming how to reach a cluster.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from fluvial.common.row import Row
from fluvial.table.errors import ValidationException
from fluvial.table.planner.logical import Column
from fluvial.table.table_environment import TableEnvironment
from fluvial.table.table_result import ResultKind, TableResult
from fluvial.table.types import DataTypes

_STOP = re.compile(r"STOP\s+JOB\s+'([0-9a-fA-F]{32})'((?:\s+WITH\s+(?:SAVEPOINT|DRAIN))*)\s*$", re.IGNORECASE)


class ClusterJobStatements:
    """`SHOW JOBS` and `STOP JOB` against the session cluster the environment's jobs go to."""

    def handles(self, upper: str) -> bool:
        return upper == "SHOW JOBS" or upper.startswith("STOP JOB ")

    def execute(self, t_env: TableEnvironment, text: str) -> TableResult:
        client = _cluster_of(t_env, text)
        if " ".join(text.upper().split()) == "SHOW JOBS":
            return _show_jobs(client.jobs_overview())
        match = _STOP.match(text.strip())
        if match is None:
            raise ValidationException(
                f"cannot read '{text}': write STOP JOB '<job id>' [WITH SAVEPOINT] [WITH DRAIN], the id as "
                "SHOW JOBS prints it (32 hex digits)"
            )
        job_id, options = match.group(1).lower(), match.group(2).upper()
        state = client.job(job_id)["state"]
        if state in ("FINISHED", "CANCELED", "FAILED"):
            raise ValidationException(
                f"job {job_id} is {state} already: there is nothing to stop (SHOW JOBS lists them)"
            )
        if "SAVEPOINT" not in options:
            if "DRAIN" in options:
                raise ValidationException("STOP JOB ... WITH DRAIN needs WITH SAVEPOINT: add it, or drop WITH DRAIN")
            client.cancel(job_id)
            return TableResult(ResultKind.SUCCESS, [])
        trigger = client.stop_with_savepoint(job_id, None, drain="DRAIN" in options)
        path = client.savepoint_path(job_id, trigger)
        return TableResult(
            ResultKind.SUCCESS_WITH_CONTENT, [Column("savepoint path", DataTypes.STRING())], rows=[Row(path)]
        )


def _cluster_of(t_env: TableEnvironment, text: str) -> Any:
    from fluvial.cluster.session.rest_client import ClusterAddress, RestClusterClient

    config = t_env.get_config()
    if config.get("execution.target") != "remote":
        raise ValidationException(
            f"{text.split()[0].upper()} {text.split()[1].upper()} acts on a session cluster's jobs, and this session "
            "runs its jobs embedded: start the client with -m HOST:PORT (fluvial cluster start starts a cluster)"
        )
    host = config.get("rest.address") or "localhost"
    return RestClusterClient(ClusterAddress.parse(f"{host}:{config.get('rest.port') or 8081}"))


def _show_jobs(jobs: list[dict[str, Any]]) -> TableResult:
    columns = [Column(name, DataTypes.STRING()) for name in ("job id", "job name", "status", "start time")]
    rows = [
        Row(
            job["jid"],
            job["name"],
            job["state"],
            datetime.datetime.fromtimestamp(job["start-time"] / 1000).isoformat(timespec="milliseconds"),
        )
        for job in sorted(jobs, key=lambda job: job["start-time"])
    ]
    return TableResult(ResultKind.SUCCESS_WITH_CONTENT, columns, rows=rows)
