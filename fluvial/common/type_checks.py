"""Declared types checked per buffer where PyFlink serializes them: a network edge or a sink.

PyFlink hands values from one chained Python function to the next as they are and applies an operator's
declared type only where the stream leaves the chain of Python functions — a network edge, a sink — by
serializing it for that type. fluvial does the same for the types that only check (integers, STRING, BOOLEAN,
CHAR, BIG_INT and TUPLEs of them, `type_conversion.fits_expression`): `batch_checker(type_info, operator)`
generates, once per operator, one loop over a buffer that tests each value inline (`type(v) is int and ...`),
returns the buffer itself when all fit, and otherwise passes the values that do not through the type's
converter — which turns a list declared TUPLE into a tuple, or raises the error naming the operator and the
field. Types that reshape values (ROW, FLOAT, ...) are converted where they are produced
(`fluvial.graph.typed_outputs`), since the next function expects the shaped value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fluvial.common.errors import InvalidJobError
from fluvial.common.type_conversion import (
    TypeMismatch,
    converter_for,
    describe_mismatch,
    fits_expression,
    integer_range,
)
from fluvial.common.typeinfo import TupleTypeInfo

__all__ = ["batch_checker", "batch_shaper", "checked_at_boundary", "key_checker"]

BatchCheck = Callable[[list], list]


def checked_at_boundary(type_info: Any) -> bool:
    """Whether values of `type_info` need checking, and only checking (not reshaping), so the check may wait
    for the boundary."""
    expression = fits_expression(type_info)
    return expression is not None and expression != "True"


def batch_checker(type_info: Any, operator: str) -> BatchCheck | None:
    """`check(values) -> values` for a buffer of values declared `type_info` by `operator`: the same list when
    every value fits (the common case: one inline test per value, no call), else a new list with the misfits
    converted; a value that cannot fit raises InvalidJobError naming the operator and the field. None when the
    type has nothing to check at the boundary (see `checked_at_boundary`)."""
    if not checked_at_boundary(type_info):
        return None
    fits = fits_expression(type_info)
    convert = converter_for(type_info)
    if fits is None or convert is None:  # never: a type checked at the boundary has a test and a converter
        return None

    def shape(value: Any) -> Any:
        try:
            return convert(value)
        except TypeMismatch as error:
            raise InvalidJobError(describe_mismatch(error, operator, type_info)) from None

    builtins = "type=type, len=len, tuple=tuple, int=int, str=str, bool=bool, set=set, map=map, min=min, max=max"
    source = "\n".join(
        [
            # the builtins the test names are parameters with defaults: locals are the fastest lookups there are;
            # the reshaping pass is a function of its own, so the fast loop has no closure cells
            f"def reshape(values, shape=shape, {builtins}):",
            f"    return [v if ({fits}) else shape(v) for v in values]",
            f"def check(values, reshape=reshape, {builtins}):",
            *_fast_test(type_info, fits),
            "    return values",
        ]
    )
    namespace: dict[str, Any] = {"shape": shape}
    exec(source, namespace)  # noqa: S102 - the source is built here from the declared type, not from input
    return namespace["check"]


def batch_shaper(type_info: Any, operator: str) -> BatchCheck | None:
    """`shape(values) -> values` for a buffer of values declared `type_info` by `operator`, whatever the type:
    `batch_checker`'s per-buffer check for a type that only checks, each value converted for one that reshapes
    (ROW to Row, FLOAT, ...); None for values taken as they are. A value that cannot fit raises InvalidJobError
    naming the operator and the field."""
    check = batch_checker(type_info, operator)
    if check is not None:
        return check
    convert = converter_for(type_info)
    if convert is None:
        return None

    def shape(values: list) -> list:
        try:
            return [convert(value) for value in values]
        except TypeMismatch as error:
            raise InvalidJobError(describe_mismatch(error, operator, type_info)) from None

    return shape


def _fast_test(type_info: Any, fits: str) -> list[str]:
    """The body that leaves for `reshape` at the first value that does not fit. For a tuple: one C-level pass
    checks that every value is exactly a tuple, then the loop unpacks each into locals (the unpacking checks the
    length, raising ValueError otherwise) and tests the fields, about a fifth cheaper than testing each value's
    type and length in the loop (measured on 1,000 TUPLE(STRING, LONG) values). A basic type is tested for the
    whole buffer at C speed before the loop (the types present, the range of ints)."""
    if not isinstance(type_info, TupleTypeInfo):
        bulk = _bulk_test(type_info, fits)
        head = [f"    if {bulk}:", "        return values"] if bulk else []
        return [*head, "    for v in values:", f"        if not ({fits}):", "            return reshape(values)"]
    fields = [fits_expression(field, f"f{index}") for index, field in enumerate(type_info.get_field_types())]
    if not fields:
        return ["    for v in values:", f"        if not ({fits}):", "            return reshape(values)"]
    names = ", ".join(f"f{index}" if field != "True" else "_" for index, field in enumerate(fields))
    tests = " and ".join(f"({field})" for field in fields if field != "True") or "True"
    return [
        "    if not set(map(type, values)) <= {tuple}:",
        "        return reshape(values)",
        "    try:",
        f"        for {names}{',' if len(fields) == 1 else ''} in values:",
        f"            if not ({tests}):",
        "                return reshape(values)",
        "    except ValueError:  # a tuple of another length",
        "        return reshape(values)",
    ]


def _bulk_test(type_info: Any, fits: str) -> str | None:
    """A whole-buffer test for a basic type's values (`fits`: their test), made of C-level passes: every value
    of the exact type (and, for integers, the smallest and largest in range; for CHAR, every length 1)."""
    bounds = integer_range(type_info)
    if bounds is not None:
        low, high = bounds
        return f"set(map(type, values)) <= {{int}} and (not values or ({low} <= min(values) and max(values) <= {high}))"
    exact = {"type(v) is str": "str", "type(v) is bool": "bool", "type(v) is int": "int"}.get(fits)
    if exact is not None:
        return f"set(map(type, values)) <= {{{exact}}}"
    return None


KeyCheck = Callable[[Any], None]


def key_checker(key_type: Any, key_by: str) -> KeyCheck | None:
    """`check(key)` for the keys a `key_by(selector, key_type=...)` computes: returns when the key fits the
    declared type (PyFlink serializes it with that type's serializer), else raises InvalidJobError naming
    `key_by`, the key and the type. None when the type declares nothing to check (no key_type, PICKLED_BYTE_ARRAY
    or a type PyFlink keeps as any Python value), so an untyped key_by pays nothing. The caller checks each
    distinct key once (the partitioner's key cache), not each record, so the type's converter is the check (it
    raises on a misfit); the key itself is used as the selector returned it."""
    convert = converter_for(key_type)
    if convert is None:
        return None

    def check(key: Any) -> None:
        try:
            convert(key)
        except TypeMismatch as error:
            raise InvalidJobError(describe_mismatch(error, key_by, key_type, key=True)) from None

    return check
