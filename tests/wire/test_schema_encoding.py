"""One declaration machinery for every binary protocol: a made-up little-endian protocol
declared with :mod:`conformance.wire.schema` and its own
:class:`~conformance.wire.encoding.Encoding` (u8 string lengths, u16 array counts, u32
bytes lengths, no null, no flexible versions) gets its codec, annotations, Hypothesis
values and scapy layers from the declaration alone, as Kafka's messages do.  Its
identifier is a tagged union shaped like Apache Iggy's: a kind byte (1 numeric, 2
string), a u8 length, then a u32 or the string's bytes.

A hand-written frame is checked both ways, whole, cut short at every byte and with a
trailing byte; the derived strategies, layers (built, dissected, lied to and fuzzed) and
annotations are checked against it and against the codec.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.packet import NoPayload, Packet, fuzz

from conformance.errors import ProtocolError, TrailingBytes
from conformance.plugin import FieldSpan
from conformance.protocols.kafka.messages import KAFKA
from conformance.wire.encoding import Encoding
from conformance.wire.schema import (
    BYTES,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT8,
    UINT16,
    UINT32,
    Bytes,
    Sized,
    Union,
    array_of,
    f,
    message,
)
from conformance.wire.schema_layers import layer, packet
from conformance.wire.schema_strategies import values

TOY = Encoding(
    name="toy",
    byte_order="little",
    string_length="u8",
    bytes_length="u32",
    array_count="u16",
    null_length=None,
    flexible=False,
)
IDENTIFIER = Union("Identifier", UINT8, {1: Sized(UINT32, "u8"), 2: STRING})
"""Iggy's identifier: kind 1 is a u32 behind a u8 size (always 4), kind 2 a string."""

CREATE_THING = message(
    "CreateThing",
    "0-1",
    "none",
    [
        f("stream", IDENTIFIER),
        f("name", STRING),
        f("ports", array_of(UINT16)),
        f("points", array_of("Point", f("x", INT16), f("y", INT16))),
        f("payload", BYTES),
        f("blob", Bytes(prefix="uvarint")),
        f("offset", INT64, "1+"),
    ],
    encoding=TOY,
)

VALUE: dict[str, Any] = {
    "stream": {"kind": 1, "value": 7},
    "name": "ab",
    "ports": [80, 443],
    "points": [{"x": -1, "y": 2}],
    "payload": b"\x00\xff",
    "blob": b"z",
    "offset": 5,
}
WIRE = bytes.fromhex(
    "01"  # stream.kind: numeric
    "04 07000000"  # stream.value: size 4, then 7 as a u32 LE
    "02 6162"  # name: u8 length, "ab"
    "0200 5000 bb01"  # ports: u16 count 2, then 80 and 443 as u16 LE
    "0100 ffff 0200"  # points: count 1, x -1, y 2 (int16 LE)
    "02000000 00ff"  # payload: u32 length 2
    "01 7a"  # blob: uvarint length 1, "z"
    "0500000000000000"  # offset: 5 as int64 LE
)
BY_NAME = {"stream": {"kind": 2, "value": "s1"}}
BY_NAME_WIRE = bytes.fromhex("02 02 7331")  # kind 2, u8 length 2, "s1"
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------- the codec


def test_the_hand_written_frame_both_ways() -> None:
    assert CREATE_THING.encode(VALUE, 1) == WIRE
    assert CREATE_THING.decode(WIRE, 1) == VALUE
    v0 = {k: v for k, v in VALUE.items() if k != "offset"}
    assert CREATE_THING.encode(v0, 0) == WIRE[:-8]
    assert CREATE_THING.decode(WIRE[:-8], 0) == v0


def test_the_union_selects_its_variant_by_kind() -> None:
    wire = CREATE_THING.encode(BY_NAME, 0)
    assert wire.startswith(BY_NAME_WIRE)
    assert CREATE_THING.decode(wire, 0)["stream"] == {"kind": 2, "value": "s1"}
    with pytest.raises(ProtocolError, match=r"stream: kind 3 is none of 1, 2"):
        CREATE_THING.decode(b"\x03" + wire[1:], 0)
    with pytest.raises(ValueError, match="no kind 3"):
        CREATE_THING.encode({"stream": {"kind": 3, "value": 1}}, 0)


