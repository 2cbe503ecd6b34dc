"""The mini-Kafka annotator (conformance.protocols.minikafka.annotate): every field of a
request and a reply named as the annotator's header says (``type``, ``success``, the keys of
messages.py, ``<field> length``, ``messages count``) with the span of its bytes; bytes after
a request's last field as ``trailing bytes``; a malformed payload followed by the tolerant
walk as far as its layout goes; a whole frame (conformance.annotation.annotate_frame) with
its ``length`` first and the payload's fields moved past it; and no exception on any bytes.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import protocols
from conformance.annotation import annotate_frame
from conformance.plugin import FieldSpan
from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka.annotate import annotate

Row = tuple[str, int, int, object]


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def rows(fields: list[FieldSpan]) -> list[Row]:
    return [(f.name, f.start, f.end, f.value) for f in fields]


def check_spans(fields: list[FieldSpan], size: int) -> None:
    """In the payload, in byte order, none overlapping the one before."""
    end = 0
    for span in fields:
        assert 0 <= span.start <= span.end <= size, span
        assert span.start >= end, f"{span.name} overlaps the field before it"
        end = span.end


# ----------------------------------------------------------------------- requests


def test_consume_fields() -> None:
    payload = h("01 00000002 6162 0000000000000003 00000007")
    got = annotate(payload, "request")
    assert got.summary == "CONSUME 'ab' offset=3 batch=7"
    assert rows(got.fields) == [
        ("type", 0, 1, 1),
        ("topic length", 1, 5, 2),
        ("topic", 5, 7, "ab"),
        ("offset", 7, 15, 3),
        ("batch_size", 15, 19, 7),
    ]
    assert got.fields[1].counts == (5, 7)  # the length names the bytes it counts
    check_spans(got.fields, len(payload))


def test_produce_fields() -> None:
    payload = h("03 00000002 7031 00000003 00ff61")
    got = annotate(payload, "request")
    assert got.summary == "PRODUCE 'p1' 3 bytes"
    assert rows(got.fields) == [
        ("type", 0, 1, 3),
        ("topic length", 1, 5, 2),
        ("topic", 5, 7, "p1"),
        ("data length", 7, 11, 3),
        ("data", 11, 14, b"\x00\xffa"),
    ]
    assert got.fields[3].counts == (11, 14)


def test_flush_fields() -> None:
    got = annotate(b"\x05", "request")
    assert got.summary == "FLUSH" and rows(got.fields) == [("type", 0, 1, 5)]


def test_the_real_clients_padding_is_trailing_bytes() -> None:
    """FACTS.md 2.3: the 10 zero bytes after batch_size are one span of their own."""
    payload = h("01 00000002 6162 0000000000000003 00000007") + bytes(10)
    got = annotate(payload, "request")
    assert got.summary == "CONSUME 'ab' offset=3 batch=7 + 10 trailing bytes"
    assert rows(got.fields)[-1] == ("trailing bytes", 19, 29, bytes(10))
    check_spans(got.fields, len(payload))


def test_flush_with_trailing_bytes() -> None:
    got = annotate(h("05 abcd"), "request")
    assert rows(got.fields) == [("type", 0, 1, 5), ("trailing bytes", 1, 3, h("abcd"))]


def test_a_topic_that_is_not_utf8_is_shown_as_its_bytes() -> None:
    """The summary and the span show the bytes the wire carries, not U+FFFD."""
    got = annotate(h("01 00000001 ff 0000000000000000 0000000a"), "request")
    assert got.summary == "CONSUME b'\\xff' offset=0 batch=10"
    assert ("topic", 5, 6, b"\xff") in rows(got.fields)


def test_an_unknown_type_names_the_type_and_the_body() -> None:
    got = annotate(h("99 01"), "request")
    assert got.summary == "unknown request type 0x99"
    assert rows(got.fields) == [("type", 0, 1, 0x99), ("body", 1, 2, b"\x01")]
    assert rows(annotate(h("02"), "request").fields) == [("type", 0, 1, 2)]


def test_no_type_byte() -> None:
    got = annotate(b"", "request")
    assert "no type byte" in got.summary and got.fields == []


# ----------------------------------------------------------------- malformed input


def test_a_produce_cut_short_is_followed_as_far_as_it_goes() -> None:
    payload = h("03 00000001 61 00000005 6869")
    got = annotate(payload, "request")
    assert got.summary.startswith("malformed: PRODUCE is cut short")
    assert rows(got.fields) == [
        ("type", 0, 1, 3),
        ("topic length", 1, 5, 1),
        ("topic", 5, 6, "a"),
        ("data length", 6, 10, 5),
        ("data", 10, 12, b"hi"),  # the rest of the payload: the length points past it
    ]
    check_spans(got.fields, len(payload))


def test_a_negative_length_takes_the_rest_of_the_payload() -> None:
    got = annotate(h("03 ffffffff 6162"), "request")
    assert got.summary == "malformed: PRODUCE: topic length: negative -1"
    assert rows(got.fields) == [
        ("type", 0, 1, 3),
        ("topic length", 1, 5, -1),
        ("topic", 5, 7, "ab"),
    ]


def test_a_consume_without_batch_size() -> None:
    payload = h("01 00000002 6162 0000000000000003")
    got = annotate(payload, "request")
    assert got.summary.startswith("malformed: CONSUME is cut short")
    names = [f.name for f in got.fields]
    assert names[:4] == ["type", "topic length", "topic", "offset"]
    assert "trailing bytes" not in names
    check_spans(got.fields, len(payload))


def test_a_malformed_reply_is_followed_as_far_as_it_goes() -> None:
    got = annotate(h("02 00 00000003 6572"), "reply")
    assert got.summary.startswith("malformed: CONSUME reply")
    assert rows(got.fields) == [
        ("type", 0, 1, 2),
        ("success", 1, 2, 0),
        ("error length", 2, 6, 3),
        ("error", 6, 8, b"er"),
    ]


def test_a_reply_with_trailing_bytes_is_malformed() -> None:
    got = annotate(h("04 01 0000000000000000 00"), "reply")
    assert got.summary.startswith("malformed:")
    assert "trailing bytes" not in [f.name for f in got.fields]


# ------------------------------------------------------------------------ replies


def test_consume_reply_fields() -> None:
    """FACTS.md 2.8's reply: each message's data length, offset and data by index."""
    payload = h(
        "02 01 0000000000000002 00000002 00000002 0000000000000000 6869 00000000 0000000000000001"
    )
    got = annotate(payload, "reply")
    assert got.summary == "CONSUME reply next_offset=2 2 messages [0,1]"
    assert rows(got.fields) == [
        ("type", 0, 1, 2),
        ("success", 1, 2, 1),
        ("next_offset", 2, 10, 2),
        ("messages count", 10, 14, 2),
        ("messages[0].data length", 14, 18, 2),
        ("messages[0].offset", 18, 26, 0),
        ("messages[0].data", 26, 28, b"hi"),
        ("messages[1].data length", 28, 32, 0),
        ("messages[1].offset", 32, 40, 1),
        ("messages[1].data", 40, 40, b""),
    ]
    assert got.fields[3].items == ((14, 28), (28, 40))  # the count names its items
    check_spans(got.fields, len(payload))


@pytest.mark.parametrize(
    ("hexed", "summary", "expected"),
    [
        (
            "04 01 0000000000000007",
            "PRODUCE reply offset=7",
            [("type", 0, 1, 4), ("success", 1, 2, 1), ("offset", 2, 10, 7)],
        ),
        ("06 01", "FLUSH reply ok", [("type", 0, 1, 6), ("success", 1, 2, 1)]),
        (
            "06 00 00000004 6469736b",
            "FLUSH reply error 'disk'",
            [
                ("type", 0, 1, 6),
                ("success", 1, 2, 0),
                ("error length", 2, 6, 4),
                ("error", 6, 10, "disk"),
            ],
        ),
        (
            "02 00 00000003 657272",
            "CONSUME reply error 'err'",
            [
                ("type", 0, 1, 2),
                ("success", 1, 2, 0),
                ("error length", 2, 6, 3),
                ("error", 6, 9, "err"),
            ],
        ),
        (
            "07 01",
            "unknown reply type 0x07",
            [("type", 0, 1, 7), ("body", 1, 2, b"\x01")],
        ),
    ],
)
def test_reply_fields(hexed: str, summary: str, expected: list[Row]) -> None:
    got = annotate(h(hexed), "reply")
    assert got.summary == summary
    assert rows(got.fields) == expected


def test_a_reply_needs_no_earlier_request() -> None:
    payload = h("04 01 0000000000000007")
    assert annotate(payload, "reply", [b"\x05"]) == annotate(payload, "reply")


# ------------------------------------------------------------------- whole frames


def test_a_whole_frame_has_its_length_first_and_the_fields_after_it() -> None:
    plugin = protocols.get("minikafka")
    frame = h("0000000e 04 01 0000000000000000")
    got = annotate_frame(plugin, frame, "reply")
    assert got.summary == "frame: PRODUCE reply offset=0"
    assert [(f.name, f.start, f.end) for f in got.fields] == [
        ("length", 0, 4),
        ("type", 4, 5),
        ("success", 5, 6),
        ("offset", 6, 14),
    ]
    request = annotate_frame(
        plugin, h("00000017 01 00000002 6162 0000000000000003 00000007"), "request"
    )
    assert request.summary == "frame: CONSUME 'ab' offset=3 batch=7"
    assert rows(request.fields)[1:] == [
        ("type", 4, 5, 1),
        ("topic length", 5, 9, 2),
        ("topic", 9, 11, "ab"),
        ("offset", 11, 19, 3),
        ("batch_size", 19, 23, 7),
    ]
    assert request.fields[2].counts == (9, 11)  # moved with the fields it counts


def test_an_empty_frame_and_a_lying_one() -> None:
    plugin = protocols.get("minikafka")
    empty = annotate_frame(plugin, h("00000004"), "request")
    assert empty.summary.startswith("frame: request with no type byte")
    assert rows(empty.fields) == [("framing", 0, 4, "an empty frame")]
    lying = annotate_frame(plugin, h("00000006 05"), "request")  # one byte short
    assert lying.summary == "raw 5 bytes"


# --------------------------------------------------------------------- any bytes


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=48), st.sampled_from(["request", "reply"]))
def test_any_payload_is_annotated_without_an_exception(payload: bytes, direction: str) -> None:
    got = annotate(payload, direction)
    assert got.summary
    check_spans(got.fields, len(payload))


@settings(max_examples=100, deadline=None)
@given(
    st.one_of(
        st.builds(codec.Consume, st.text(max_size=8), st.integers(0, 99), st.integers(0, 99)),
        st.builds(codec.Produce, st.text(max_size=8), st.binary(max_size=8)),
        st.just(codec.Flush()),
    ),
    st.binary(max_size=4),
)
def test_a_request_is_covered_by_its_fields(request: codec.Request, trailing: bytes) -> None:
    """A well-formed request's fields leave no byte out (the trailing ones included)."""
    payload = codec.encode_request(request) + trailing
    got = annotate(payload, "request")
    check_spans(got.fields, len(payload))
    covered = sum(f.end - f.start for f in got.fields)
    assert covered == len(payload), rows(got.fields)
