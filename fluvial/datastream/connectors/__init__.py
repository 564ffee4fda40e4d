"""Connectors (PyFlink `pyflink.datastream.connectors`), including the names older programs import from this
package directly. Names load on first use, so a job pays only for the connectors it names."""

from __future__ import annotations

from fluvial.common.lazy_names import lazy_names

_BASE = "fluvial.datastream.connectors.base"
_FILES = "fluvial.datastream.connectors.file_system"
_EXPORTS = {
    "Source": _BASE,
    "Sink": _BASE,
    "DeliveryGuarantee": _BASE,
    "NumberSequenceSource": "fluvial.datastream.connectors.number_seq",
    "HybridSource": "fluvial.datastream.connectors.hybrid_source",
    "FlinkKafkaConsumer": "fluvial.datastream.connectors.kafka",
    "FlinkKafkaProducer": "fluvial.datastream.connectors.kafka",
    **{
        name: _FILES
        for name in (
            "OutputFileConfig",
            "FileSource",
            "FileSourceBuilder",
            "FileSink",
            "StreamingFileSink",
            "StreamFormat",
            "BulkFormat",
            "FileEnumeratorProvider",
            "FileSplitAssignerProvider",
            "RollingPolicy",
            "BucketAssigner",
            "FileCompactor",
            "FileCompactStrategy",
        )
    },
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_names(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return __all__
