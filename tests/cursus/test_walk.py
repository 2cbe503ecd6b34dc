"""The tolerant batch walk, the Cursus frame annotator built on it, and the minimizer's
structural shrinks derived from the annotation (:func:`conformance.fuzz.shrink.shrinks`)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from conformance.fuzz.shrink import shrinks
from conformance.protocols.cursus import codec, strategies
from conformance.protocols.cursus.annotate import annotate
from conformance.protocols.cursus.messages import Batch
from conformance.protocols.cursus.walk import walk


def smaller(payload: bytes) -> list[bytes]:
    return shrinks(payload, annotate(payload))


@given(strategies.batches())
def test_walk_of_a_valid_batch_finds_every_field(batch: Batch) -> None:
    data = codec.encode_batch(batch)
    found = walk(data)
    assert found is not None and found.complete
    assert len(found.messages()) == len(batch.messages)
    assert found.spans[-1].end == len(data)
    count = found.field("message_count")
    assert count is not None and count.value == len(batch.messages)


@given(st.binary(max_size=300))
def test_walk_never_raises(data: bytes) -> None:
    found = walk(b"\xba\x7c" + data)
    assert found is not None
    assert all(0 <= s.start <= s.end <= len(data) + 2 for s in found.spans)


def test_walk_is_none_for_text() -> None:
    assert walk(b"LIST") is None


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
