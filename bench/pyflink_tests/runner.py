"""Obtain PyFlink's DataStream tests, rewrite them onto fluvial, select the JVM-free ones, run them with pytest
and summarise (the rules are in the package's docstring)."""

from __future__ import annotations

import argparse
import ast
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import tokenize
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VERSION = "2.3.0"
TARBALL = f"https://codeload.github.com/apache/flink/tar.gz/refs/tags/release-{VERSION}"
TESTS_IN_REPOSITORY = "flink-python/pyflink/datastream/tests"
CACHE = Path.home() / ".cache" / "fluvial" / f"pyflink-{VERSION}" / "datastream-tests"
REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "pyflink_tests"  # the rewritten tests' package in the temporary directory
SHIMS = "bench.pyflink_tests.shims"

JVM_MARKERS = re.compile(
    r"get_gateway|\bjvm\b|java|_j_|\bj_\w+|JavaObject|load_java_class|add_jars|invoke_java_object_method"
    r"|_load_specific_flink_module_jars",
    re.IGNORECASE,
)
JVM_BASES = {
    "PythonAPICompletenessTestCase",
    "PyFlinkStreamTableTestCase",
    "PyFlinkBatchTableTestCase",
    "PyFlinkITTestCase",
}
JVM_MODULES = {"test_connectors.py", "test_connector.py"}
_SETUPS = {"setUp", "setUpClass"}

_MAPPED = [
    # a test that patches PyFlink's get_gateway to prove it is not called: fluvial's module has no such name,
    # so the patch creates it (and fluvial never calls it)
    (re.compile(r"""patch\((['"])pyflink\.([\w.]+\.get_gateway)\1"""), r"patch(\1fluvial.\2\1, create=True"),
    (re.compile(r"\bpyflink\.testing\.test_case_utils\b"), f"{SHIMS}.test_case_utils"),
    (re.compile(r"\bpyflink\.datastream\.tests\.test_util\b"), f"{SHIMS}.test_util"),
    (re.compile(r"\bpyflink\.datastream\.tests\b"), PACKAGE),
    (re.compile(r"\bpyflink\.java_gateway\b"), f"{SHIMS}.jvm"),
    (re.compile(r"\bpyflink\.util\.java_utils\b"), f"{SHIMS}.jvm"),
    (re.compile(r"^(\s*)from py4j\.[\w.]+ import", re.MULTILINE), rf"\1from {SHIMS}.jvm import"),
    (re.compile(r"^(\s*)import py4j\b.*$", re.MULTILINE), rf"\1from {SHIMS} import jvm as py4j"),
    (re.compile(r"\bpyflink\."), "fluvial."),
    (re.compile(r"^(\s*)(from|import) pyflink\b", re.MULTILINE), r"\1\2 fluvial"),
]


def rewrite_source(text: str) -> str:
    """A PyFlink test file as it runs on fluvial: the test bases and PyFlink's Java-backed test sink replaced by
    the shims, JVM imports by names that raise when used, every other `pyflink.` by `fluvial.`."""
    for pattern, replacement in _MAPPED:
        text = pattern.sub(replacement, text)
    return text


def _base_names(node: ast.ClassDef) -> list[str]:
    return [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]


