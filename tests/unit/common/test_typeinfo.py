import pickle

import pytest

from fluvial.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    InstantTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PickledBytesTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TupleTypeInfo,
    TypeInformation,
    Types,
)

BASIC_FACTORIES = {
    "STRING": "String",
    "BYTE": "Byte",
    "BOOLEAN": "Boolean",
    "SHORT": "Short",
    "INT": "Integer",
    "LONG": "Long",
    "FLOAT": "Float",
    "DOUBLE": "Double",
    "CHAR": "Char",
    "BIG_INT": "BigInteger",
    "BIG_DEC": "BigDecimal",
    "INSTANT": "Instant",
}


def all_types():
    return [
        *(getattr(Types, name)() for name in BASIC_FACTORIES),
        Types.SQL_DATE(),
        Types.SQL_TIME(),
        Types.SQL_TIMESTAMP(),
        Types.PICKLED_BYTE_ARRAY(),
        Types.ROW([Types.STRING(), Types.INT()]),
        Types.ROW_NAMED(["a", "b"], [Types.STRING(), Types.INT()]),
        Types.TUPLE([Types.STRING(), Types.LONG()]),
        Types.PRIMITIVE_ARRAY(Types.INT()),
        Types.BASIC_ARRAY(Types.STRING()),
        Types.OBJECT_ARRAY(Types.ROW([Types.INT()])),
        Types.LIST(Types.DOUBLE()),
        Types.MAP(Types.STRING(), Types.LIST(Types.INT())),
    ]


@pytest.mark.parametrize("name,shown", sorted(BASIC_FACTORIES.items()))
def test_basic_types_show_flink_names(name, shown):
    type_info = getattr(Types, name)()
    assert isinstance(type_info, BasicTypeInfo)
    assert repr(type_info) == shown
    assert str(type_info) == shown


def test_basic_types_compare_by_kind():
    assert Types.STRING() == Types.STRING()
    assert hash(Types.INT()) == hash(Types.INT())
    assert Types.INT() != Types.LONG()
    assert Types.STRING() != "String"
    assert BasicTypeInfo.STRING_TYPE_INFO() == BasicTypeInfo(BasicType.STRING)
    assert isinstance(Types.INSTANT(), InstantTypeInfo)


def test_time_and_pickled_types():
    assert isinstance(Types.SQL_DATE(), DateTypeInfo)
    assert isinstance(Types.SQL_TIME(), TimeTypeInfo)
    assert isinstance(Types.SQL_TIMESTAMP(), TimestampTypeInfo)
    assert repr(Types.SQL_DATE()) == "DateTypeInfo"
    assert repr(Types.SQL_TIMESTAMP()) == "TimestampTypeInfo"
    assert Types.SQL_DATE() != Types.SQL_TIME()
    assert isinstance(Types.PICKLED_BYTE_ARRAY(), PickledBytesTypeInfo)
    assert repr(Types.PICKLED_BYTE_ARRAY()) == "PickledByteArrayTypeInfo"
    assert Types.PICKLED_BYTE_ARRAY() == Types.PICKLED_BYTE_ARRAY()


def test_row_named_accessors_and_repr():
    row = Types.ROW_NAMED(["name", "count"], [Types.STRING(), Types.INT()])
    assert isinstance(row, RowTypeInfo)
    assert row.get_field_names() == ["name", "count"]
    assert row.get_field_types() == [Types.STRING(), Types.INT()]
    assert row.get_field_index("count") == 1
    assert row.get_field_index("missing") == -1
    assert row.get_arity() == 2
    assert repr(row) == "RowTypeInfo(name: String, count: Integer)"


def test_row_without_names_gets_flink_default_names():
    row = Types.ROW([Types.STRING(), Types.INT(), Types.BOOLEAN()])
    assert row.get_field_names() == ["f0", "f1", "f2"]
    assert row.get_field_index("f2") == 2
    assert repr(row) == "RowTypeInfo(String, Integer, Boolean)"


def test_row_accessors_return_copies():
    row = Types.ROW_NAMED(["a"], [Types.INT()])
    row.get_field_names().append("b")
    row.get_field_types().append(Types.STRING())
    assert row.get_arity() == 1
    assert row.get_field_names() == ["a"]


