"""Batches: every append is one batch, and a front-end may keep the bytes it was written in."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.engine import STRICT, Batch, Engine, NewRecord, ProducerBatch
from conformance.engine.ops import Append, decode, encode
from conformance.engine.records import Record


def _batches(e: Engine, topic: str) -> list[Batch]:
    seen: list[Batch] = []
    for r in e.read(topic, 0, 0, 1000):
        assert r.batch is not None
        if not seen or seen[-1] is not r.batch:
            seen.append(r.batch)
    return seen


def _fill(e: Engine) -> None:
    e.create_topic("t", 1)
    e.append("t", 0, [NewRecord(b"", b"a"), NewRecord(b"", b"b")], form="k", data=b"\x01\x02")
    e.append("t", 0, [NewRecord(b"", b"c")])
    e.append("t", 0, [NewRecord(b"", b"d")])
    one = ProducerBatch("7", 0, 0, 2)
    e.append("t", 0, [NewRecord(b"", b"%d" % i) for i in range(3)], one, policy=STRICT, form="k")


EXPECTED = [
    Batch(0, 2, "k", b"\x01\x02"),
    Batch(2, 1),
    Batch(3, 1),
    Batch(4, 3, "k", b""),
]


def test_each_append_is_a_batch_with_what_was_written() -> None:
    with Engine() as e:
        _fill(e)
        assert _batches(e, "t") == EXPECTED


@pytest.mark.parametrize("compact", [False, True])
def test_batches_survive_a_reopen_and_compaction(tmp_path: Path, compact: bool) -> None:
    with Engine(str(tmp_path)) as e:
        _fill(e)
        before = e.read("t", 0, 0, 100)
    if compact:  # a deleted topic makes the next open rewrite the journal
        with Engine(str(tmp_path)) as e:
            e.create_topic("gone", 1)
            e.delete_topic("gone")
    for _ in range(2):  # the second open reads the compacted journal
        with Engine(str(tmp_path)) as e:
            assert e.read("t", 0, 0, 100) == before
            assert _batches(e, "t") == EXPECTED


def test_a_records_batch_is_not_part_of_its_equality() -> None:
    a = Record(0, b"", b"x", (), 5, batch=Batch(0, 1, "k", b"1"))
    assert a == Record(0, b"", b"x", (), 5)


def test_an_append_with_written_bytes_round_trips() -> None:
    batch = Batch(3, 2, "kafka", b"\x00\xff" * 10)
    records = tuple(Record(3 + i, b"", b"v", (), 9, batch=batch) for i in range(2))
    op = Append("t", 0, 3, records, None)
    back = decode(encode(op))
    assert back == op
    assert back.batch == batch
    assert all(r.batch == batch for r in back.records)


def test_an_append_of_the_older_form_is_one_batch_keeping_nothing() -> None:
    records = (Record(5, b"", b"v", (), 9), Record(6, b"", b"w", (), 9))
    raw = encode(Append("t", 0, 5, records, None))
    assert raw[0] == 3  # nothing written: the form earlier versions wrote and read
    assert [r.batch for r in decode(raw).records] == [Batch(5, 2)] * 2
