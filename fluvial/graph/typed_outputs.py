"""Declared output types applied to operators at translation time (DESIGN: describe, compile, run).

An operator with an `output_type` that shapes values (`fluvial.common.type_conversion`) gets its user
function wrapped once here, in the plan: the wrapper converts what the function returns (a Row for
`Types.ROW_NAMED`, a 32-bit float for `Types.FLOAT`, ...) and turns a value that does not fit into an error
naming the operator and the field. Untyped operators are left untouched, so they pay nothing.

Types that only check (LONG, STRING, TUPLE of such, ...: `fluvial.common.type_checks`) are not applied here:
as in PyFlink, where chained Python functions hand each other their values as they are and a declared type
is applied where the stream is serialized, the chain checks them per buffer where the stream leaves it — a
network edge or a sink (`fluvial.runtime.chain`). Side outputs are not shaped here either: the chain shapes
each by its tag's type where the operator hands it on, for typed and untyped operators alike, as PyFlink
converts every side output by its OutputTag's type.

The wrapper is transparent to the runtime: the result methods of the operator's kind are converted, every
other attribute (`open`, `close`, `on_timer` when absent, `snapshot_state`, ...) is the user function's own,
and a plain callable stays callable. Values sent to a side output as `(output_tag, value)` pass unshaped.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from typing import Any, cast

from fluvial.common.errors import InvalidJobError
from fluvial.common.type_checks import checked_at_boundary
from fluvial.common.type_conversion import TypeMismatch, converter_for, describe_mismatch
from fluvial.datastream import transformations as t
from fluvial.datastream.output_tag import OutputTag

__all__ = ["TypedFunction", "apply_output_type"]


class Shape(enum.Enum):
    VALUE = "value"  # the method returns one record (map, reduce, get_result)
    RECORDS = "records"  # the method returns an iterable of records or None (flat_map, process, apply)
    AWAITED_RECORDS = "awaited records"  # a coroutine function whose awaited result is a list (async_invoke)


_PROCESS = {"process_element": Shape.RECORDS, "on_timer": Shape.RECORDS}
_CO_PROCESS = {"process_element1": Shape.RECORDS, "process_element2": Shape.RECORDS, "on_timer": Shape.RECORDS}
_METHODS: dict[type, dict[str, Shape]] = {
    t.MapSpec: {"map": Shape.VALUE},
    t.FlatMapSpec: {"flat_map": Shape.RECORDS},
    t.KeyedReduceSpec: {"reduce": Shape.VALUE},
    t.ProcessSpec: _PROCESS,
    t.KeyedProcessSpec: _PROCESS,
    t.CoMapSpec: {"map1": Shape.VALUE, "map2": Shape.VALUE},
    t.CoFlatMapSpec: {"flat_map1": Shape.RECORDS, "flat_map2": Shape.RECORDS},
    t.CoProcessSpec: _CO_PROCESS,
    t.KeyedCoProcessSpec: _CO_PROCESS,
    t.BroadcastProcessSpec: {**_PROCESS, "process_broadcast_element": Shape.RECORDS},
    t.AsyncWaitSpec: {"async_invoke": Shape.AWAITED_RECORDS, "timeout": Shape.RECORDS},
}
_WINDOW_FUNCTION = {"process": Shape.RECORDS, "apply": Shape.RECORDS}
# a plain callable stands for the one method of these kinds
_CALLABLE_METHODS = frozenset({"map", "flat_map", "reduce", "apply"})
_SINGLE_ARGUMENT = frozenset({"map", "map1", "map2", "get_result"})


def _checked(convert: Callable[[Any], Any], operator: str, declared: Any) -> Callable[[Any], Any]:
    def shape(value: Any) -> Any:
        try:
            return convert(value)
        except TypeMismatch as error:
            raise InvalidJobError(describe_mismatch(error, operator, declared)) from None

    return shape


def _shaped_value(
    target: Callable[..., Any], convert: Callable[[Any], Any], operator: str, declared: Any, single: bool
) -> Callable[..., Any]:
    """`target` then `convert`, in one call (the per-record path of every typed map)."""
    if single:

        def call_one(value: Any) -> Any:
            try:
                return convert(target(value))
            except TypeMismatch as error:
                raise InvalidJobError(describe_mismatch(error, operator, declared)) from None

        return call_one

    def call(*args: Any) -> Any:
        try:
            return convert(target(*args))
        except TypeMismatch as error:
            raise InvalidJobError(describe_mismatch(error, operator, declared)) from None

    return call


def _records_shaper(shape: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`shaped(results)`: the main records of an iterable of results shaped by the operator's type;
    `(output_tag, value)` pairs pass as they are (the chain shapes side outputs by their tags' types). A closure,
    not an object with `__call__`: it runs once or twice per record, and CPython calls a function about twice
    as fast (40 against 80 ns for a None result)."""

    def shaped(results: Any) -> Any:
        if results is None:
            return None
        if isinstance(results, (str, bytes)):
            return shape(results)
        return [
            item if type(item) is tuple and len(item) == 2 and isinstance(item[0], OutputTag) else shape(item)
            for item in results
        ]

    return shaped


