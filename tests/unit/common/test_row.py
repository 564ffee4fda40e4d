import copy
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluvial.common.row import Row, RowKind


def test_positional_row():
    row = Row(1, "a")
    assert row[0] == 1
    assert row[1] == "a"
    assert row[-1] == "a"
    assert row[0:2] == [1, "a"]
    assert len(row) == 2
    assert list(row) == [1, "a"]
    assert not hasattr(row, "_fields")


def test_named_row_keeps_keyword_order():
    row = Row(name="a", count=1)
    assert row._fields == ["name", "count"]
    assert list(row) == ["a", 1]
    assert row["count"] == 1
    assert row.name == "a"
    assert row[0] == "a"


def test_args_and_kwargs_together_are_rejected():
    with pytest.raises(ValueError):
        Row(1, name="a")


def test_repr_like_pyflink():
    assert repr(Row(name="a", count=1)) == "Row(name='a', count=1)"
    assert repr(Row(1, "a")) == "<Row(1, 'a')>"
    assert str(Row(x=Row(1, None))) == "Row(x=<Row(1, None)>)"


def test_row_class_factory():
    Person = Row("name", "age")
    alice = Person("Alice", 11)
    assert alice == Row(name="Alice", age=11)
    assert alice.age == 11
    assert repr(alice) == "Row(name='Alice', age=11)"
    assert "name" in Person
    assert "wrong_key" not in Person
    with pytest.raises(ValueError):
        Person("a", 1, 2)


def test_row_class_factory_does_not_alias_field_names():
    Person = Row("name", "age")
    alice = Person("Alice", 11)
    Person[0] = "first"
    assert alice._fields == ["name", "age"]


def test_named_row_contains_its_field_names():
    row = Row(name="Alice", age=11)
    assert "name" in row
    assert "wrong_key" not in row


def test_unknown_names_raise_key_value_and_attribute_errors():
    row = Row(name="a")
    with pytest.raises(KeyError):
        row["missing"]
    with pytest.raises(ValueError):
        row["missing"]
    with pytest.raises(AttributeError):
        row.missing
    with pytest.raises(KeyError, match="no field names"):
        Row(1)["name"]
    with pytest.raises(AttributeError):
        Row(1).name
    with pytest.raises(IndexError):
        Row(1)[3]


def test_setitem_by_index_and_name():
    row = Row(name="a", count=1)
    row[1] = 2
    row["name"] = "b"
    assert list(row) == ["b", 2]
    with pytest.raises(KeyError):
        row["missing"] = 0


def test_attributes_are_not_assignable():
    row = Row(name="a")
    with pytest.raises(AttributeError, match=r"row\['name'\]"):
        row.name = "b"
    assert row.name == "a"


def test_set_field_names_makes_a_positional_row_named():
    row = Row("a", 1)
    row.set_field_names(["name", "count"])
    assert row["count"] == 1
    assert row.as_dict() == {"name": "a", "count": 1}
    assert repr(row) == "Row(name='a', count=1)"


def test_as_dict():
    row = Row(key=1, value=Row(name="a", age=2), items=[Row(x=1)], by={"k": Row(y=2)})
    assert row.as_dict() == {"key": 1, "value": Row(name="a", age=2), "items": [Row(x=1)], "by": {"k": Row(y=2)}}
    assert row.as_dict(recursive=True) == {
        "key": 1,
        "value": {"name": "a", "age": 2},
        "items": [{"x": 1}],
        "by": {"k": {"y": 2}},
    }
    with pytest.raises(TypeError):
        Row(1, 2).as_dict()


def test_row_kind():
    row = Row(1)
    assert row.get_row_kind() is RowKind.INSERT
    row.set_row_kind(RowKind.DELETE)
    assert row.get_row_kind() is RowKind.DELETE
    assert Row.of_kind(RowKind.UPDATE_AFTER, 1).get_row_kind() is RowKind.UPDATE_AFTER
    with pytest.raises(TypeError):
        row.set_row_kind("-D")


def test_row_kind_short_strings_and_values():
    assert [(k.name, k.value, k.short_string()) for k in RowKind] == [
        ("INSERT", 0, "+I"),
        ("UPDATE_BEFORE", 1, "-U"),
        ("UPDATE_AFTER", 2, "+U"),
        ("DELETE", 3, "-D"),
    ]


def test_retract_and_accumulate_messages():
    assert Row.of_kind(RowKind.DELETE, 1)._is_retract_msg()
    assert Row.of_kind(RowKind.UPDATE_BEFORE, 1)._is_retract_msg()
    assert Row(1)._is_accumulate_msg()
    assert not Row(1)._is_retract_msg()


def test_equality_covers_values_kind_and_names():
    assert Row(1, "a") == Row(1, "a")
    assert Row(1, "a") != Row("a", 1)
    assert Row(1) != Row.of_kind(RowKind.DELETE, 1)
    assert Row(a=1) != Row(b=1)
    assert Row(a=1) != Row(1)
    assert Row(1, 2) != (1, 2)


def test_hash_agrees_with_equality_and_includes_kind():
    assert hash(Row(1, "a")) == hash(Row(1, "a"))
    assert len({Row(1, "a"), Row(1, "a"), Row.of_kind(RowKind.DELETE, 1, "a")}) == 2
    counts = {Row(name="k"): 1}
    assert counts[Row(name="k")] == 1


def test_hash_of_int_row_is_the_same_in_every_process():
    # ints and the kind's int value hash without per-process salt, so key grouping can rely on it
    assert hash(Row(1, 2)) == hash(((1, 2), 0))


def test_pickle_and_copy_keep_names_and_kind():
    row = Row.of_kind(RowKind.UPDATE_BEFORE, name="a", nested=Row(1, [2]))
    for restored in (pickle.loads(pickle.dumps(row)), copy.copy(row), copy.deepcopy(row)):
        assert restored == row
        assert restored.get_row_kind() is RowKind.UPDATE_BEFORE
        assert restored.nested[1] == [2]
    deep = copy.deepcopy(row)
    deep.nested[1].append(3)
    assert row.nested[1] == [2]
    assert not hasattr(pickle.loads(pickle.dumps(Row(1))), "_fields")


values = st.one_of(st.none(), st.integers(), st.text(max_size=5), st.booleans())


@settings(max_examples=50)
@given(st.lists(values, max_size=6), st.sampled_from(list(RowKind)))
def test_positional_rows_roundtrip_through_pickle(items, kind):
    row = Row.of_kind(kind, *items)
    restored = pickle.loads(pickle.dumps(row))
    assert restored == row
    assert hash(restored) == hash(row)
    assert list(restored) == items


@settings(max_examples=50)
@given(st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), values, min_size=1, max_size=6))
def test_named_rows_keep_order_and_roundtrip(fields):
    row = Row(**fields)
    assert row._fields == list(fields)
    assert row.as_dict() == fields
    assert pickle.loads(pickle.dumps(row)) == row
