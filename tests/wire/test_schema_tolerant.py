"""The schema's tolerant annotation (``Message.annotate(..., tolerant=True)``), on made-up
declarations: a big-endian protocol with signed prefixes and no null (so a negative
length or count is malformed), and a Kafka-encoded one with null and flexible versions.

The walk never raises; on a well-formed message it is the strict annotation; cut short at
every byte it keeps every field that ends before the cut and cuts only the one the cut
falls in; a length or count is recorded as soon as its prefix is read, and a negative or
overlong one makes the rest of the data that field's and stops the walk.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.fuzz.shrink import shrinks
from conformance.plugin import FieldSpan
from conformance.protocols.kafka.messages import KAFKA
from conformance.wire.encoding import Encoding
from conformance.wire.schema import (
    BYTES,
    INT16,
    INT32,
    STRING,
    UINT8,
    UINT16,
    Message,
    Sized,
    Union,
    array_of,
    f,
    message,
)
from conformance.wire.schema_strategies import values

PROBE = Encoding(
    name="probe",
    byte_order="big",
    string_length="i16",
    bytes_length="i32",
    array_count="i32",
    null_length=None,
)
SHAPE = Union("Shape", UINT8, {1: Sized(INT32, "i8"), 2: STRING})
REPORT = message(
    "Report",
    "0",
    "none",
    [
        f("id", UINT16),
        f("shape", SHAPE),
        f("title", STRING),
        f("readings", array_of(INT16)),
        f("notes", array_of("Note", f("at", INT32), f("text", STRING), f("blob", BYTES))),
        f("end", UINT8),
    ],
    encoding=PROBE,
)
WIRE = bytes.fromhex(
    "0007"  # id 7
    "01 04 0000002a"  # shape: kind 1, size 4, 42
    "0002 6869"  # title: "hi"
    "00000002 0001 fffe"  # readings: count 2, 1 and -2
    "00000002"  # notes: count 2
    "00000005 0001 61 00000002 0102"  # notes[0]: at 5, text "a", blob 01 02
    "00000006 0000 00000000"  # notes[1]: at 6, text "", blob empty
    "ff"  # end
)
TITLE_AT, READINGS_AT, NOTES_AT, END_AT = 8, 12, 20, 47

FLEX = message(
    "Flex",
    "0-1",
    "1+",
    [
        f("name", STRING, nullable="0+"),
        f("items", array_of("Item", f("n", INT32), f("label", STRING)), nullable="0+"),
        f("note", STRING, "1+", tag=0, tagged="1+"),
    ],
    encoding=KAFKA,
)
FEW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def walk(data: bytes, declared: Message = REPORT, version: int = 0) -> list[FieldSpan]:
    return declared.annotate(data, version, tolerant=True)


def by_name(spans: list[FieldSpan]) -> dict[str, FieldSpan]:
    return {s.name: s for s in spans}


def key(s: FieldSpan) -> tuple[str, int, int]:
    return (s.name, s.start, s.end)


def patched(at: int, raw: str, data: bytes = WIRE) -> bytes:
    new = bytes.fromhex(raw)
    return data[:at] + new + data[at + len(new) :]


def test_the_hand_written_frame_is_a_report() -> None:
    assert REPORT.decode(WIRE, 0)["notes"][0] == {"at": 5, "text": "a", "blob": b"\x01\x02"}
    assert REPORT.decode(WIRE, 0)["end"] == 255


def test_on_a_well_formed_message_the_walk_is_the_strict_annotation() -> None:
    assert walk(WIRE) == REPORT.annotate(WIRE, 0)
    spans = by_name(walk(WIRE))
    assert spans["notes count"].items == ((24, 37), (37, 47))
    assert spans["title length"].counts == (10, 12)
    assert spans["end"].start == END_AT


@FEW
@given(data=st.data())
def test_on_drawn_messages_the_walk_is_the_strict_annotation(data: st.DataObject) -> None:
    declared, version = data.draw(st.sampled_from([(REPORT, 0), (FLEX, 0), (FLEX, 1)]))
    wire = declared.encode(data.draw(values(declared, version)), version)
    assert walk(wire, declared, version) == declared.annotate(wire, version)


def test_cut_short_at_every_byte_it_keeps_what_ends_before_the_cut() -> None:
    whole = walk(WIRE)
    for cut in range(len(WIRE) + 1):
        spans = walk(WIRE[:cut])  # never raises
        assert all(0 <= s.start <= s.end <= cut for s in spans), cut
        before = {key(s) for s in whole if s.end <= cut}
        assert before <= {key(s) for s in spans}, cut
        for s in spans:  # a field of the whole message, or the one the cut falls in
            assert key(s) in before or s.end == cut, (cut, s)
            if s.counts is not None:
                assert s.counts[1] <= cut


def test_a_length_is_recorded_before_its_bytes() -> None:
    cut = WIRE[: TITLE_AT + 3]  # the title's length and one of its two bytes
    spans = by_name(walk(cut))
    assert spans["title length"] == FieldSpan(
        "title length", 8, 10, 2, counts=(10, 11), signed=True
    )
    assert spans["title"] == FieldSpan("title", 10, 11, b"h")
    assert "title length" not in by_name(REPORT.annotate(cut, 0))  # the strict one stops before


def test_a_negative_length_makes_the_rest_of_the_data_that_field_s() -> None:
    data = patched(TITLE_AT, "fffd")  # title length -3
    spans = walk(data)
    assert spans[-2:] == [
        FieldSpan("title length", 8, 10, -3, counts=None, signed=True),
        FieldSpan("title", 10, len(data), data[10:]),
    ]
    inner = walk(patched(31, "ffffffff"))  # notes[0].blob length -1 (no null here)
    named = by_name(inner)
    assert named["notes[0].blob"] == FieldSpan("notes[0].blob", 35, len(WIRE), WIRE[35:])
    assert named["notes count"].items == ((24, len(WIRE)),)  # the note, as far as it went
    assert "notes[1].at" not in named and "end" not in named


def test_a_negative_count_makes_the_rest_of_the_data_the_array_s() -> None:
    data = patched(READINGS_AT, "ffffffff")
    named = by_name(walk(data))
    assert named["readings count"] == FieldSpan("readings count", 12, 16, -1, items=(), signed=True)
    assert named["readings"] == FieldSpan("readings", 16, len(data), data[16:])
    assert max(s.end for s in named.values()) == len(data) and "notes count" not in named


def test_an_overlong_length_makes_the_rest_of_the_data_that_field_s() -> None:
    data = patched(TITLE_AT, "03e8")  # title length 1000
    spans = walk(data)
    assert spans[-2:] == [
        FieldSpan("title length", 8, 10, 1000, counts=(10, len(data)), signed=True),
        FieldSpan("title", 10, len(data), data[10:]),  # the rest is raw bytes
    ]
    sized = by_name(walk(patched(3, "7f")))  # shape's size 127
    assert sized["shape.value size"].counts == (4, len(WIRE))
    assert sized["shape.value"].end == len(WIRE) and "title" not in sized


def test_an_overlong_count_is_followed_as_far_as_the_data_goes() -> None:
    data = patched(NOTES_AT, "00000005")  # five notes claimed, two there, then one byte
    named = by_name(walk(data))
    assert named["notes count"].value == 5
    assert named["notes count"].items == ((24, 37), (37, 47))
    assert "notes[2].at" not in named and "end" not in named  # the byte left is too short
    # readings counted past the data: every pair of bytes after the count read as one
    many = by_name(walk(patched(READINGS_AT, "000003e8")))
    count = many["readings count"]
    assert count.value == 1000 and len(count.items) == (len(WIRE) - 16) // 2
    assert "notes count" not in many
    # the minimizer can still drop an item of an overlong count (the count rewritten)
    assert any(len(v) == len(data) - 13 for v in shrinks(data, walk(data)))


def test_a_length_or_count_keeps_the_byte_order_and_sign_the_minimizer_writes() -> None:
    little = replace(REPORT, encoding=replace(PROBE, name="probe-le", byte_order="little"))
    wire = little.encode(REPORT.decode(WIRE, 0), 0)
    named = by_name(walk(wire[:30], little))  # cut inside notes[0]
    count = named["notes count"]
    assert (count.order, count.signed, count.encode(1)) == ("little", True, b"\x01\0\0\0")
    assert count.items == ((24, 30),)
    assert named["title length"].encode(0) == b"\0\0"


def test_a_kind_no_variant_has_makes_the_rest_of_the_data_the_union_s_value() -> None:
    data = patched(2, "09")
    assert walk(data)[-2:] == [
        FieldSpan("shape.kind", 2, 3, 9),
        FieldSpan("shape.value", 3, len(data), data[3:]),
    ]


def test_a_fault_inside_a_sized_value_stops_only_that_value() -> None:
    data = WIRE[:3] + b"\x05" + WIRE[4:8] + b"\x00" + WIRE[8:]  # a byte left over in it
    named = by_name(walk(data))
    assert named["shape.value"] == FieldSpan("shape.value", 4, 8, 42)
    assert named["shape.value size"].counts == (4, 9)
    assert named["title"].value == "hi" and named["end"].value == 255


def test_text_that_is_not_utf8_is_shown_and_the_walk_goes_on() -> None:
    named = by_name(walk(patched(TITLE_AT + 2, "ff69")))
    assert named["title"].value == "\ufffdi" and named["end"].value == 255
    assert "title" not in by_name(REPORT.annotate(patched(TITLE_AT + 2, "ff69"), 0))


def test_a_null_length_is_null_not_negative() -> None:
    wire = FLEX.encode({"name": None, "items": None}, 0)
    assert wire == bytes.fromhex("ffff ffffffff")
    assert walk(wire, FLEX) == FLEX.annotate(wire, 0) == [FieldSpan("name", 0, 2, None)]


@FEW
@given(st.sampled_from([(REPORT, 0), (FLEX, 0), (FLEX, 1)]), st.binary(max_size=120))
def test_the_walk_never_raises_and_stays_in_the_data(
    declared: tuple[Message, int], data: bytes
) -> None:
    spans = walk(data, *declared)
    for s in spans:
        assert 0 <= s.start <= s.end <= len(data)
        assert s.counts is None or s.end <= s.counts[0] <= s.counts[1] <= len(data)
        assert all(s.end <= a <= b <= len(data) for a, b in s.items)


@FEW
@given(st.binary(max_size=60))
def test_a_valid_message_with_garbage_after_it_walks_the_same(tail: bytes) -> None:
    assert walk(WIRE + tail) == walk(WIRE)
