"""Records PyFlink's results of `cases.CASES` into `expected.json` (run with a venv that has apache-flink):

    python -m venv .pyflink-venv && .pyflink-venv/bin/pip install apache-flink==2.3.0
    .pyflink-venv/bin/python tests/integration/table/differential/record_pyflink.py [--part I/N] [CASE_ID...]

`--part I/N` records every N-th case from the I-th (several processes record in parallel); each result is
appended to `recorded.jsonl` as it is made, and `--merge` folds that file into `expected.json`.

Values are normalised by `normalize` (shared with the test) so both engines' Python values compare as JSON.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import CASES, TABLES  # noqa: E402
from normalize import normalize_row  # noqa: E402

_KINDS = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}


def _message(error: BaseException) -> str:
    java = getattr(error, "java_exception", None)
    text = str(java.toString()) if java is not None else f"{type(error).__name__}: {error}"
    return text.split("\n")[0][:600]


def _record(case, directory: str) -> dict:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    for table in case.tables:
        t_env.execute_sql(TABLES[table][0].replace("{dir}", directory))
    try:
        if case.setup:
            t_env.get_config().set("python.files", str(HERE / "diff_udfs.py"))
        for statement in case.setup:
            t_env.execute_sql(statement)
        table = t_env.sql_query(case.query)
        schema = str(table._j_table.getResolvedSchema().toString())
        with table.execute().collect() as rows:
            changelog = [[_KINDS[r.get_row_kind().name], *normalize_row(list(r))] for r in rows]
        return {"schema": schema, "rows": changelog}
    except Exception as error:  # noqa: BLE001 - every failure is a recorded result
        return {"error": _message(error)}


def _merge() -> None:
    expected_path = HERE / "expected.json"
    results = json.loads(expected_path.read_text()) if expected_path.exists() else {}
    for line in (HERE / "recorded.jsonl").read_text().splitlines():
        entry = json.loads(line)
        results[entry["id"]] = entry["result"]
    expected_path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


def main() -> None:
    args = sys.argv[1:]
    if args == ["--merge"]:
        _merge()
        return
    part, parts = 0, 1
    if args[:1] == ["--part"]:
        part, parts = (int(x) for x in args[1].split("/"))
        args = args[2:]
    only = set(args)
    chosen = [c for i, c in enumerate(CASES) if i % parts == part and (not only or c.id in only)]
    with tempfile.TemporaryDirectory() as directory, open(HERE / "recorded.jsonl", "a") as out:
        for _, file_name, content in TABLES.values():
            Path(directory, file_name).write_text(content)
        for case in chosen:
            result = _record(case, directory)
            out.write(json.dumps({"id": case.id, "result": result}) + "\n")
            out.flush()
            print(case.id, "error" if "error" in result else len(result["rows"]), flush=True)
    os._exit(0)  # the gateway JVM's threads would keep the interpreter waiting


if __name__ == "__main__":
    main()
