"""Which operators a declared output type wraps (`fluvial.graph.typed_outputs`): only types that reshape values
(ROW, FLOAT, ...) wrap the function, whose main results are then shaped where they are produced; types that
only check (LONG, STRING, TUPLEs of them) leave every kind unwrapped — the chain checks them per buffer at its
boundary and shapes side outputs by their tags' types — so a typed process function costs only that check."""

from __future__ import annotations

import pytest

from fluvial.common import Row, Types
from fluvial.datastream import OutputTag
from fluvial.datastream import transformations as t
from fluvial.graph.typed_outputs import TypedFunction, apply_output_type


class Function:
    def process_element(self, value, ctx):
        yield value

    def process(self, key, context, elements):
        yield from elements

    def map(self, value):
        return value


KINDS = [
    t.MapSpec(Function()),
    t.FlatMapSpec(Function()),
    t.ProcessSpec(Function()),
    t.KeyedProcessSpec(Function()),
    t.CoFlatMapSpec(Function()),
    t.CoProcessSpec(Function()),
    t.KeyedCoProcessSpec(Function()),
    t.WindowSpec(window_function=Function(), window_function_kind=t.WindowFunctionKind.PROCESS),
]


def _wrapped(spec: t.OperatorSpec) -> bool:
    return isinstance(spec.function, TypedFunction) or isinstance(getattr(spec, "window_function", None), TypedFunction)


@pytest.mark.parametrize("spec", KINDS, ids=lambda spec: type(spec).__name__)
def test_a_type_that_only_checks_wraps_no_kind(spec):
    for declared in (Types.LONG(), Types.STRING(), Types.TUPLE([Types.STRING(), Types.LONG()])):
        assert apply_output_type(spec, declared, "op") is spec


@pytest.mark.parametrize("spec", KINDS, ids=lambda spec: type(spec).__name__)
def test_a_type_that_reshapes_wraps_every_kind_with_results(spec):
    assert _wrapped(apply_output_type(spec, Types.ROW([Types.STRING()]), "op"))


def test_a_wrapped_process_function_shapes_its_main_records_and_passes_tagged_pairs_as_they_are():
    tag = OutputTag("side", Types.ROW([Types.INT()]))

    class Mixed:
        def process_element(self, value, ctx):
            yield (value,)
            yield tag, (1,)

    spec = apply_output_type(t.ProcessSpec(Mixed()), Types.ROW([Types.STRING()]), "op")
    main, side = spec.function.process_element("a", None)
    assert isinstance(main, Row) and main[0] == "a"
    assert side == (tag, (1,)), "the chain shapes side outputs by their tag's type"
