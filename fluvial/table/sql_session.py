"""An SQL client session (what `fluvial sql` runs): statements one by one against one TableEnvironment,
results printed in the session's result mode, like Flink's SQL client.

Result modes (`SET 'sql-client.execution.result-mode' = '...'`, fluvial.table.result_modes): `tableau` (the
default), `changelog`, `table`. `QUIT;` or `EXIT;` ends an interactive session. A failing statement prints
`[ERROR] ...` and the session goes on (`failed` says one did: `fluvial sql -f` stops there, as Flink's does).

Where jobs run is the environment's `execution.target`: embedded (this process), or a session cluster
(`remote`, at `rest.address`:`rest.port`, which `fluvial sql -m` sets, or `SET` in the session). INSERT
statements run as jobs in the background, as in Flink's client (`SET 'table.dml-sync' = 'true'` waits for
each in turn); at its end the session waits for its embedded jobs, which end with this process, and leaves a
session cluster's running there. A SELECT's rows come back through the collect path either way; Ctrl-C in an
interactive session cancels the query (its job) and returns to the prompt.

Statement sets (`BEGIN STATEMENT SET;` ... `END;`, or `EXECUTE STATEMENT SET BEGIN ... END;`) run their INSERTs
as one job. `SHOW JOBS` and `STOP JOB` go to the `job_statements` seam: the client's, which talks to a cluster.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Protocol, TextIO

from fluvial.table.errors import ValidationException
from fluvial.table.result_modes import CountingRows, ResultMode, print_result
from fluvial.table.table_environment import StatementSet, TableEnvironment
from fluvial.table.table_result import ResultKind, TableResult

__all__ = ["SqlSession", "RESULT_MODES", "statements_of"]

RESULT_MODES = tuple(mode.value for mode in ResultMode)
RESULT_MODE_KEY = "sql-client.execution.result-mode"
_CLIENT_PREFIX = "sql-client."


class JobStatements(Protocol):
    """Statements about a cluster's jobs (`SHOW JOBS`, `STOP JOB`): the client's, above the planner."""

    def handles(self, upper: str) -> bool: ...

    def execute(self, t_env: TableEnvironment, text: str) -> TableResult: ...


class SqlSession:
    def __init__(
        self,
        t_env: TableEnvironment,
        out: TextIO | None = None,
        interactive: bool = False,
        job_statements: JobStatements | None = None,
    ) -> None:
        self.t_env = t_env
        self.job_statements = job_statements
        self.out = out or sys.stdout
        self.interactive = interactive
        self.result_mode = ResultMode.TABLEAU
        self.jobs: list[Any] = []
        self.failed = False
        self.statement_set: StatementSet | None = None
        self._set_announced = False  # BEGIN STATEMENT SET says each step; EXECUTE STATEMENT SET is one statement

    def execute(self, statement: str) -> bool:
        """Run one statement and print its result; False when the statement ends the session."""
        text = statement.strip().rstrip(";").strip()
        upper = " ".join(text.upper().split())
        if not text:
            return True
        if upper in ("QUIT", "EXIT"):
            return False
        self.failed = False
        if upper.startswith("SET ") and _CLIENT_PREFIX in text:
            self._client_option(text)
            return True
        try:
            remote = self.t_env.get_config().get("execution.target") == "remote"
            if self._statement_set_step(text, upper, remote):
                return True
            if self.job_statements is not None and self.job_statements.handles(upper):
                result = self.job_statements.execute(self.t_env, text)
            else:
                result = self.t_env.execute_sql(text)
            if result.get_job_client() is not None:
                self._submitted(result, remote)
            elif result.get_result_kind() is ResultKind.SUCCESS or upper.startswith(
                ("SET ", "RESET", "CREATE ", "DROP ")
            ):
                self.out.write("[INFO] Execute statement succeeded.\n\n")
            else:
                self._print(result)
        except Exception as error:  # noqa: BLE001 - the client reports every failed statement and goes on
            self._error(error)
        return True

    def _statement_set_step(self, text: str, upper: str, remote: bool) -> bool:
        """Flink's statement sets: `BEGIN STATEMENT SET;`, INSERTs, `END;` (or `EXECUTE STATEMENT SET BEGIN
        INSERT ...; ... END;`) run their INSERTs as one job. True when `text` was such a step."""
        execute_form = upper.startswith("EXECUTE STATEMENT SET BEGIN")
        if execute_form or upper == "BEGIN STATEMENT SET":
            if self.statement_set is not None:
                raise ValidationException("a statement set is open already: END it before beginning another")
            self.statement_set = self.t_env.create_statement_set()
            self._set_announced = not execute_form
            first = re.sub(r"^\s*EXECUTE\s+STATEMENT\s+SET\s+BEGIN\s*", "", text, flags=re.IGNORECASE)
            if not execute_form:
                self.out.write("[INFO] Begin a statement set.\n\n")
            elif first:
                self.statement_set.add_insert_sql(first)
            return True
        if self.statement_set is None:
            return False
        if upper == "END":
            statements, self.statement_set = self.statement_set, None
            self._submitted(statements.execute(), remote)
        elif upper.startswith("INSERT "):
            self.statement_set.add_insert_sql(text)
            if self._set_announced:
                self.out.write("[INFO] Add SQL update statement to the statement set.\n\n")
        else:
            raise ValidationException(
                "only INSERT statements go in a statement set: END it (END;) before running other statements"
            )
        return True

    def _submitted(self, result: Any, remote: bool) -> None:
        if not remote:
            self.jobs.append(result)
        self.out.write(
            "[INFO] Submitting SQL update statement to the cluster...\n"
            "[INFO] SQL update statement has been successfully submitted to the cluster:\n"
            f"Job ID: {result.get_job_client().get_job_id()}\n\n"
        )

    def _error(self, error: BaseException) -> None:
        self.failed = True
        self.out.write(f"[ERROR] {type(error).__name__}: {error}\n")
        self.out.flush()

    def _client_option(self, text: str) -> None:
        match = re.match(r"SET\s+'([^']+)'\s*=\s*'([^']*)'", text, re.IGNORECASE)
        if match is None or match.group(1) != RESULT_MODE_KEY:
            self.failed = True
            self.out.write(f"[ERROR] fluvial's SQL client knows the option '{RESULT_MODE_KEY}' only: {text}\n")
            return
        try:
            self.result_mode = ResultMode.of(match.group(2))
        except ValueError as problem:
            self.failed = True
            self.out.write(f"[ERROR] {problem}\n")
            return
        self.out.write("[INFO] Execute statement succeeded.\n\n")

    def _print(self, result: Any) -> None:
        if getattr(result, "_raw", False):  # EXPLAIN's plan: the text as it is, as Flink's client prints it
            with result.collect() as rows:
                for row in rows:
                    self.out.write(f"{row[0]}\n")
            self.out.flush()
            return
        changes = result._rows is None and result._streaming
        columns = result.get_table_schema().columns
        counted = CountingRows(())
        try:
            with result.collect() as rows:
                counted = CountingRows(rows)
                print_result(counted, columns, self.out, self.result_mode, changes)
        except KeyboardInterrupt:
            if not self.interactive:
                raise
            self.out.write(f"\nQuery terminated, received a total of {counted.count} rows\n")  # the job was cancelled
        self.out.write("\n")
        self.out.flush()

    def wait_for_jobs(self) -> None:
        """Wait for the INSERT jobs that run in this process; a failed one is reported (`failed`)."""
        for result in self.jobs:
            try:
                result.wait()
            except Exception as error:  # noqa: BLE001 - reported as the client reports a failed statement
                self._error(error)
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