def test_a_sized_value_must_fill_its_size() -> None:
    with pytest.raises(TrailingBytes, match=r"stream\.value: 1 bytes left"):
        CREATE_THING.decode(b"\x01\x05" + WIRE[2:6] + b"\x00" + WIRE[6:], 1)
    with pytest.raises(ProtocolError):
        CREATE_THING.decode(b"\x01\x03" + WIRE[2:5] + WIRE[6:], 1)


def test_cut_short_anywhere_or_followed_by_garbage_is_a_protocol_error() -> None:
    for end in range(len(WIRE)):
        with pytest.raises(ProtocolError):
            CREATE_THING.decode(WIRE[:end], 1)
    with pytest.raises(TrailingBytes):
        CREATE_THING.decode(WIRE + b"\x00", 1)
    assert CREATE_THING.decode(WIRE + b"\x00", 1, whole=False) == VALUE


def test_fixed_width_numbers_follow_the_byte_order() -> None:
    body = [f("n", INT32), f("s", STRING)]
    little = message("N", "0", "none", body, encoding=TOY)
    big = message("N", "0", "none", body, encoding=KAFKA)
    assert little.encode({"n": 1, "s": "x"}, 0) == b"\x01\x00\x00\x00" + b"\x01x"
    assert big.encode({"n": 1, "s": "x"}, 0) == b"\x00\x00\x00\x01" + b"\x00\x01x"


def test_what_the_encoding_cannot_write_is_refused() -> None:
    with pytest.raises(ValueError, match="toy has no null"):
        message("N", "0", "none", [f("s", STRING, nullable="0+")], encoding=TOY)
    with pytest.raises(ValueError, match="toy has no flexible versions"):
        message("N", "0-1", "1+", [f("s", STRING)], encoding=TOY)
    with pytest.raises(ValueError, match="does not fit u8"):
        CREATE_THING.encode({"name": "x" * 256}, 0)
    with pytest.raises(ValueError, match="null -1 does not fit u16"):
        Encoding("bad", "big", "i16", "i32", array_count="u16", null_length=-1)


# ---------------------------------------------------------------- annotations


def test_annotations_name_every_field_with_its_byte_span() -> None:
    spans = {s.name: s for s in CREATE_THING.annotate(WIRE, 1)}
    assert {name: (s.start, s.end, s.value) for name, s in spans.items()} == {
        "stream.kind": (0, 1, 1),
        "stream.value size": (1, 2, 4),
        "stream.value": (2, 6, 7),
        "name length": (6, 7, 2),
        "name": (7, 9, "ab"),
        "ports count": (9, 11, 2),
        "ports[0]": (11, 13, 80),
        "ports[1]": (13, 15, 443),
        "points count": (15, 17, 1),
        "points[0].x": (17, 19, -1),
        "points[0].y": (19, 21, 2),
        "payload length": (21, 25, 2),
        "payload": (25, 27, b"\x00\xff"),
        "blob length": (27, 28, 1),
        "blob": (28, 29, b"z"),
        "offset": (29, 37, 5),
    }
    count = spans["ports count"]
    assert count.items == ((11, 13), (13, 15)) and count.order == "little"
    assert count.encode(1) == b"\x01\x00"  # what the minimizer writes to drop an item
    assert spans["payload length"].counts == (25, 27)
    assert spans["stream.value size"].counts == (2, 6)
    assert spans["blob length"].counts is None  # a varint cannot be rewritten in place


def test_annotating_a_broken_frame_keeps_what_was_read() -> None:
    names = [s.name for s in CREATE_THING.annotate(b"\x02\x02s1\x09ab", 1)]  # name cut short
    assert names == ["stream.kind", "stream.value length", "stream.value"]
    by_name = CREATE_THING.annotate(BY_NAME_WIRE + WIRE[6:], 1)
    assert FieldSpan("stream.value", 2, 4, "s1") in by_name


