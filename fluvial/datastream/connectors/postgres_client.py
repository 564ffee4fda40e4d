"""How fluvial's PostgreSQL connectors (the JDBC sink, the CDC source) reach a server: a JDBC URL read into libpq
parameters, and connecting with a deadline and an error that names the address and the fix.

psycopg2 is imported on first connect: a job that names no PostgreSQL connector never loads it, and a job that
does gets one clear message when it is missing (`pip install 'fluvial[postgres]'`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from fluvial.common.errors import InvalidJobError, ResourceError

logger = logging.getLogger(__name__)

DEFAULT_PORT = 5432
# JDBC URL parameters (pgJDBC's names) → libpq's; any other parameter is refused, never ignored
_URL_PARAMETERS = {
    "user": "user",
    "password": "password",
    "sslmode": "sslmode",
    "connectTimeout": "connect_timeout",
    "ApplicationName": "application_name",
    "applicationName": "application_name",
}
_AUTH_FAILURES = ("password authentication failed", "no password supplied", 'role "', "no pg_hba.conf entry")


def psycopg2_module() -> Any:
    try:
        import psycopg2
        import psycopg2.extras
    except ImportError:
        raise InvalidJobError(
            "the PostgreSQL connectors need psycopg2: pip install 'fluvial[postgres]' (or psycopg2-binary)"
        ) from None
    return psycopg2


@dataclass(frozen=True)
class PostgresAddress:
    """Where a server is and who to log in as; `options` are further libpq parameters from the URL."""

    host: str
    port: int
    database: str
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    options: tuple[tuple[str, str], ...] = ()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}/{self.database}"

    def with_login(self, user: str | None, password: str | None) -> PostgresAddress:
        """The same server with `user`/`password` where given (options take precedence over the URL)."""
        return PostgresAddress(
            self.host,
            self.port,
            self.database,
            user if user is not None else self.user,
            password if password is not None else self.password,
            self.options,
        )

    def libpq_parameters(self) -> dict[str, Any]:
        parameters: dict[str, Any] = {"host": self.host, "port": self.port, "dbname": self.database}
        if self.user is not None:
            parameters["user"] = self.user
        if self.password is not None:
            parameters["password"] = self.password
        parameters.update(self.options)
        return parameters


def parse_jdbc_url(url: str) -> PostgresAddress:
    """`jdbc:postgresql://host[:port]/database[?user=..&password=..&sslmode=..]` (pgJDBC's form)."""
    if not isinstance(url, str) or not url.startswith("jdbc:postgresql://"):
        raise InvalidJobError(
            f"JDBC URL {url!r} is not a PostgreSQL URL; fluvial's JDBC connectors speak to "
            f"PostgreSQL: use jdbc:postgresql://host:port/database"
        )
    parts = urlsplit(url[len("jdbc:") :])
    database = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not database:
        raise InvalidJobError(
            f"JDBC URL {url!r} names no host or no database; use jdbc:postgresql://host:port/database"
        )
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise InvalidJobError(
            f"JDBC URL {url!r} has a malformed port; use jdbc:postgresql://host:5432/database"
        ) from None
    user, password, options = None, None, []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        name = _URL_PARAMETERS.get(key)
        if name is None:
            raise InvalidJobError(
                f"JDBC URL parameter {key!r} is not supported; the supported ones are {sorted(set(_URL_PARAMETERS))}"
            )
        if name == "user":
            user = value
        elif name == "password":
            password = value
        else:
            options.append((name, value))
    if parts.username:
        user = unquote(parts.username)
    if parts.password:
        password = unquote(parts.password)
    return PostgresAddress(parts.hostname, port, database, user, password, tuple(options))


def connect(
    address: PostgresAddress, timeout_s: float, *, replication: bool = False, what: str = "PostgreSQL connector"
) -> Any:
    """A psycopg2 connection (a LogicalReplicationConnection when `replication`), or a ResourceError within about
    `timeout_s` seconds naming the address: wrong credentials and unreachable servers say so."""
    psycopg2 = psycopg2_module()
    parameters = address.libpq_parameters()
    parameters.setdefault("connect_timeout", max(1, int(round(timeout_s))))
    if replication:
        parameters["connection_factory"] = psycopg2.extras.LogicalReplicationConnection
    try:
        return psycopg2.connect(**parameters)
    except psycopg2.OperationalError as error:
        raise connect_error(address, error, what) from None


class PostgresLoginError(ResourceError):
    """The server refused the login (user, password, database): retrying cannot help."""


def connect_error(address: PostgresAddress, error: BaseException, what: str) -> ResourceError:
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    login = True
    if 'database "' in text and "does not exist" in text:
        hint = f"check the database name ({address.database!r})"
    elif any(marker in str(error) for marker in _AUTH_FAILURES):
        hint = f"check the user name and password (user {address.user!r})"
    else:
        login = False
        hint = "check that the server runs and listens there (make services starts one)"
    return (PostgresLoginError if login else ResourceError)(
        f"{what} cannot connect to PostgreSQL at {address.address}: {text}; {hint}"
    )


def is_connection_lost(error: BaseException) -> bool:
    """A failure of the connection itself (worth a reconnect and a retry), not of a statement."""
    psycopg2 = psycopg2_module()
    return isinstance(error, (psycopg2.OperationalError, psycopg2.InterfaceError))


def quote_literal(text: str) -> str:
    """A SQL string literal (for the utility statements that take no parameters, such as PREPARE TRANSACTION)."""
    return "'" + text.replace("'", "''") + "'"
