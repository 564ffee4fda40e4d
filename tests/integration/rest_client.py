"""A tiny HTTP client for the REST tests (loopback only) and a job that serves its REST API while it runs."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from fluvial.common import Configuration, WatermarkStrategy
from fluvial.common.restart_strategy import RestartStrategies
from fluvial.common.watermark_strategy import TimestampAssigner
from fluvial.datastream import MapFunction, SinkFunction
from fluvial.testing import Crash, Pause, ScriptedSource, environment, wait_until


@dataclass
class Reply:
    status: int
    body: Any
    headers: dict  # by lower-case name


def http(
    method: str,
    url: str,
    token: str | None = None,
    body: Any = None,
    raw: bytes | None = None,
    content_type: str = "application/json",
) -> Reply:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", content_type)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback test server
            return Reply(response.status, _decode(response.read(), response.headers), _lower(response.headers))
    except urllib.error.HTTPError as error:
        return Reply(error.code, _decode(error.read(), error.headers), _lower(error.headers))


def _lower(headers: Any) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def _decode(payload: bytes, headers: Any) -> Any:
    if "json" in (headers.get("Content-Type") or ""):
        return json.loads(payload)
    return payload.decode()


class CountRecords(MapFunction):
    """Doubles its input and counts it in a user metric ('records.seen')."""

    def open(self, runtime_context):
        self.seen = runtime_context.get_metrics_group().add_group("records").counter("seen")

    def map(self, value):
        self.seen.inc()
        return value * 2


class Discard(SinkFunction):
    def invoke(self, value, context):
        pass


class ValueAsTimestamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value


@dataclass
class ServedJob:
    client: Any
    address: str
    token: str
    release_file: str

    @property
    def job_id(self) -> str:
        return str(self.client.get_job_id())

    def url(self, path: str = "") -> str:
        return f"{self.address}/{path.lstrip('/')}"

    def get(self, path: str) -> Reply:
        return http("GET", self.url(path))

    def release(self) -> None:
        open(self.release_file, "w").close()

    def stop(self) -> None:
        """Cancel the job if it still runs, and wait for its end; stop its servers (kept serving or not)."""
        self.client.cancel()
        try:
            self.client.get_job_execution_result().result(30)
        except Exception:  # noqa: BLE001 - cancelled or already failed: either way it has ended
            pass
        if self.client.web.stop is not None:
            self.client.web.stop()


def serve_job(
    mode: Any,
    directory: str,
    name: str,
    records: int = 200,
    crash_first: bool = False,
    checkpoint_interval: str = "1 h",
    then: int = 0,
    **config: str,
) -> ServedJob:
    """A job that reads `records` numbers, then waits for its release file, then reads `then` more, and never
    ends on its own: Source →
    map (counting 'records.seen') → key_by → reduce → sink, with event time (each number is its timestamp) and
    its REST API on a free port. `crash_first`: its source fails once first (one restart, one exception)."""
    configuration = Configuration()
    configuration.set_string("rest.port", "0")
    configuration.set_string("execution.checkpointing.interval", checkpoint_interval)
    configuration.set_string("state.savepoints.dir", os.path.join(directory, "savepoints"))
    for key, value in config.items():
        configuration.set_string(key, value)
    env = environment(mode, configuration)
    env.set_parallelism(2)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 50))
    release = os.path.join(directory, f"{name}-release")
    script = (
        ([Crash(os.path.join(directory, f"{name}-crashed"))] if crash_first else [])
        + list(range(1, records + 1))
        + [Pause(release)]
        + list(range(records + 1, records + then + 1))
    )
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ValueAsTimestamp())
    env.from_source(ScriptedSource(script, unbounded=True), strategy, "numbers").map(CountRecords()).name(
        "double"
    ).key_by(lambda value: value % 5).reduce(lambda a, b: a + b).name("sum").add_sink(Discard()).name("discard")
    client = env.execute_async(name)
    job = ServedJob(client, client.web.address, client.web.token, release)
    restarts = 1 if crash_first else 0
    wait_until(
        lambda: _all_running(job, restarts),
        timeout=30,
        what=f"every subtask of '{name}' running after {restarts} restarts",
    )
    return job


def _all_running(job: ServedJob, restarts: int) -> bool:
    reply = job.get(f"jobs/{job.job_id}")
    if reply.status != 200 or reply.body["state"] != "RUNNING":
        return False
    if any(vertex["status"] != "RUNNING" for vertex in reply.body["vertices"]):
        return False
    metrics = job.get(f"jobs/{job.job_id}/metrics?get=numRestarts").body
    return metrics == [{"id": "numRestarts", "value": str(restarts)}]