def _code_only(source: str) -> str:
    """The source without its string literals and comments: a name in a string (a patch target, a message)
    does not make a test need a JVM; code that touches one does."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(textwrap.dedent(source)).readline))
    except (tokenize.TokenError, IndentationError):
        return source
    return " ".join(token.string for token in tokens if token.type not in (tokenize.STRING, tokenize.COMMENT))


def _needs_jvm(text: str, node: ast.AST) -> bool:
    return JVM_MARKERS.search(_code_only(ast.get_source_segment(text, node) or "")) is not None


def select_tests(text: str, filename: str) -> list[str]:
    """The JVM-free tests of one PyFlink test file, as pytest ids relative to the file (`Class::test_x`), by
    the rule in the package's docstring. Only what pytest collects counts: module-level `test*` functions and
    the test methods of classes that are unittest TestCases (or named `Test*`), inherited ones included; a
    class's bases and set-ups are followed through the classes of the same file."""
    if filename in JVM_MODULES:
        return []
    tree = ast.parse(text)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

    def lineage(node: ast.ClassDef) -> list[ast.ClassDef]:
        """The class and its local bases, depth first (a simplified MRO: enough for these files)."""
        order, pending = [], [node]
        while pending:
            current = pending.pop(0)
            if current not in order:
                order.append(current)
                pending += [classes[name] for name in _base_names(current) if name in classes]
        return order

    def bases(node: ast.ClassDef) -> set[str]:
        return {name for member in lineage(node) for name in _base_names(member)}

    def needs_jvm_class(node: ast.ClassDef) -> bool:
        if bases(node) & JVM_BASES:
            return True
        for member in lineage(node):
            for method in member.body:
                if isinstance(method, ast.FunctionDef) and method.name in _SETUPS and _needs_jvm(text, method):
                    return True
        return False

    def collected(node: ast.ClassDef) -> bool:
        return node.name.startswith("Test") or any(name.endswith("TestCase") for name in bases(node))

    selected = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            if not _needs_jvm(text, node):
                selected.append(node.name)
        elif isinstance(node, ast.ClassDef) and collected(node) and not needs_jvm_class(node):
            methods: dict[str, ast.FunctionDef] = {}
            for member in lineage(node):
                for method in member.body:
                    if isinstance(method, ast.FunctionDef) and method.name.startswith("test"):
                        methods.setdefault(method.name, method)
            selected += [f"{node.name}::{name}" for name, method in methods.items() if not _needs_jvm(text, method)]
    return selected


def _find_tests_folder(root: Path) -> Path | None:
    for candidate in (root, root / "pyflink/datastream/tests", root / TESTS_IN_REPOSITORY):
        if (candidate / "test_data_stream.py").is_file():
            return candidate
    return None


def obtain_sources(source: Path | None) -> Path:
    """The folder of PyFlink's DataStream tests: `--source` as given (a folder, or a source tarball whose test
    folder is unpacked into the cache), else the cache, else the release tag's tarball from GitHub."""
    if source is not None and source.is_file():
        with open(source, "rb") as stream:
            return _unpack_tests(stream, str(source))
    if source is not None:
        found = _find_tests_folder(source)
        if found is None:
            raise SystemExit(f"{source} holds no pyflink/datastream/tests/test_data_stream.py; pass a Flink checkout")
        return found
    if (CACHE / "test_data_stream.py").is_file():
        return CACHE
    print(f"downloading PyFlink {VERSION}'s tests from {TARBALL} (the PyPI sdist ships none)", flush=True)
    try:
        with urllib.request.urlopen(TARBALL, timeout=60) as response:
            return _unpack_tests(response, TARBALL)
    except OSError as error:
        raise SystemExit(
            f"could not download {TARBALL} ({error}); pass --source with a Flink {VERSION} checkout "
            f"(git clone --depth 1 -b release-{VERSION} https://github.com/apache/flink) or its source tarball"
        ) from None


def _unpack_tests(stream: Any, name: str) -> Path:
    """Stream a gzipped tarball of Flink's sources, unpacking only the DataStream test folder into the cache
    (the tarball of the whole repository is never held in memory or on disk)."""
    staging = Path(tempfile.mkdtemp(prefix="pyflink-tests-"))
    try:
        with tarfile.open(fileobj=stream, mode="r|gz") as archive:
            for member in archive:
                if f"/{TESTS_IN_REPOSITORY}/" in f"/{member.name}" and member.isfile():
                    archive.extract(member, staging, filter="data")
        found = next((p.parent for p in staging.rglob("test_data_stream.py")), None)
        if found is None:
            raise SystemExit(f"{name} holds no {TESTS_IN_REPOSITORY}/test_data_stream.py")
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(CACHE, ignore_errors=True)
        shutil.copytree(found, CACHE)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return CACHE


