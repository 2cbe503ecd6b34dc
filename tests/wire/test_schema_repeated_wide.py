"""The generic types Iggy brought into the schema machinery, on a synthetic little-endian
message: :class:`Repeated` (items to the end of the data, no count) and :class:`Wide`
(``uint128``): both ways, annotated, drawn by the strategies and built by the layers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from conformance.errors import ProtocolError
from conformance.wire.encoding import Encoding
from conformance.wire.schema import (
    INT128,
    UINT8,
    UINT128,
    Repeated,
    String,
    f,
    message,
    struct_of,
)
from conformance.wire.schema_layers import layer, packet
from conformance.wire.schema_strategies import values

LE = Encoding(
    name="le",
    byte_order="little",
    string_length="u8",
    bytes_length="u32",
    array_count="u32",
    null_length=None,
    flexible=False,
)
ITEM = struct_of("Item", f("id", UINT128), f("tag", String(prefix="u8")))
MSG = message(
    "Rest",
    "0",
    "none",
    [f("kind", UINT8), f("delta", INT128), f("items", Repeated(ITEM))],
    encoding=LE,
)
VALUE = {"kind": 1, "delta": -2, "items": [{"id": 2**100 + 1, "tag": "a"}, {"id": 0, "tag": ""}]}
WIRE = bytes.fromhex(
    "01"
    "feffffffffffffffffffffffffffffff"  # int128 -2, little-endian
    "01000000000000000000000010000000 01 61"  # uint128 2**100 + 1, "a"
    "00000000000000000000000000000000 00"  # 0, ""
)


def test_both_ways_and_annotated() -> None:
    assert MSG.encode(VALUE, 0) == WIRE
    assert MSG.decode(WIRE, 0) == VALUE
    names = [s.name for s in MSG.annotate(WIRE, 0)]
    assert names[:4] == ["kind", "delta", "items[0].id", "items[0].tag length"]
    assert MSG.decode(WIRE[:17], 0)["items"] == []  # no items: the data ends
    with pytest.raises(ProtocolError):
        MSG.decode(WIRE[:-1], 0)  # an item cut short
    with pytest.raises(ValueError, match="uint128"):
        MSG.encode({"items": [{"id": 2**128}]}, 0)


def test_the_layer_builds_and_dissects() -> None:
    assert bytes(packet(MSG, 0, VALUE)) == WIRE
    got = layer(MSG, 0)(WIRE)
    assert got.delta == -2 and [i.id for i in got.items] == [2**100 + 1, 0]
    assert bytes(got) == WIRE


@settings(max_examples=50, deadline=None)
@given(values(MSG, 0))
def test_drawn_values_round_trip_through_codec_and_layer(value: dict[str, object]) -> None:
    wire = MSG.encode(value, 0)
    assert MSG.decode(wire, 0) == value
    assert bytes(packet(MSG, 0, value)) == wire
