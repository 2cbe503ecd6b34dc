"""The Cursus frame annotator, whose batch part is the tolerant annotation of ``BATCH``
(the schema's walk over a batch's bytes, under this annotator's names), and the
minimizer's structural shrinks derived from it (:func:`conformance.fuzz.shrink.shrinks`)."""

from __future__ import annotations

import struct
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from conformance.fuzz.shrink import shrinks
from conformance.plugin import FieldSpan
from conformance.protocols.cursus import codec, strategies
from conformance.protocols.cursus.annotate import annotate, batch_spans
from conformance.protocols.cursus.messages import BATCH, Batch, Message


def smaller(payload: bytes) -> list[bytes]:
    return shrinks(payload, annotate(payload))


@given(strategies.batches())
def test_the_annotation_of_a_valid_batch_finds_every_field(batch: Batch) -> None:
    data = codec.encode_batch(batch)
    spans = annotate(data)
    assert max(s.end for s in spans) == len(data)
    count = next(s for s in spans if s.name == "message_count")
    assert count.value == len(batch.messages) and len(count.items) == len(batch.messages)
    assert batch_spans(data) == BATCH.annotate(data, 0)  # tolerant is strict when well formed


@given(st.binary(max_size=300))
def test_the_batch_annotation_never_raises(data: bytes) -> None:
    spans = annotate(b"\xba\x7c" + data)
    assert spans and all(0 <= s.start <= s.end <= len(data) + 2 for s in spans)


def test_text_is_no_batch() -> None:
    assert batch_spans(b"LIST") is None
    assert [s.name for s in annotate(b"LIST")] == ["command"]


def test_a_cut_short_batch_is_annotated_as_far_as_its_bytes_go() -> None:
    data = codec.encode_batch(Batch("t", "0", "1", messages=(Message(payload=b"hello"),)))
    at = data.index(b"hello")
    spans = {s.name: s for s in annotate(data[: at + 2])}
    assert spans["message[0].payload.len"].value == 5
    assert spans["message[0].payload.len"].counts == (at, at + 2)
    assert spans["message[0].payload"] == FieldSpan("message[0].payload", at, at + 2, "he")
    assert spans["message_count"].items == ((32, at + 2),)  # the message, as far as it went
    assert "message[0].event_type.len" not in spans


def test_a_negative_payload_len_spans_the_rest_of_the_batch() -> None:
    data = codec.encode_batch(Batch("t", "0", "1", messages=(Message(payload=b"hi"),) * 2))
    at = data.index(b"hi") - 4
    bad = data[:at] + struct.pack(">i", -2) + data[at + 4 :]
    spans = annotate(bad)
    assert spans[-2:] == [
        FieldSpan("message[0].payload.len", at, at + 4, -2, signed=True),
        FieldSpan("message[0].payload", at + 4, len(bad), spans[-1].value),
    ]
    assert next(s for s in spans if s.name == "message_count").items == ((32, len(bad)),)


@given(strategies.batches(max_messages=3))
def test_dropping_a_message_keeps_the_batch_valid(batch: Batch) -> None:
    data = codec.encode_batch(batch)
    found = smaller(data)
    assert all(len(s) < len(data) for s in found)
    drops = {
        replace(batch, messages=batch.messages[:i] + batch.messages[i + 1 :])
        for i in range(len(batch.messages))
    }
    # the first candidates drop one message each (identical messages give one variant)
    assert {codec.decode_batch(v) for v in found[: len(drops)]} == drops


def test_a_command_loses_one_token_at_a_time() -> None:
    assert smaller(b"CONSUME t 0 5") == [b"CONSUME 0 5", b"CONSUME t 5", b"CONSUME t 0"]


def test_no_shrink_of_a_count_that_cannot_shrink() -> None:
    batch = codec.encode_batch(Batch("t", "0", "1", False, 0, 0, ()))
    at = len(batch) - 4  # messageCount is the last field of an empty batch
    lowest = batch[:at] + (-(2**31)).to_bytes(4, "big", signed=True)
    assert all(len(s) < len(lowest) for s in smaller(lowest))  # and no OverflowError


@given(strategies.batches(max_messages=3))
def test_emptying_a_string_keeps_the_batch_valid(batch: Batch) -> None:
    data = codec.encode_batch(batch)
    for variant in smaller(data):
        decoded = codec.decode_batch(variant)  # every length or count rewritten consistently
        assert len(decoded.messages) in (len(batch.messages), len(batch.messages) - 1)


def test_the_annotation_names_and_places_each_field() -> None:
    data = codec.encode_batch(Batch("orders", "2", "1", False, 0, 0, ()))
    spans = {s.name: s for s in annotate(data)}
    assert data[spans["topic"].start : spans["topic"].end] == b"orders"
    assert spans["topic.len"].value == 6 and spans["topic.len"].counts == (4, 10)
    assert spans["message_count"].value == 0 and spans["message_count"].end == len(data)
    tokens = [(s.name, s.value) for s in annotate(b"CONSUME t 0 5")]
    assert tokens == [("command", "CONSUME"), ("topic", "t"), ("partition", "0"), ("offset", "5")]


def test_a_json_ack_is_annotated_member_by_member_spanning_each_value() -> None:
    ack = b'{"status":"OK", "last_offset":3,"leader":"","seq":[1, 2],"error":null}'
    spans = {s.name: s for s in annotate(ack, "reply")}
    assert list(spans) == ["status", "last_offset", "leader", "seq", "error"]
    assert ack[spans["last_offset"].start : spans["last_offset"].end] == b"3"
    assert spans["last_offset"].value == 3 and spans["status"].value == "OK"
    assert ack[spans["leader"].start : spans["leader"].end] == b'""'
    assert spans["seq"].value == "[1, 2]" and spans["error"].value == "null"
    for broken in (b'{"status":', b'{"a" 1}', b'["a"]', '{"é":1}'.encode()):
        assert [s.name for s in annotate(broken, "reply")] == ["reply"]
    assert [s.name for s in annotate(ack, "request")] == ["reply"]  # what we send is not an ack
