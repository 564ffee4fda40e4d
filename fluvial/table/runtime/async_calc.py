"""Async scalar functions (Flink's AsyncCalc): a Calc calling an `AsyncScalarFunction` (or a `udf` on an
`async def` function) runs as fluvial's async wait operator (`AsyncDataStream.ordered_wait_with_retry`), so the
rows' calls wait concurrently on the subtask's asyncio event loop, at most
`table.exec.async-scalar.max-concurrent-operations` at once, and leave in input order.

Per row, `AsyncCalcFunction.async_invoke` evaluates the Calc: each async call's operands, then the call awaited
(a call nested in another's operands first), then the rest of the projections and the condition over the row's
values extended by those results. The operator owns the deadline (`table.exec.async-scalar.timeout`, from the
first attempt), the retries (`retry-strategy` FIXED_DELAY: `max-attempts` retries after the first call,
`retry-delay` apart, on any exception) and the checkpoint: rows still in flight at a barrier are stored with the
operator's state and evaluated again after a restore, as Flink's AsyncWaitOperator does.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fluvial.common.row import Row, _create_row
from fluvial.datastream.functions import AsyncFunction
from fluvial.table.errors import TableException
from fluvial.table.planner.rex import Call, Rex
from fluvial.table.runtime.codegen import calls_any, lift_calls

__all__ = ["AsyncCalcFunction", "has_async_call", "is_async_call"]

logger = logging.getLogger(__name__)


def is_async_call(call: Call) -> bool:
    return call.op == "__udf__" and getattr(call.function, "_async", False)


def has_async_call(rexes: Sequence[Rex | None]) -> bool:
    return any(calls_any(r, is_async_call) for r in rexes)


class AsyncCalcFunction(AsyncFunction):
    """Projection and filter with async scalar function calls, one row per `async_invoke` (see the module);
    the row's kind is kept, a row the condition drops gives no result."""

    def __init__(
        self,
        names: Sequence[str],
        width: int,
        projections: Sequence[Rex] | None,
        condition: Rex | None,
        timeout_ms: int,
    ) -> None:
        self.names = list(names)
        self.width = width  # the input's columns
        self.projections = None if projections is None else tuple(projections)
        self.condition = condition
        self.timeout_ms = timeout_ms  # for the timeout's message
        self._compiled: Any = None
        self._functions: list[Any] = []  # the UserDefinedFunctions opened, closed by close()

    def open(self, runtime_context: Any) -> None:
        self._compiled = lift_calls(self.projections, self.condition, self.width, is_async_call)
        from fluvial.table.udf import FunctionContext, UserDefinedFunction

        for call, _ in self._compiled[0]:
            wrapper = call.function
            if isinstance(wrapper._func, UserDefinedFunction) and not wrapper._opened:
                wrapper._func.open(FunctionContext(runtime_context))
                wrapper._opened = True
                self._functions.append(wrapper._func)

    def close(self) -> None:
        for function in self._functions:
            try:
                function.close()
            except Exception:
                logger.exception("close() of the async scalar function %s failed", type(function).__name__)
        self._functions.clear()

    async def async_invoke(self, value: Row) -> list[Row]:
        if self._compiled is None:
            self.open(None)
        calls, calc = self._compiled
        values = list(value._values)
        for call, operands in calls:
            wrapper = call.function
            try:
                values.append(await wrapper._invoke(*operands(values)))
            except Exception as error:
                raise TableException(
                    f"The async scalar function '{wrapper._name}' failed for the row {value}: "
                    f"{type(error).__name__}: {error}"
                ) from error
        projected = calc(values)
        return [] if projected is None else [_create_row(self.names, projected, value._row_kind)]

    def timeout(self, value: Row) -> list[Row]:
        names = ", ".join(f"'{call.function._name}'" for call, _ in self._compiled[0]) if self._compiled else ""
        raise TimeoutError(
            f"The async scalar function {names} did not complete within {self.timeout_ms} ms for the row {value} "
            "(table.exec.async-scalar.timeout, retries included): raise the timeout or make the call faster"
        )

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_compiled"] = None
        state["_functions"] = []
        return state
