"""A PostgreSQL 15 server for the CDC and JDBC connector tests and examples: `initdb` into a fresh temporary
directory, then `postgres` on 127.0.0.1 with a free port, `wal_level=logical` (change capture) and
`max_prepared_transactions` (the JDBC sink's exactly-once mode). Both run as the `postgres` user: PostgreSQL
refuses to run as root. Trust authentication for local tests; `password` sets a password for the superuser and
switches to md5, for the wrong-credentials tests.

`python -m services.postgres` starts one in the foreground and prints its address (`make services`).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from services.server import LOOPBACK, RunningServer, ServerStartError, free_port, start_process

USER = "postgres"
DATABASE = "postgres"


def _binaries() -> Path:
    """The directory of Debian's PostgreSQL programs (`/usr/lib/postgresql/N/bin`, newest N)."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if not versions:
        raise ServerStartError(
            "PostgreSQL is not installed: `apt-get install postgresql` (Debian), which .ci/run does when it is missing"
        )
    return versions[-1].parent


@dataclass
class PostgresServer:
    """A started server: where it listens and how to reach it (`dsn`, `jdbc_url`); `stop()` ends it by PID,
    `restart()` stops and starts it on the same port and data (the server-restart fault tests)."""

    running: RunningServer
    password: str | None = None

    @property
    def host(self) -> str:
        return self.running.host

    @property
    def port(self) -> int:
        return self.running.port

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{DATABASE}"

    def dsn(self, **extra: str) -> str:
        parts = {"host": self.host, "port": str(self.port), "dbname": DATABASE, "user": USER}
        if self.password:
            parts["password"] = self.password
        parts.update(extra)
        return " ".join(f"{k}={v}" for k, v in parts.items())

    def connect(self, **extra: str):  # type: ignore[no-untyped-def]
        """A connection for tests and examples; a statement waiting on a lock longer than a minute fails rather
        than hang the caller (a C call no test timeout can interrupt)."""
        import psycopg2

        return psycopg2.connect(self.dsn(**extra), connect_timeout=10, options="-c statement_timeout=60000")

    def stop(self) -> None:
        """A fast shutdown (SIGINT: clients are disconnected; SIGTERM would wait for them); if a replication client
        that stopped reading holds it up, an immediate one (SIGQUIT); then the shared stop by PID. Returns once
        every process of the server ended (a new server on the same data needs their shared memory gone)."""
        process = self.running.process
        for sig, wait in ((signal.SIGINT, 2), (signal.SIGQUIT, 10)):
            if process.poll() is not None:
                break
            process.send_signal(sig)
            try:
                process.wait(wait)
            except subprocess.TimeoutExpired:
                pass
        self.running.stop()
        _wait_group_gone(process.pid)

    def kill(self) -> None:
        """SIGKILL every process of the server (a crash: the next start runs crash recovery; prepared
        transactions survive)."""
        process = self.running.process
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
        _wait_group_gone(process.pid)

    def start(self, timeout: float = 60.0) -> None:
        """Start again on the same port and data directory (after `stop`)."""
        self.running = _launch(self.running.data_dir, self.port).wait_until_ready(timeout)
        _wait_accepting_queries(self, timeout)

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        """Stop the server and remove its data directory."""
        self.stop()
        shutil.rmtree(self.running.data_dir.parent, ignore_errors=True)


def _launch(pgdata: Path, port: int) -> RunningServer:
    argv = [
        str(_binaries() / "postgres"),
        "-D",
        str(pgdata),
        "-c",
        f"listen_addresses={LOOPBACK}",
        "-p",
        str(port),
        "-c",
        "wal_level=logical",
        "-c",
        "max_prepared_transactions=20",
        "-c",
        "max_replication_slots=20",
        "-c",
        "max_wal_senders=20",
        "-c",
        f"unix_socket_directories={pgdata}",
        "-c",
        "fsync=off",
        "-c",
        "synchronous_commit=off",
        "-c",
        "full_page_writes=off",
        "-c",
        "max_connections=200",
    ]
    return start_process("postgres", argv, data_dir=pgdata, port=port, user=_user())


def _wait_group_gone(pgid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        except PermissionError:
            pass
        time.sleep(0.02)


def _user() -> str | None:
    return USER if os.geteuid() == 0 else None


def _wait_accepting_queries(server: PostgresServer, timeout: float) -> None:
    """The port accepts before recovery ends ("the database system is starting up"): poll with a query."""
    import psycopg2

    deadline = time.monotonic() + timeout
    while True:
        try:
            server.connect().close()
            return
        except psycopg2.OperationalError as error:
            if time.monotonic() > deadline:
                raise ServerStartError(
                    f"postgres on {server.running.address} accepted no query within {timeout:.0f} s: {error}"
                ) from None
            time.sleep(0.05)


def start_postgres(password: str | None = None, timeout: float = 60.0) -> PostgresServer:
    """initdb into a fresh directory under the system temp dir (not pytest's: its directories are private to
    root, which the postgres user cannot enter), then start the server and wait until it answers queries."""
    root = Path(tempfile.mkdtemp(prefix="fluvial-postgres-"))
    pgdata = root / "pgdata"
    pgdata.mkdir()
    user = _user()
    if user is not None:
        entry = pwd.getpwnam(user)
        for path in (root, pgdata):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        root.chmod(0o755)
    argv = [
        str(_binaries() / "initdb"),
        "-D",
        str(pgdata),
        "-U",
        USER,
        "--auth=trust",
        "--no-sync",
        "-E",
        "UTF8",
        "--locale=C",
    ]
    if password is not None:
        pwfile = root / "pwfile"
        pwfile.write_text(password)
        if user is not None:
            os.chown(pwfile, pwd.getpwnam(user).pw_uid, -1)
        argv += [f"--pwfile={pwfile}", "--auth-host=md5", "--auth-local=trust"]
    done = subprocess.run(argv, capture_output=True, text=True, user=user)
    if done.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise ServerStartError(f"initdb failed (exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    with open(pgdata / "pg_hba.conf", "a") as hba:  # logical replication connections over TCP
        hba.write(f"host replication all {LOOPBACK}/32 {'md5' if password is not None else 'trust'}\n")
    server = PostgresServer(_launch(pgdata, free_port()).wait_until_ready(timeout), password)
    try:
        _wait_accepting_queries(server, timeout)
    except BaseException:
        server.close()
        raise
    return server


def serve() -> tuple[str, Callable[[], None]]:
    """For `make services`: a server, the line telling the examples where it is, and how to stop it."""
    server = start_postgres()
    line = (
        f"PostgreSQL on {server.host}:{server.port} (user {USER}, database {DATABASE}, JDBC URL "
        f"{server.jdbc_url}): export FLUVIAL_POSTGRES={server.host}:{server.port}"
    )
    return line, server.close


if __name__ == "__main__":
    from services.__main__ import main

    sys.exit(main(["postgres"]))
