"""`pyflink.datastream.tests.test_util` without a JVM: `DataStreamTestSinkFunction` collects in fluvial's
processes (each subtask appends to a file of its own in a temporary folder, so it works whether the job's
subtasks run as threads or processes); the module's other names come from PyFlink's own test_util (rewritten).

PyFlink's Java collect sink hands back `toString()` of each Java value: for a typed stream that is the value as
the JVM prints it (`+I[a, 1]` for a Row, `(a,1)` for a Tuple), for an untyped one the pickled bytes, which
`get_results(True)` unpickles and `str()`s. The stand-in does the same from the stream's declared type, which
`add_sink` hands it (`DataStream.add_sink` is wrapped once, here).
"""

from __future__ import annotations

import importlib
import os
import pickle
import tempfile
import threading
from pathlib import Path
from typing import Any

from fluvial.common.print_format import format_for_print
from fluvial.common.typeinfo import PickledBytesTypeInfo
from fluvial.datastream.data_stream import DataStream
from fluvial.datastream.functions import SinkFunction


class DataStreamTestSinkFunction(SinkFunction):
    """Collects every record the sink receives; `get_results` reads them back in the test's process."""

    def __init__(self) -> None:
        super().__init__()
        # inside the runner's temporary directory (removed with it): a copy of the sink in a subtask must not
        # remove the folder, so nothing here deletes it
        self.folder = tempfile.mkdtemp(prefix="test-sink-", dir=os.environ.get("FLUVIAL_PYFLINK_TESTS_SCRATCH"))
        self.type_info: Any = None

    def invoke(self, value: Any, context: Any) -> None:
        name = f"{os.getpid()}-{threading.get_ident()}"
        with open(Path(self.folder) / name, "ab") as out:
            pickle.dump(value, out)

    def _values(self) -> list[Any]:
        values = []
        for path in sorted(Path(self.folder).iterdir()):
            with open(path, "rb") as source:
                while True:
                    try:
                        values.append(pickle.load(source))
                    except EOFError:
                        break
        return values

    def get_results(self, is_python_object: bool = False, stringify: bool = True) -> list[Any]:
        values = self._values()
        typed = self.type_info is not None and not isinstance(self.type_info, PickledBytesTypeInfo)
        if not is_python_object:
            if typed:
                return [format_for_print(value, self.type_info) for value in values]
            return [pickle.dumps(value) for value in values]
        return [str(value) for value in values] if stringify else values

    def clear(self) -> None:
        for path in Path(self.folder).iterdir():
            path.unlink()


_add_sink = DataStream.add_sink


def _add_sink_telling_the_type(self: DataStream, sink_func: Any) -> Any:
    if isinstance(sink_func, DataStreamTestSinkFunction):
        sink_func.type_info = self.get_type()
    return _add_sink(self, sink_func)


DataStream.add_sink = _add_sink_telling_the_type  # type: ignore[method-assign]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(importlib.import_module("pyflink_tests.test_util"), name)