def test_row_equality_covers_types_and_names():
    a = Types.ROW_NAMED(["a", "b"], [Types.STRING(), Types.INT()])
    assert a == Types.ROW_NAMED(["a", "b"], [Types.STRING(), Types.INT()])
    assert hash(a) == hash(Types.ROW_NAMED(["a", "b"], [Types.STRING(), Types.INT()]))
    assert a != Types.ROW_NAMED(["a", "c"], [Types.STRING(), Types.INT()])
    assert a != Types.ROW_NAMED(["a", "b"], [Types.STRING(), Types.LONG()])
    assert Types.ROW([Types.INT()]) == Types.ROW_NAMED(["f0"], [Types.INT()])
    assert Types.ROW([Types.INT()]) != Types.TUPLE([Types.INT()])


@pytest.mark.parametrize(
    "names,types",
    [
        (["a"], [Types.STRING(), Types.INT()]),
        (["a", "a"], [Types.STRING(), Types.INT()]),
        (["a", ""], [Types.STRING(), Types.INT()]),
    ],
)
def test_row_named_rejects_bad_names(names, types):
    with pytest.raises(ValueError):
        Types.ROW_NAMED(names, types)


def test_row_rejects_non_type_fields():
    with pytest.raises(TypeError, match="TypeInformation"):
        Types.ROW([Types.STRING(), str])


def test_tuple_type():
    t = Types.TUPLE([Types.STRING(), Types.INT()])
    assert isinstance(t, TupleTypeInfo)
    assert t.get_field_types() == [Types.STRING(), Types.INT()]
    assert t.get_arity() == 2
    assert repr(t) == "TupleTypeInfo(String, Integer)"
    assert t == Types.TUPLE([Types.STRING(), Types.INT()])
    assert t != Types.TUPLE([Types.INT(), Types.STRING()])


def test_collection_types():
    assert isinstance(Types.LIST(Types.INT()), ListTypeInfo)
    assert repr(Types.LIST(Types.INT())) == "ListTypeInfo<Integer>"
    assert Types.LIST(Types.INT()).element_type == Types.INT()
    m = Types.MAP(Types.STRING(), Types.LONG())
    assert isinstance(m, MapTypeInfo)
    assert repr(m) == "MapTypeInfo<String, Long>"
    assert (m.key_type_info, m.value_type_info) == (Types.STRING(), Types.LONG())
    assert m != Types.MAP(Types.LONG(), Types.STRING())


def test_array_types():
    assert isinstance(Types.PRIMITIVE_ARRAY(Types.INT()), PrimitiveArrayTypeInfo)
    assert isinstance(Types.BASIC_ARRAY(Types.STRING()), BasicArrayTypeInfo)
    assert isinstance(Types.OBJECT_ARRAY(Types.ROW([Types.INT()])), ObjectArrayTypeInfo)
    assert repr(Types.PRIMITIVE_ARRAY(Types.INT())) == "PrimitiveArrayTypeInfo<Integer>"
    assert repr(Types.BASIC_ARRAY(Types.STRING())) == "BasicArrayTypeInfo<String>"
    assert repr(Types.OBJECT_ARRAY(Types.STRING())) == "ObjectArrayTypeInfo<String>"
    assert Types.PRIMITIVE_ARRAY(Types.INT()) != Types.BASIC_ARRAY(Types.INT())


def test_primitive_array_rejects_strings_and_basic_array_rejects_rows():
    with pytest.raises(TypeError, match="PRIMITIVE_ARRAY"):
        Types.PRIMITIVE_ARRAY(Types.STRING())
    with pytest.raises(TypeError, match="BASIC_ARRAY"):
        Types.BASIC_ARRAY(Types.ROW([Types.INT()]))


@pytest.mark.parametrize("type_info", all_types(), ids=repr)
def test_every_type_pickles_to_an_equal_type(type_info):
    assert isinstance(type_info, TypeInformation)
    restored = pickle.loads(pickle.dumps(type_info))
    assert restored == type_info
    assert hash(restored) == hash(type_info)
    assert repr(restored) == repr(type_info)


def test_distinct_types_are_distinct():
    types = all_types()
    assert len(set(types)) == len(types)
