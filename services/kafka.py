"""A one-node Apache Kafka broker (KRaft: broker and controller in one JVM) for tests and for users trying the
Kafka examples (`make kafka`).

The jars come from Maven Central through `services/kafka/pom.xml`, copied once into a cache outside the
repository (`~/.cache/fluvial/kafka-VERSION/libs`, or under `$FLUVIAL_CACHE_DIR`); the broker is formatted with
Kafka's storage tool and started as `java -cp 'libs/*' kafka.Kafka server.properties`, bound to 127.0.0.1 on
free ports with its log directory in a temporary directory, and stopped by its PID.

    python -m services.kafka        # starts a broker in the foreground and prints its bootstrap address
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from services.server import LOOPBACK, RunningServer, ServerStartError, free_port, log_tail, start_process

KAFKA_VERSION = "4.1.1"  # the version in services/kafka/pom.xml
POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"
READY_LINE = "Kafka Server started"
HOW_TO_GET_JAVA = (
    "the Kafka tests need Java 17+ and Maven: `apt-get install openjdk-17-jre-headless maven` "
    "(then `python -m services.kafka --fetch`), as .ci/run does"
)


class KafkaUnavailable(RuntimeError):
    """Java or Maven is missing, or the jars could not be fetched: the message says how to get them."""


def cache_dir() -> Path:
    base = Path(os.environ.get("FLUVIAL_CACHE_DIR") or Path.home() / ".cache" / "fluvial")
    return base / f"kafka-{KAFKA_VERSION}"


def libs_dir() -> Path:
    return cache_dir() / "libs"


def _have_jars(libs: Path) -> bool:
    return (libs / f"kafka_2.13-{KAFKA_VERSION}.jar").exists()


def ensure_jars() -> Path:
    """The directory of the broker's jars, fetched with Maven on first use (about a minute, once)."""
    libs = libs_dir()
    if _have_jars(libs):
        if shutil.which("java") is None:
            raise KafkaUnavailable(f"no `java` on PATH: {HOW_TO_GET_JAVA}")
        return libs
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        raise KafkaUnavailable(f"no {' or '.join(missing)} on PATH: {HOW_TO_GET_JAVA}")
    libs.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="libs-", dir=libs.parent))
    result = subprocess.run(
        [
            "mvn",
            "-q",
            "-B",
            "-f",
            str(POM),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={staging}",
        ],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0 or not _have_jars(staging):
        shutil.rmtree(staging, ignore_errors=True)
        raise KafkaUnavailable(
            f"Maven could not fetch the Kafka {KAFKA_VERSION} jars ({POM}):\n{(result.stdout + result.stderr)[-3000:]}"
        )
    if _have_jars(libs):  # another process fetched them meanwhile
        shutil.rmtree(staging, ignore_errors=True)
    else:
        shutil.rmtree(libs, ignore_errors=True)
        staging.rename(libs)
    return libs


def _properties(data_dir: Path, port: int, controller_port: int) -> str:
    return "\n".join(
        [
            "process.roles=broker,controller",
            "node.id=1",
            f"controller.quorum.voters=1@{LOOPBACK}:{controller_port}",
            f"listeners=PLAINTEXT://{LOOPBACK}:{port},CONTROLLER://{LOOPBACK}:{controller_port}",
            f"advertised.listeners=PLAINTEXT://{LOOPBACK}:{port}",
            "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            f"log.dirs={data_dir / 'log'}",
            "num.partitions=1",
            "auto.create.topics.enable=false",  # a job naming a missing topic gets a clear error, not a new topic
            "offsets.topic.replication.factor=1",
            "offsets.topic.num.partitions=4",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "transaction.state.log.num.partitions=4",
            "group.initial.rebalance.delay.ms=0",
            "log.flush.interval.messages=9223372036854775807",
            "",
        ]
    )


def _java(libs: Path, main: str, *args: str, heap: str = "256m") -> list[str]:
    return [
        "java",
        f"-Xmx{heap}",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Djava.awt.headless=true",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-Dorg.slf4j.simpleLogger.log.kafka.server.KafkaRaftServer=info",
        "-cp",
        f"{libs}/*",
        main,
        *args,
    ]


def start_kafka(data_dir: Path, timeout: float = 90.0) -> RunningServer:
    """Format `data_dir` and start a broker there; returns once it said it started. `extra["bootstrap"]` is
    its bootstrap address; `stop()` stops it by PID. A broker restarted with `restart_kafka` keeps its data."""
    libs = ensure_jars()
    data_dir.mkdir(parents=True, exist_ok=True)
    port, controller_port = free_port(), free_port()
    config = data_dir / "server.properties"
    config.write_text(_properties(data_dir, port, controller_port))
    cluster_id = uuid.uuid4().hex[:22]
    result = subprocess.run(
        _java(libs, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config)),
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise ServerStartError(f"formatting Kafka's log directory failed:\n{(result.stdout + result.stderr)[-2000:]}")
    return _launch(libs, data_dir, port, timeout)


def restart_kafka(server: RunningServer, timeout: float = 90.0) -> RunningServer:
    """Start a stopped broker again on the same port with the same data (a broker restart mid-job); `server`
    then stands for the new process, so whoever stops it stops the new one."""
    restarted = _launch(ensure_jars(), server.data_dir, server.port, timeout)
    server.process = restarted.process
    return server


def _launch(libs: Path, data_dir: Path, port: int, timeout: float) -> RunningServer:
    log = data_dir / "kafka.log"
    offset = log.stat().st_size if log.exists() else 0
    server = start_process(
        "kafka",
        _java(libs, "kafka.Kafka", str(data_dir / "server.properties"), heap="512m"),
        data_dir=data_dir,
        port=port,
    )
    server.stop_timeout = 20.0
    server.extra["bootstrap"] = server.address
    deadline = time.monotonic() + timeout
    while True:
        with open(log, "rb") as f:
            f.seek(offset)
            if READY_LINE.encode() in f.read():
                break
        if server.process.poll() is not None:
            raise ServerStartError(
                f"Kafka exited with {server.process.returncode} before it started; its log "
                f"({log}) ends:\n{log_tail(log)}"
            )
        if time.monotonic() > deadline:
            server.stop()
            raise ServerStartError(
                f"Kafka did not start within {timeout:.0f} s; its log ({log}) ends:\n{log_tail(log)}"
            )
        time.sleep(0.05)
    return server.wait_until_ready(timeout)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        libs = ensure_jars()
    except KafkaUnavailable as error:
        print(error, file=sys.stderr)
        return 1
    if "--fetch" in args:
        print(f"Kafka {KAFKA_VERSION} jars are in {libs}")
        return 0
    with tempfile.TemporaryDirectory(prefix="fluvial-kafka-") as tmp:
        server = start_kafka(Path(tmp))
        print(f"Kafka {KAFKA_VERSION} is running (pid {server.pid}); bootstrap servers: {server.extra['bootstrap']}")
        print("Ctrl-C stops it and deletes its data.", flush=True)
        try:
            server.process.wait()
        except KeyboardInterrupt:
            pass
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
