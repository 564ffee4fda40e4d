"""PyFlink's `pyflink.common.types`: `Row` and `RowKind` (defined in `fluvial.common.row`)."""

from fluvial.common.row import Row, RowKind

__all__ = ["Row", "RowKind"]
