"""The tolerant batch walk, and the minimizer's structural shrinks built on it."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from conformance.protocols.cursus import codec, strategies
from conformance.protocols.cursus.fuzzing import CursusFuzzing
from conformance.protocols.cursus.messages import Batch
from conformance.protocols.cursus.walk import walk

PROTO = CursusFuzzing()


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
    smaller = PROTO.smaller(data)
    assert all(len(s) < len(data) for s in smaller)
    for i in range(len(batch.messages)):  # the first candidates drop message i
        dropped = replace(batch, messages=batch.messages[:i] + batch.messages[i + 1 :])
        assert codec.decode_batch(smaller[i]) == dropped


def test_a_command_loses_one_token_at_a_time() -> None:
    assert PROTO.smaller(b"CONSUME t 0 5") == [b"CONSUME 0 5", b"CONSUME t 5", b"CONSUME t 0"]


def test_no_shrink_of_a_count_that_cannot_shrink() -> None:
    batch = codec.encode_batch(Batch("t", "0", "1", False, 0, 0, ()))
    at = len(batch) - 4  # messageCount is the last field of an empty batch
    lowest = batch[:at] + (-(2**31)).to_bytes(4, "big", signed=True)
    assert all(len(s) < len(lowest) for s in PROTO.smaller(lowest))  # and no OverflowError