class TypedFunction:
    """A user function whose results are shaped by a declared type. Holds only picklable, copyable data (the
    function, the shapes, the converters), so per-subtask copies of it are independent like the function's."""

    def __init__(
        self, inner: Any, methods: dict[str, Shape], convert: Callable[[Any], Any], operator: str, declared: Any
    ) -> None:
        self._inner = inner
        self._methods = methods
        self._convert = convert
        self._operator = operator
        self._declared = declared
        self._records_shape = _records_shaper(_checked(convert, operator, declared))

    def __getstate__(self) -> dict:
        """The converters are built from the declared type, not pickled: they are closures over module state
        (struct formats) that only the receiving process's own build gets right."""
        return {
            "_inner": self._inner,
            "_methods": self._methods,
            "_operator": self._operator,
            "_declared": self._declared,
        }

    def __setstate__(self, state: dict) -> None:
        TypedFunction.__init__(
            self,
            state["_inner"],
            state["_methods"],
            _main_converter(state["_declared"]),
            state["_operator"],
            state["_declared"],
        )

    @property
    def wrapped_function(self) -> Any:
        return self._inner

    def wrapping(self, inner: Any) -> TypedFunction:
        """The same shaping around another object (a stand-in for the wrapped one: `runtime.chain`)."""
        return TypedFunction(inner, self._methods, self._convert, self._operator, self._declared)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        state = self.__dict__
        if "_inner" not in state:
            raise AttributeError(name)
        inner = state["_inner"]
        shape = state["_methods"].get(name)
        target = getattr(inner, name, None)
        if shape is None:
            if target is None:
                raise AttributeError(name)
            return target
        if target is None:
            if name not in _CALLABLE_METHODS or not callable(inner):
                raise AttributeError(name)
            target = inner
        if shape is Shape.VALUE:
            return _shaped_value(
                target, state["_convert"], state["_operator"], state["_declared"], name in _SINGLE_ARGUMENT
            )
        post = state["_records_shape"]
        if shape is Shape.AWAITED_RECORDS:

            async def shaped(*args: Any) -> Any:
                results = await target(*args)  # anything but a list is the operator's to refuse, unshaped
                return post(results) if isinstance(results, (list, tuple)) else results

            return shaped
        return lambda *args: post(target(*args))

    def __call__(self, *args: Any) -> Any:
        """A wrapped plain callable is still called directly by operators that call it so."""
        method = next(iter(self._methods))
        return getattr(self, method)(*args)

    def __repr__(self) -> str:
        return f"TypedFunction({self._inner!r})"


def _main_converter(declared: Any) -> Callable[[Any], Any]:
    """What shapes main results where they are produced: never None, as `apply_output_type` wraps a function
    only for a type that reshapes (a type that only checks is checked at the chain's boundary instead)."""
    return cast("Callable[[Any], Any]", converter_for(declared))


def _wrap(function: Any, methods: dict[str, Shape], output_type: Any, operator: str) -> Any:
    if function is None:
        return function
    return TypedFunction(function, methods, _main_converter(output_type), operator, output_type)


def apply_output_type(spec: t.OperatorSpec, output_type: Any, operator: str) -> t.OperatorSpec:
    """`spec` with its function wrapped to shape results by `output_type`; `spec` itself when the type
    shapes nothing, is checked at the chain's boundary, or the kind has no results of its own (sinks, sources,
    pending kinds)."""
    if output_type is None or converter_for(output_type) is None or checked_at_boundary(output_type):
        return spec
    if isinstance(spec, t.WindowSpec):
        if spec.window_function is not None:
            wrapped = _wrap(spec.window_function, _WINDOW_FUNCTION, output_type, operator)
            return dataclasses.replace(spec, window_function=wrapped)
        methods = (
            {"get_result": Shape.VALUE}
            if spec.aggregation is t.WindowAggregation.AGGREGATE
            else {"reduce": Shape.VALUE}
        )
        return dataclasses.replace(spec, function=_wrap(spec.function, methods, output_type, operator))
    kind_methods = _METHODS.get(type(spec))
    if kind_methods is None:
        return spec
    return dataclasses.replace(spec, function=_wrap(spec.function, kind_methods, output_type, operator))
