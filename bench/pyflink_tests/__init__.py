"""PyFlink 2.3's own JVM-free DataStream tests, run against fluvial: `python -m bench.pyflink_tests` (or
`make pyflink-tests`).

Where the tests come from. The apache-flink sdist on PyPI carries `pyflink/testing/` but not one test file (its
MANIFEST.in grafts only `deps/` and the examples), and the wheel carries none either, so the sources are PyFlink's
release tag in Flink's repository: `flink-python/pyflink/datastream/tests/` of `release-2.3.0`. In order:
`--source PATH` (a Flink checkout, an unpacked source release or its `flink-python/` folder; or a source
tarball such as `flink-2.3.0-src.tgz`), the cache `~/.cache/fluvial/pyflink-2.3.0/datastream-tests/` (a previous
download), or the tag's tarball from GitHub (streamed; only the test folder is unpacked, into the cache). PyFlink's `pyflink/testing/` is not used: every base class in it
starts a JVM mini cluster; the runner brings JVM-free stand-ins (`bench/pyflink_tests/shims/`).

The rewrite (each test file, into a temporary directory):
- `pyflink.testing.test_case_utils` -> the shims' `test_case_utils` (PyFlink's base classes without a JVM: a
  fresh environment per class at parallelism 2, as PyFlink's `PyFlinkStreamingTestCase`/`BatchTestCase`);
- `pyflink.datastream.tests.test_util` -> the shims' `test_util` (`DataStreamTestSinkFunction` collecting in
  process, formatting typed values as the JVM's `toString()` does; the rest of PyFlink's test_util as is);
- `pyflink.java_gateway` and `py4j` imports -> the shims' `jvm` (names that raise "needs a JVM" when used);
- `patch('pyflink.X.get_gateway', ...)` -> `patch('fluvial.X.get_gateway', create=True, ...)` (fluvial's
  module has no gateway to patch, and never calls one);
- every other `pyflink.` -> `fluvial.` (the one change a PyFlink program needs).

The selection (which tests need no JVM), decided from the sources. Only what pytest collects counts:
module-level `test*` functions and the `test*` methods of unittest TestCase classes (PyFlink's mixins, plain
classes holding tests, count through the TestCase classes that inherit them). A test is selected unless
1. its own code, or a `setUp`/`setUpClass` of its class or of a base class in the same file, names a JVM
   marker (in code: string literals and comments do not count, so a test that patches `get_gateway` to prove
   it is never called stays in): `get_gateway`, `jvm`, `java` in any case (`JavaObject`, `load_java_class`,
   `get_java_function`...), `_j_` (PyFlink's Java handles, `get_j_env_configuration`), a `j_` name, `add_jars`,
   `invoke_java_object_method`, `_load_specific_flink_module_jars`; or
2. its class derives from a PyFlink base that compares against Java classes or needs the Table runtime's JVM
   (`PythonAPICompletenessTestCase`, `PyFlinkStreamTableTestCase`, `PyFlinkBatchTableTestCase`,
   `PyFlinkITTestCase` used directly); or
3. it is in `test_connectors.py` / `test_connector.py` (Java connectors: Kafka, Pulsar, JDBC jars).
Files are handed to pytest only when they hold a selected test; a conftest deselects the rest.
PyFlink's tests that write through `DataStreamTestSinkFunction` stay selected: the shim replaces its Java sink.

It prints passed/failed counts and each failure's first error line. It needs the network the first time and
runs jobs (minutes): it is not part of `make test`; `tests/unit/bench/test_pyflink_tests.py` checks the
selection and the rewrite on a small fixture.
"""

from bench.pyflink_tests.runner import main, rewrite_source, select_tests

__all__ = ["main", "rewrite_source", "select_tests"]
