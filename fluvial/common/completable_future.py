"""PyFlink's `pyflink.common.completable_future`: the future JobClient methods return (`fluvial.common.future`)."""

from fluvial.common.future import CompletableFuture

__all__ = ["CompletableFuture"]