def prepare(sources: Path, destination: Path) -> list[str]:
    """Rewrite every test file into `destination/pyflink_tests/`; return the selected pytest node ids."""
    package = destination / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (destination / "conftest.py").write_text(_CONFTEST)
    node_ids: list[str] = []
    for path in sorted(sources.glob("*.py")):
        text = path.read_text()
        (package / path.name).write_text(rewrite_source(text))
        if path.name.startswith("test_") and path.name != "test_util.py":
            node_ids += [f"{PACKAGE}/{path.name}::{test}" for test in select_tests(text, path.name)]
    return node_ids


# Deselects what the selection left out (explicit node ids would abort the whole run on one id pytest does not
# collect); the files with a selected test are the only ones given to pytest, so a module that cannot import
# without a JVM and has nothing selected does not count as a failure.
_CONFTEST = """
from pathlib import Path

SELECTED = set(Path(__file__).with_name("selected.txt").read_text().splitlines())


def pytest_collection_modifyitems(config, items):
    kept = [item for item in items if item.nodeid in SELECTED]
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in SELECTED])
    items[:] = kept
"""


@dataclass
class Outcome:
    node_id: str
    passed: bool
    first_error_line: str = ""


def _first_line(message: str) -> str:
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[0][:200] if lines else ""


def run(destination: Path, node_ids: list[str], extra: list[str]) -> list[Outcome]:
    """Run the selected tests with pytest in a child process; the outcomes from its JUnit XML report."""
    report = destination / "report.xml"
    scratch = destination / "scratch"
    scratch.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(destination), str(REPO_ROOT)]))
    env["FLUVIAL_PYFLINK_TESTS_SCRATCH"] = str(scratch)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(destination)]
    (destination / "selected.txt").write_text("\n".join(node_ids))
    files = sorted({node_id.split("::", 1)[0] for node_id in node_ids})
    command += ["-o", "addopts=", "--timeout", "120", f"--junitxml={report}", *extra, *files]
    subprocess.run(command, cwd=destination, env=env, stdout=subprocess.DEVNULL, check=False)
    outcomes = []
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        node = f"{'/'.join(module[:2])}.py::{'::'.join(module[2:] + [case.get('name', '')])}"
        problem = next((child for child in case if child.tag in ("failure", "error")), None)
        skipped = any(child.tag == "skipped" for child in case)
        if skipped:
            continue
        if problem is None:
            outcomes.append(Outcome(node, True))
        else:
            outcomes.append(Outcome(node, False, _first_line(problem.get("message") or problem.text or "")))
    return outcomes


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pyflink_tests", description=__doc__)
    parser.add_argument(
        "--source", type=Path, help="a Flink checkout (or its flink-python folder) to take the tests from"
    )
    parser.add_argument("-k", dest="keyword", help="pytest's -k, to run a subset")
    parser.add_argument("--list", action="store_true", help="print the selected tests and stop")
    args = parser.parse_args(argv)
    sources = obtain_sources(args.source)
    with tempfile.TemporaryDirectory(prefix="fluvial-pyflink-tests-") as scratch:
        destination = Path(scratch)
        node_ids = prepare(sources, destination)
        if args.list:
            print("\n".join(node_ids))
            return 0
        outcomes = run(destination, node_ids, ["-k", args.keyword] if args.keyword else [])
    failed = [o for o in outcomes if not o.passed]
    for outcome in failed:
        print(f"FAILED {outcome.node_id}: {outcome.first_error_line}")
    print(
        f"PyFlink {VERSION} JVM-free DataStream tests on fluvial: {len(outcomes)} run, "
        f"{len(outcomes) - len(failed)} passed, {len(failed)} failed ({len(node_ids)} selected)"
    )
    return 1 if failed else 0
