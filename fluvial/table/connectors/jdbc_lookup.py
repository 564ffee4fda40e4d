"""The JDBC table as a lookup source (Flink's JdbcRowDataLookupFunction): `SELECT the columns FROM the table
WHERE k1 = ? AND ...` per key on one connection per subtask, retried `lookup.max-retries` times on a new
connection when the connection broke (waits 1 s, 2 s, ... up to 5 s); the rows go through the scan's type
mapping and checks (`jdbc_scan.check_columns`, at open)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from fluvial.common.errors import ResourceError
from fluvial.datastream.connectors.postgres_client import PostgresLoginError, connect, is_connection_lost
from fluvial.table.connectors.jdbc_scan import Converters, JdbcScanSource, check_columns, close_quietly, converted
from fluvial.table.connectors.lookup import LookupCacheSpec

__all__ = ["JdbcLookupFunction"]

logger = logging.getLogger(__name__)


@dataclass
class JdbcLookupFunction:
    """A LookupFunction (`fluvial.table.connectors.lookup`) over `table` by its columns `keys` (indexes)."""

    table: JdbcScanSource
    keys: tuple[int, ...]
    max_retries: int = 3
    cache: LookupCacheSpec | None = None
    _connection: Any = field(default=None, repr=False)
    _sql: str = field(default="", repr=False)
    _converters: Converters = field(default_factory=list, repr=False)

    def open(self) -> None:
        self._connection = self._connect()
        casts, self._converters = check_columns(self._connection, self.table)
        condition = " AND ".join(f"{self.table.columns[k].identifier} = %s" for k in self.keys)
        self._sql = f"SELECT {self.table.select_list(casts)} FROM {self.table.table} WHERE {condition}"

    def _connect(self) -> Any:
        connection = connect(self.table.address, self.table.connect_timeout_s, what="JDBC lookup")
        connection.set_session(readonly=True, autocommit=True)
        return connection

    def lookup(self, key: tuple) -> list[list]:
        attempt = 0
        while True:
            try:
                if self._connection is None or self._connection.closed:
                    self._connection = self._connect()
                with self._connection.cursor() as cursor:
                    cursor.execute(self._sql, key)
                    return [converted(values, self._converters) for values in cursor.fetchall()]
            except Exception as error:  # noqa: BLE001 - a lost connection is retried, anything else raised
                lost = is_connection_lost(error) or (
                    isinstance(error, ResourceError) and not isinstance(error, PostgresLoginError)
                )
                if not lost or attempt >= self.max_retries:
                    if lost:
                        raise ResourceError(
                            f"JDBC lookup of {key!r} in '{self.table.table_name}' at {self.table.address.address} "
                            f"failed {attempt + 1} times, last with: {str(error).strip()}; check the server "
                            f"(lookup.max-retries={self.max_retries})"
                        ) from error
                    raise
                attempt += 1
                logger.warning("JDBC lookup: %s; retry %d of %d", str(error).strip(), attempt, self.max_retries)
                self.close()
                time.sleep(min(attempt, 5))

    def close(self) -> None:
        close_quietly(self._connection)
        self._connection = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_connection"] = None
        return state
