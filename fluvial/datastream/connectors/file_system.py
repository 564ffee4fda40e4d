"""PyFlink's `pyflink.datastream.connectors.file_system` module: the file source and sink under the import path
PyFlink programs use. The source lives in `file_source.py`, the sink in `file_sink.py`."""

from fluvial.datastream.connectors.file_sink import (
    BasePathBucketAssigner,
    BucketAssigner,
    BucketAssignerContext,
    DateTimeBucketAssigner,
    FileSink,
    FileSinkWriter,
    FileSinkWriterState,
    OutputFileConfig,
    OutputFileConfigBuilder,
    PartFileInfo,
    PendingFile,
    RollingPolicy,
    RowFormatBuilder,
)
from fluvial.datastream.connectors.file_source import (
    FileMonitorSplit,
    FileSource,
    FileSourceBuilder,
    FileSourceReader,
    FileSourceSplit,
    FormatReader,
    StreamFormat,
    TextLineFormat,
    TextLineReader,
)

__all__ = [
    "BasePathBucketAssigner",
    "BucketAssigner",
    "BucketAssignerContext",
    "DateTimeBucketAssigner",
    "FileMonitorSplit",
    "FileSink",
    "FileSinkWriter",
    "FileSinkWriterState",
    "FileSource",
    "FileSourceBuilder",
    "FileSourceReader",
    "FileSourceSplit",
    "FormatReader",
    "OutputFileConfig",
    "OutputFileConfigBuilder",
    "PartFileInfo",
    "PendingFile",
    "RollingPolicy",
    "RowFormatBuilder",
    "StreamFormat",
    "TextLineFormat",
    "TextLineReader",
]
