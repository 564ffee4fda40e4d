"""The MQTT fault job as a process of its own, for the thread-mode trials of bench.broker_faults (whose
TaskManagers are threads: the fault is a SIGKILL of the whole process, and the trial starts the job again from
its latest completed checkpoint, as an operator would).

    python -m bench.mqtt_job PORT CLIENT_ID TOPIC WORKDIR QOS [RESTORE_PATH]

Runs until killed."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.faults.test_mqtt_faults import mqtt_job


def main(port: str, client_id: str, topic: str, workdir: str, qos: str, restore: str | None = None) -> None:
    mqtt_job(int(port), client_id, topic, Path(workdir), "thread", restore, int(qos)).execute("mqtt fault job")


if __name__ == "__main__":
    main(*sys.argv[1:])
