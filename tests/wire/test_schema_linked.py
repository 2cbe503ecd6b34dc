"""The linked types of the schema machinery (:mod:`conformance.wire.schema_linked`) on a
synthetic little-endian message shaped like Iggy's SEND_MESSAGES: a sized inline head
holding the count, a derived index of cumulative ends, then records whose lengths sit in
a fixed header far from the bytes they count (``SizedBy``), one of them shown as entries.
Both ways, annotated (strict and tolerant), drawn by the strategies and built by the
layers (layer bytes == codec bytes, dissected back the same)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from scapy.packet import Packet

from conformance.errors import ProtocolError
from conformance.wire.encoding import Encoding
from conformance.wire.schema import (
    STRING,
    UINT8,
    UINT16,
    UINT32,
    Bytes,
    Repeated,
    Sized,
    String,
    f,
    message,
    struct_of,
)
from conformance.wire.schema_layers import layer, packet
from conformance.wire.schema_linked import CountedBy, Derived, SizedBy
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
TAGS = struct_of("Tags", f("entries", Repeated(struct_of("Tag", f("key", STRING)))))
RECORD = struct_of(
    "Record",
    f("flags", UINT8),
    f("note_len", UINT16),
    f("body_len", UINT32),
    f("body", SizedBy("body_len")),
    f("note", SizedBy("note_len", String(), shows=TAGS)),
)
ENTRY = struct_of("End", f("end", UINT32))


def ends(sizes: list[int]) -> list[dict[str, Any]]:
    return [{"end": e} for e in itertools.accumulate(sizes)]


MSG = message(
    "Batch",
    "0",
    "none",
    [
        f(
            "head",
            Sized(struct_of("Head", f("topic", STRING), f("count", UINT8)), "u16"),
            inline=True,
        ),
        f("index", Derived(CountedBy("count", ENTRY), "records", ends)),
        f("records", CountedBy("count", RECORD)),
    ],
    encoding=LE,
)
VALUE = {
    "topic": "t",
    "records": [
        {"flags": 1, "body": b"abc", "note": "\x01k"},
        {"flags": 2, "body": b"", "note": ""},
    ],
}
WIRE = bytes.fromhex(
    "0300 01 74 02"  # head size 3: topic "t", count 2
    "0c000000 13000000"  # index: ends 12, 12 + 7
    "01 0200 03000000 616263 016b"  # flags 1, note_len 2, body_len 3, body, note
    "02 0000 00000000"  # flags 2, both empty
)


def test_both_ways() -> None:
    assert MSG.encode(VALUE, 0) == WIRE
    assert MSG.decode(WIRE, 0) == VALUE  # no lengths, count or index in the value
    first = {**VALUE["records"][0], "body_len": 7, "note_len": 0}
    lying = {**VALUE, "count": 9, "index": [], "records": [first, VALUE["records"][1]]}
    assert MSG.encode(lying, 0) == WIRE  # computed: the values given are ignored


def test_the_derived_field_and_the_lengths_are_checked() -> None:
    bad_index = WIRE[:5] + (13).to_bytes(4, "little") + WIRE[9:]
    with pytest.raises(ProtocolError, match=r"index is \[\{'end': 13\}.*expected"):
        MSG.decode(bad_index, 0)
    with pytest.raises(ProtocolError):
        MSG.decode(WIRE[:-1], 0)  # the last record cut short
    long_body = bytearray(WIRE)
    long_body[16] = 200  # records[0].body_len runs past the data
    with pytest.raises(ProtocolError):
        MSG.decode(bytes(long_body), 0)
    with pytest.raises(ProtocolError, match="not valid UTF-8"):
        MSG.decode(WIRE[:24] + b"\xff" + WIRE[25:], 0)


def test_annotated_with_lengths_counting_their_bytes() -> None:
    spans = {s.name: s for s in MSG.annotate(WIRE, 0)}
    assert list(spans)[:6] == [
        "head size",
        "topic length",
        "topic",
        "records count",
        "index[0].end",
        "index[1].end",
    ]
    assert spans["records count"].items == ((13, 25), (25, 32))
    assert spans["records[0].body length"].counts == (20, 23)
    assert spans["records[0].body length"].order == "little"
    assert spans["records[0].note length"].counts == (23, 25)
    assert spans["records[0].note.entries[0].key"].value == "k"  # shown as entries
    assert spans["records[1].note"].value == ""
    assert (spans["records[0].body"].start, spans["records[0].body"].end) == (20, 23)
    assert set(spans) >= {"records[0].flags", "records[1].body length"}


def test_a_tolerant_walk_follows_a_cut_message() -> None:
    cut = WIRE[:22]  # inside records[0].body
    spans = MSG.annotate(cut, 0, tolerant=True)
    names = [s.name for s in spans]
    assert names[-2:] == ["records[0].body length", "records[0].body"]
    assert spans[-1].end == 22 and spans[-2].counts == (20, 22)
    assert MSG.annotate(WIRE[:-1], 0, tolerant=True)[-1].name.startswith("records[1]")


@settings(max_examples=60, deadline=None)
@given(values(MSG, 0))
def test_drawn_values_go_both_ways_and_their_layers_build_the_same_bytes(value: Any) -> None:
    assert set(value) == {"topic", "records"}
    assert all(set(r) == {"flags", "body", "note"} for r in value["records"])
    wire = MSG.encode(value, 0)
    assert MSG.decode(wire, 0) == value
    assert bytes(packet(MSG, 0, value)) == wire
    assert bytes(layer(MSG, 0)(wire)) == wire


def test_the_layer_computes_lengths_count_size_and_index() -> None:
    pkt: Packet = packet(MSG, 0, VALUE)
    assert bytes(pkt) == WIRE
    names = [fl.name for fl in pkt.fields_desc]
    assert names == ["head_size", "topic_len", "topic", "count", "index", "records"]
    pkt.records = pkt.records[:1]  # dropping a record: count, index and head stay true
    assert MSG.decode(bytes(pkt), 0) == {**VALUE, "records": VALUE["records"][:1]}
    pkt.records[0].body = b"abcdef"
    assert MSG.decode(bytes(pkt), 0)["records"][0]["body"] == b"abcdef"
    pkt.records[0].body_len = 1  # set: it lies
    with pytest.raises(ProtocolError):
        MSG.decode(bytes(pkt), 0)
    dissected = layer(MSG, 0)(WIRE)
    assert [r.body for r in dissected.records] == [b"abc", b""]
    assert dissected.count == 2 and [e.end for e in dissected.index] == [12, 19]


def test_a_link_must_name_an_earlier_field() -> None:
    with pytest.raises(ValueError, match="no earlier field"):
        struct_of("Bad", f("body", SizedBy("n")), f("n", UINT8))
    with pytest.raises(ValueError, match="no earlier field"):
        struct_of("Bad", f("items", CountedBy("n", UINT8)))
    assert Bytes  # the kinds a SizedBy takes: String or Bytes
