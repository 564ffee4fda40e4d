"""An SQL client session (what `fluvial sql` runs): statements one by one against one TableEnvironment,
results printed in the session's result mode, like Flink's SQL client.

Result modes (`SET 'sql-client.execution.result-mode' = '...'`): `tableau` (the default: Flink's tableau
with the change column, rows as they come), `changelog` (one `+I[...]` line per change), `table` (the final
table, the changelog applied, printed once the query ends). `QUIT;` or `EXIT;` ends an interactive session.
INSERT statements run as jobs in the background, as in Flink's client; the session waits for them before
it ends (`SET 'table.dml-sync' = 'true'` waits for each in turn).
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from fluvial.table.errors import TableException
from fluvial.table.table_environment import TableEnvironment

__all__ = ["SqlSession", "RESULT_MODES"]

RESULT_MODES = ("tableau", "changelog", "table")
_CLIENT_PREFIX = "sql-client."


class SqlSession:
    def __init__(self, t_env: TableEnvironment, out: TextIO | None = None) -> None:
        self.t_env = t_env
        self.out = out or sys.stdout
        self.result_mode = "tableau"
        self.jobs: list[Any] = []

    def execute(self, statement: str) -> bool:
        """Run one statement and print its result; False when the statement ends the session."""
        text = statement.strip().rstrip(";").strip()
        upper = " ".join(text.upper().split())
        if not text:
            return True
        if upper in ("QUIT", "EXIT"):
            return False
        if upper.startswith("SET ") and _CLIENT_PREFIX in text:
            self._client_option(text)
            return True
        try:
            result = self.t_env.execute_sql(text)
        except TableException as error:
            self.out.write(f"[ERROR] {type(error).__name__}: {error}\n")
            return True
        if result.get_job_client() is not None:
            self.jobs.append(result)
            self.out.write(
                "[INFO] Submitting SQL update statement to the cluster...\n"
                "[INFO] SQL update statement has been successfully submitted to the cluster:\n"
                f"Job ID: {result.get_job_client().get_job_id()}\n\n"
            )
            return True
        if upper.startswith("SET ") or upper.startswith("RESET"):
            self.out.write("[INFO] Execute statement succeeded.\n\n")
            return True
        if upper.startswith(("CREATE ", "DROP ")):
            self.out.write("[INFO] Execute statement succeeded.\n\n")
            return True
        self._print(result)
        return True

    def _client_option(self, text: str) -> None:
        import re

        match = re.match(r"SET\s+'([^']+)'\s*=\s*'([^']*)'", text, re.IGNORECASE)
        if match is None or match.group(1) != "sql-client.execution.result-mode":
            self.out.write(
                f"[ERROR] fluvial's SQL client knows the option 'sql-client.execution.result-mode' only: {text}\n"
            )
            return
        mode = match.group(2).lower()
        if mode not in RESULT_MODES:
            self.out.write(f"[ERROR] result mode '{mode}' is none of {', '.join(RESULT_MODES)}\n")
            return
        self.result_mode = mode
        self.out.write("[INFO] Execute statement succeeded.\n\n")

    def _print(self, result: Any) -> None:
        from fluvial.table.table_result import print_tableau
        from fluvial.table.values import row_string

        columns = result.get_table_schema().columns
        if self.result_mode == "tableau" or result._rows is not None:
            print_tableau(result.collect(), columns, self.out, with_op=result._rows is None and result._streaming)
        elif self.result_mode == "changelog":
            with result.collect() as rows:
                for row in rows:
                    self.out.write(
                        row.get_row_kind().short_string()
                        + "["
                        + ", ".join(row_string(v, c.type) for v, c in zip(row, columns))
                        + "]\n"
                    )
                    self.out.flush()
        else:
            from fluvial.table.table_environment import _materialize

            print_tableau(_materialize(result.collect()), columns, self.out, with_op=False)
        self.out.write("\n")

    def wait_for_jobs(self) -> None:
        for result in self.jobs:
            result.wait()
        self.jobs.clear()


def statements_of(lines: Any) -> Any:
    """Statements from lines of input: a statement ends at a `;` outside quotes."""
    from fluvial.table.sql.statements import split_statements

    buffer: list[str] = []
    for line in lines:
        buffer.append(line)
        text = "".join(buffer)
        if text.rstrip().endswith(";") and text.count("'") % 2 == 0:
            yield from split_statements(text)
            buffer = []
    rest = "".join(buffer).strip()
    if rest:
        yield from split_statements(rest)
