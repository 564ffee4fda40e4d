"""The fault soak of the NATS and MQTT connectors: many trials of a job killed at a random moment, judged by the
per-key sequence oracle (lost, duplicated, out of order). `python -m bench.broker_faults
[nats|mqtt|mqtt-qos2|mqtt-thread|mqtt-thread-qos2] [trials]` (default: all five, 30 trials each).

A trial: a fresh input (NATS: a stream of `key,seq` messages; MQTT: a publisher thread feeding a persistent
session), the job of the fault tests (tests/faults/test_nats_faults.py, test_mqtt_faults.py) in process mode,
then after a random number of completed checkpoints (1-4) and a random delay (0-300 ms), SIGKILL of a random
TaskManager process (mqtt-thread: the job runs in thread mode in a process of its own, which is killed and
started again from its latest completed checkpoint). The job fails over and finishes (NATS: a bounded source; MQTT: cancelled once every
message is committed); the oracle reads the output. Promised: NATS and MQTT QoS 2 exactly once (0 lost, 0
duplicated); MQTT QoS 1 nothing lost, duplicates at most the batch in flight at the kill.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from fluvial.testing import wait_until
from fluvial.testing.faults import completed_checkpoints

NATS_PER_KEY = 3000  # longer than the test's job, so the kill lands before a bounded job ends


@dataclass
class Tally:
    name: str
    trials: int = 0
    faults: int = 0
    lost: int = 0
    duplicated: int = 0
    disordered: int = 0
    failures: list[str] = field(default_factory=list)

    def record(self, label: str, lost: int, duplicated: int, disordered: list[str]) -> None:
        self.trials += 1
        self.lost += lost
        self.duplicated += duplicated
        self.disordered += len(disordered)
        print(f"  {label}: lost {lost}, duplicated {duplicated}, out of order {disordered}", flush=True)

    def line(self) -> str:
        return (
            f"{self.name}: {self.trials} trials, {self.faults} faults (TaskManager SIGKILL), {self.lost} lost, "
            f"{self.duplicated} duplicated, {self.disordered} keys out of order, "
            f"{len(self.failures)} failed trials"
        )


def kill_at_random(client, checkpoints: Path, rng: random.Random) -> bool:  # noqa: ANN001
    at_least = rng.randint(1, 4)
    wait_until(
        lambda: (
            max(completed_checkpoints(checkpoints), default=0) >= at_least or client.get_job_execution_result().done()
        ),
        timeout=120,
        what=f"checkpoint {at_least}",
    )
    time.sleep(rng.uniform(0, 0.3))
    if client.get_job_execution_result().done():
        return False
    os.kill(rng.choice(client.cluster.processes.pids), signal.SIGKILL)
    return True


def nats_trials(trials: int, seed: int) -> Tally:
    from services.nats import start_nats
    from tests.faults.test_nats_faults import judge, nats_job, prepare

    tally, rng = Tally("NATS source + exactly-once sink"), random.Random(seed)
    with tempfile.TemporaryDirectory() as directory:
        server = start_nats(Path(directory) / "nats")
        try:
            url = server.extra["url"]
            for trial in range(trials):
                name, workdir = f"S{trial}", Path(directory) / f"t{trial}"
                workdir.mkdir()
                prepare(url, name, NATS_PER_KEY)
                client = nats_job(url, name, workdir / "chk", "process").execute_async(f"nats soak {trial}")
                try:
                    tally.faults += kill_at_random(client, workdir / "chk", rng)
                    client.get_job_execution_result().result(timeout=180)
                except Exception as error:  # noqa: BLE001 - counted, the soak goes on
                    tally.failures.append(f"trial {trial}: {type(error).__name__}: {error}")
                tally.record(f"nats trial {trial}", *judge(url, name, NATS_PER_KEY))
        finally:
            server.stop()
    return tally


def mqtt_trials(trials: int, seed: int, qos: int = 1) -> Tally:
    from services.mosquitto import start_mosquitto
    from services.server import LOOPBACK
    from tests import mqtt_helpers as mh
    from tests.faults.test_mqtt_faults import KEYS, PER_KEY, Publisher, mqtt_job

    tally, rng = Tally(f"MQTT receiver, QoS {qos} (write-ahead log on)"), random.Random(seed)
    with tempfile.TemporaryDirectory() as directory:
        server = start_mosquitto(Path(directory) / "broker")
        try:
            for trial in range(trials):
                client_id, topic, workdir = f"soak-{trial}", f"soak{trial}", Path(directory) / f"t{trial}"
                workdir.mkdir()
                mh.make_session(LOOPBACK, server.port, client_id, [f"{topic}/#"], qos)
                client = mqtt_job(server.port, client_id, topic, workdir, "process", qos=qos).execute_async(
                    f"mqtt {trial}"
                )
                publisher = Publisher(server.port, topic, qos)
                try:
                    publisher.start()
                    tally.faults += kill_at_random(client, workdir / "chk", rng)
                    publisher.join(120)
                    wait_until(
                        lambda workdir=workdir: len({*mh.committed(workdir / "out")}) >= KEYS * PER_KEY,
                        timeout=120,
                        what="every message committed",
                    )
                except Exception as error:  # noqa: BLE001 - counted, the soak goes on
                    tally.failures.append(f"trial {trial}: {type(error).__name__}: {error}")
                finally:
                    client.cancel()
                    wait_until(
                        lambda client=client: client.get_job_execution_result().done(), timeout=60, what="the cancel"
                    )
                tally.record(f"mqtt trial {trial}", *mh.judge_lines(mh.committed(workdir / "out"), KEYS, PER_KEY))
        finally:
            server.stop()
    return tally


def mqtt_thread_trials(trials: int, seed: int, qos: int = 1) -> Tally:
    """Thread mode: the job's process (JobMaster and TaskManager threads) SIGKILLed, then started again from its
    latest completed checkpoint; the restored receiver source replays the write-ahead log the checkpoint names."""
    import subprocess

    from services.mosquitto import start_mosquitto
    from services.server import LOOPBACK
    from tests import mqtt_helpers as mh
    from tests.faults.test_mqtt_faults import KEYS, PER_KEY, Publisher

    tally, rng = (
        Tally(f"MQTT receiver, QoS {qos}, thread mode (job process killed, restored from its checkpoint)"),
        random.Random(seed),
    )
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as directory:
        server = start_mosquitto(Path(directory) / "broker")
        try:
            for trial in range(trials):
                client_id, topic, workdir = f"thread-{trial}", f"thread{trial}", Path(directory) / f"t{trial}"
                workdir.mkdir()
                mh.make_session(LOOPBACK, server.port, client_id, [f"{topic}/#"], qos)
                argv = [
                    sys.executable,
                    "-m",
                    "bench.mqtt_job",
                    str(server.port),
                    client_id,
                    topic,
                    str(workdir),
                    str(qos),
                ]
                log = open(workdir / "job.log", "wb")  # noqa: SIM115 - closed below
                job = subprocess.Popen(argv, cwd=root, stdout=log, stderr=subprocess.STDOUT)
                publisher = Publisher(server.port, topic, qos)
                try:
                    publisher.start()
                    at_least = rng.randint(1, 4)
                    wait_until(
                        lambda workdir=workdir, at_least=at_least: (
                            max(completed_checkpoints(workdir / "chk"), default=0) >= at_least
                        ),
                        timeout=120,
                        what=f"checkpoint {at_least}",
                    )
                    time.sleep(rng.uniform(0, 0.3))
                    job.kill()
                    job.wait(30)
                    tally.faults += 1
                    latest = completed_checkpoints(workdir / "chk")
                    job = subprocess.Popen(
                        argv + [str(latest[max(latest)])], cwd=root, stdout=log, stderr=subprocess.STDOUT
                    )
                    publisher.join(120)
                    wait_until(
                        lambda workdir=workdir: len({*mh.committed(workdir / "out")}) >= KEYS * PER_KEY,
                        timeout=120,
                        what="every message committed",
                    )
                except Exception as error:  # noqa: BLE001 - counted, the soak goes on
                    tally.failures.append(f"trial {trial}: {type(error).__name__}: {error} (log {workdir}/job.log)")
                finally:
                    job.kill()
                    job.wait(30)
                    log.close()
                tally.record(
                    f"mqtt thread-mode trial {trial}", *mh.judge_lines(mh.committed(workdir / "out"), KEYS, PER_KEY)
                )
        finally:
            server.stop()
    return tally


def main(argv: list[str] | None = None) -> bool:
    args = argv if argv is not None else sys.argv[1:]
    which = [arg for arg in args if not arg.isdigit()] or [
        "nats",
        "mqtt",
        "mqtt-qos2",
        "mqtt-thread",
        "mqtt-thread-qos2",
    ]
    trials = int(next((arg for arg in args if arg.isdigit()), "30"))
    tallies = []
    if "nats" in which:
        tallies.append(nats_trials(trials, seed=24))
    if "mqtt" in which:
        tallies.append(mqtt_trials(trials, seed=42))
    if "mqtt-qos2" in which:
        tallies.append(mqtt_trials(trials, seed=43, qos=2))
    if "mqtt-thread" in which:
        tallies.append(mqtt_thread_trials(trials, seed=7))
    if "mqtt-thread-qos2" in which:
        tallies.append(mqtt_thread_trials(trials, seed=8, qos=2))
    for tally in tallies:
        print(tally.line())
        for failure in tally.failures:
            print(f"    {failure}")
    return all(
        t.lost == 0 and t.disordered == 0 and not t.failures and (t.duplicated == 0 or "QoS 1" in t.name)
        for t in tallies
    )


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
