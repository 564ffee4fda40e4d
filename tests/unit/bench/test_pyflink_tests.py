"""The PyFlink-tests runner (`python -m bench.pyflink_tests`) on a small fixture written the way PyFlink's test
files are: which tests it selects as JVM-free, how it rewrites imports, and one run end to end (a passing and a
failing test, counted and reported with the failure's first line)."""

from __future__ import annotations

import textwrap

import pytest

from bench.pyflink_tests import main, rewrite_source, select_tests

TEST_UTIL = """
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream.functions import SinkFunction
from pyflink.java_gateway import get_gateway


class DataStreamTestSinkFunction(SinkFunction):
    def __init__(self):
        super().__init__(sink_func=get_gateway().jvm.CollectSink())


class FirstField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[0]
"""

TEST_DATA_STREAM = """
import unittest
from unittest.mock import patch

from py4j.java_gateway import JavaObject
from pyflink.common import Types
from pyflink.datastream.tests.test_util import DataStreamTestSinkFunction, FirstField
from pyflink.java_gateway import get_gateway
from pyflink.testing.test_case_utils import PyFlinkStreamingTestCase, PythonAPICompletenessTestCase
from pyflink.util.java_utils import get_j_env_configuration


# a mixin, as PyFlink's: pytest collects its tests through the TestCase classes that inherit it
class DataStreamTests(object):

    def setUp(self):
        self.test_sink = DataStreamTestSinkFunction()

    def test_map(self):
        ds = self.env.from_collection([1, 2], type_info=Types.INT())
        ds.map(lambda x: x + 1, output_type=Types.INT()).add_sink(self.test_sink)
        self.env.execute("map")
        self.assertEqual(['2', '3'], sorted(self.test_sink.get_results(False)))
        assert FirstField().extract_timestamp((5,), 0) == 5

    def test_through_the_gateway(self):
        get_gateway().jvm.java.lang.System.gc()


class StreamTests(DataStreamTests, PyFlinkStreamingTestCase):
    def test_wrong(self):
        self.assertEqual(1, 2, "one is not two")

    def test_no_gateway_requested(self):
        # a name in a string or a comment (get_gateway) does not count: the patch proves it is not called
        with patch('pyflink.common.time.get_gateway', side_effect=AssertionError('Gateway requested')):
            assert Types.INT() is not None

    def test_java_object(self):
        assert not isinstance(self.env, JavaObject)


class EmbeddedStreamTests(StreamTests):
    def setUp(self):
        super().setUp()
        config = get_j_env_configuration(self.env._j_stream_execution_environment)
        config.setString("python.execution-mode", "thread")


class JavaBackedTests(PyFlinkStreamingTestCase):
    @classmethod
    def setUpClass(cls):
        cls.j_env = get_gateway().jvm.Env()

    def test_anything(self):
        pass


class MoreJavaBackedTests(JavaBackedTests):
    def test_more(self):
        pass


class CompletenessTests(PythonAPICompletenessTestCase, unittest.TestCase):
    def test_completeness(self):
        pass
"""


def write_fixture(folder):
    folder.mkdir()
    (folder / "test_util.py").write_text(textwrap.dedent(TEST_UTIL))
    (folder / "test_data_stream.py").write_text(textwrap.dedent(TEST_DATA_STREAM))
    (folder / "test_connectors.py").write_text("def test_kafka():\n    pass\n")
    return folder


def test_the_selection_leaves_out_what_touches_the_jvm():
    selected = select_tests(TEST_DATA_STREAM, "test_data_stream.py")
    assert selected == [
        "StreamTests::test_wrong",
        "StreamTests::test_no_gateway_requested",
        "StreamTests::test_map",
    ]
    assert select_tests("def test_kafka():\n    pass\n", "test_connectors.py") == []


def test_the_rewrite_points_pyflink_at_fluvial_and_the_test_utilities_at_the_shims():
    text = rewrite_source(TEST_DATA_STREAM + "x = pyflink.common.Types\nimport pyflink\n")
    assert "from fluvial.common import Types" in text
    assert "from bench.pyflink_tests.shims.test_util import DataStreamTestSinkFunction" in text
    assert "from bench.pyflink_tests.shims.test_case_utils import PyFlinkStreamingTestCase" in text
    assert "from bench.pyflink_tests.shims.jvm import get_gateway" in text
    assert "from bench.pyflink_tests.shims.jvm import JavaObject" in text
    assert "x = fluvial.common.Types" in text and "\nimport fluvial\n" in text
    assert "patch('fluvial.common.time.get_gateway', create=True, side_effect=" in text
    assert "pyflink" not in text.replace("pyflink_tests", "")


@pytest.mark.timeout(90)
def test_a_run_counts_passes_and_failures_with_each_failures_first_line(tmp_path, capsys):
    status = main(["--source", str(write_fixture(tmp_path / "tests"))])
    out = capsys.readouterr().out
    assert status == 1
    assert "3 run, 2 passed, 1 failed (3 selected)" in out, out
    assert "FAILED pyflink_tests/test_data_stream.py::StreamTests::test_wrong: AssertionError" in out, out
    assert "one is not two" in out
