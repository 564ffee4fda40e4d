"""`pyflink.testing.test_case_utils` without a JVM: PyFlink's test base classes with fluvial's environment in
place of the Java mini cluster (the same parallelism and runtime modes as PyFlink's), and its helpers that need
no JVM. Java-only helpers raise (see `shims.jvm`)."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest
from typing import Any

from bench.pyflink_tests.shims.jvm import JavaObject, _needs_jvm
from fluvial.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

invoke_java_object_method = _needs_jvm("invoke_java_object_method")
to_java_data_structure = _needs_jvm("to_java_data_structure")
_load_specific_flink_module_jars = _needs_jvm("_load_specific_flink_module_jars")


class PyFlinkTestCase(unittest.TestCase):
    """A temporary folder per class, and PyFlink's order-insensitive comparison."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.tempdir = tempfile.mkdtemp()
        os.environ["FLINK_TESTING"] = "1"

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tempdir, ignore_errors=True)

    @classmethod
    def assert_equals(cls, actual: list[Any], expected: list[Any]) -> None:
        actual = sorted(actual)
        expected.sort()
        assert len(actual) == len(expected)
        assert all(x == y for x, y in zip(actual, expected))

    @classmethod
    def to_py_list(cls, actual: Any) -> list[Any]:
        return list(actual)


class PyFlinkITTestCase(PyFlinkTestCase):
    """One environment per class (PyFlink's runs on a shared Java mini cluster), parallelism 2."""

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.env = StreamExecutionEnvironment.get_execution_environment()
        cls.env.set_parallelism(2)


class PyFlinkUTTestCase(PyFlinkTestCase):
    def setUp(self) -> None:
        from fluvial.table import StreamTableEnvironment

        self.env = StreamExecutionEnvironment.get_execution_environment()
        self.env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
        self.env.set_parallelism(2)
        # PyFlink also sets python.fn-execution.bundle.size: fluvial has no Python worker to tune and refuses it
        self.t_env = StreamTableEnvironment.create(self.env)


class PyFlinkStreamingTestCase(PyFlinkITTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.env.set_runtime_mode(RuntimeExecutionMode.STREAMING)


class PyFlinkBatchTestCase(PyFlinkITTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.env.set_runtime_mode(RuntimeExecutionMode.BATCH)


class PyFlinkStreamTableTestCase(PyFlinkITTestCase):
    """Left out by the selection (PyFlink's Table runtime on the JVM); present so a module imports."""


class PyFlinkBatchTableTestCase(PyFlinkITTestCase):
    """Left out by the selection (PyFlink's Table runtime on the JVM); present so a module imports."""


class PythonAPICompletenessTestCase:
    """Left out by the selection: it compares PyFlink's classes with their Java counterparts."""


__all__ = [
    "JavaObject",
    "PyFlinkBatchTableTestCase",
    "PyFlinkBatchTestCase",
    "PyFlinkITTestCase",
    "PyFlinkStreamTableTestCase",
    "PyFlinkStreamingTestCase",
    "PyFlinkTestCase",
    "PyFlinkUTTestCase",
    "PythonAPICompletenessTestCase",
]
