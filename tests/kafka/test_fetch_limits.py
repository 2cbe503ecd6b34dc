"""A Fetch answer keeps to its byte limits: only a batch of one record may pass them, as
the first of the answer (Kafka lets at most the first stored batch pass,
``LogSegment.read``'s ``minOneMessage``; this broker keeps records, not the producer's
batches, so it cuts a run of one producer's records where the limit falls)."""

from __future__ import annotations

import pytest

from conformance.engine.records import Record
from conformance.protocols.kafka import batches
from conformance.protocols.kafka.records import decode_batches


def _run(n: int, size: int = 40) -> list[Record]:
    """``n`` records of one idempotent producer, sequences 0.., one batch if it fits."""
    return [
        Record(i, b"k%d" % i, b"v" * size, (), 1_000 + i, producer_id="7", sequence=i)
        for i in range(n)
    ]


@pytest.mark.parametrize("limit", [1, 60, 100, 200, 400, 10_000])
def test_one_producers_run_is_cut_where_the_limit_falls(limit: int) -> None:
    records = _run(15)
    data, count = batches.for_fetch(records, 2, limit, first=True)
    got = [r for b in decode_batches(data, strict=True) for r in b.records]
    assert len(got) == count and count >= 1
    whole = len(batches.for_fetch(records, 2, 1 << 20, first=True)[0])
    if whole <= limit:
        assert count == 15 and len(data) == whole
    elif count > 1:  # more than one record: within the limit
        assert len(data) <= limit, (len(data), limit)
    one = len(batches.for_fetch(records[:1], 2, 1 << 20, first=True)[0])
    if one <= limit:
        assert count > 1 or len(data) <= limit
    # the next record would not have fitted
    if count < 15:
        longer = len(batches.for_fetch(records[: count + 1], 2, 1 << 20, first=True)[0])
        assert longer > limit


def test_a_fetch_that_is_not_first_passes_no_limit() -> None:
    data, count = batches.for_fetch(_run(15), 2, 10, first=False)
    assert (data, count) == (b"", 0)


def test_a_cut_batch_keeps_its_sequences() -> None:
    data, count = batches.for_fetch(_run(15), 2, 200, first=True)
    (batch,) = decode_batches(data, strict=True)
    assert 1 < count < 15
    assert batch.base_sequence == 0 and batch.last_offset_delta == count - 1
    rest, more = batches.for_fetch(_run(15)[count:], 2, 1 << 20, first=True)
    (after,) = decode_batches(rest, strict=True)
    assert after.base_sequence == count and more == 15 - count