# ----------------------------------------------------------------- strategies


@FEW
@given(data=st.data())
def test_drawn_values_round_trip_through_the_codec_and_the_layers(data: st.DataObject) -> None:
    version = data.draw(st.sampled_from([0, 1]))
    value = data.draw(values(CREATE_THING, version))
    wire = CREATE_THING.encode(value, version)
    assert CREATE_THING.decode(wire, version) == value
    assert bytes(packet(CREATE_THING, version, value)) == wire
    dissected = layer(CREATE_THING, version)(wire)
    assert isinstance(dissected.payload, NoPayload)
    assert bytes(dissected) == wire


def test_strategies_draw_every_kind_of_the_union() -> None:
    kinds: set[int] = set()

    @settings(max_examples=40, deadline=None, database=None)
    @given(values(CREATE_THING, 0))
    def draw(value: dict[str, Any]) -> None:
        kinds.add(value["stream"]["kind"])
        assert isinstance(value["stream"]["value"], int if value["stream"]["kind"] == 1 else str)

    draw()
    assert kinds == {1, 2}


# --------------------------------------------------------------------- layers


def test_the_layer_builds_and_dissects_the_hand_written_frame() -> None:
    assert bytes(packet(CREATE_THING, 1, VALUE)) == WIRE
    pkt = layer(CREATE_THING, 1)(WIRE)
    assert [fl.name for fl in pkt.fields_desc] == [
        "stream_kind",
        "stream",
        "name_len",
        "name_",
        "ports_count",
        "ports",
        "points_count",
        "points",
        "payload_len",
        "payload_",
        "blob_len",
        "blob",
        "offset",
    ]
    assert pkt.stream_kind == 1 and pkt.stream.value_size == 4 and pkt.stream.value == 7
    assert pkt.name_len == 2 and pkt.name_ == b"ab"
    assert pkt.ports_count == 2 and [p.value for p in pkt.ports] == [80, 443]
    assert (pkt.points[0].x, pkt.points[0].y) == (-1, 2)
    assert pkt.payload_ == b"\x00\xff" and pkt.blob == b"z" and pkt.offset == 5
    named = layer(CREATE_THING, 0)(CREATE_THING.encode(BY_NAME, 0))
    assert named.stream_kind == 2 and named.stream.value_len == 2 and named.stream.value == b"s1"
    assert bytes(packet(CREATE_THING, 0, BY_NAME)).startswith(BY_NAME_WIRE)


def test_lengths_computed_unless_set_and_then_written_as_they_lie() -> None:
    pkt: Packet = packet(CREATE_THING, 1, VALUE)
    pkt.ports_count = 5
    pkt.stream.value_size = 9
    pkt.name_len = 200
    lied = bytes(pkt)
    assert lied == WIRE[:1] + b"\x09" + WIRE[2:6] + b"\xc8" + WIRE[7:9] + b"\x05\x00" + WIRE[11:]


def test_the_kind_follows_the_variant_unless_set() -> None:
    named = layer(CREATE_THING, 0)(CREATE_THING.encode(BY_NAME, 0)).stream
    pkt = packet(CREATE_THING, 1, VALUE)
    assert pkt.stream_kind is None  # computed, like a length
    pkt.stream = named
    assert bytes(pkt) == BY_NAME_WIRE + WIRE[6:]
    pkt.stream_kind = 1  # a lie: the string's bytes stay
    assert bytes(pkt) == b"\x01" + BY_NAME_WIRE[1:] + WIRE[6:]


def test_fuzzed_layers_keep_the_framing() -> None:
    state = random.getstate()
    try:
        for seed in range(30):
            random.seed(seed)
            data = bytes(fuzz(layer(CREATE_THING, 1)()))
            try:
                CREATE_THING.decode(data, 1)
            except ProtocolError as exc:  # a value refused, never the framing
                assert "not valid UTF-8" in str(exc), exc
            assert bytes(layer(CREATE_THING, 1)(data)) == data
    finally:
        random.setstate(state)
