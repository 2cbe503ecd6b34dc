"""Idempotent appends: duplicates acknowledged but not stored twice, fencing, sequence order."""

from __future__ import annotations

import pytest

from conformance.engine import Engine, EngineError, NewRecord, ProducerBatch


def recs(*values: bytes) -> list[NewRecord]:
    return [NewRecord(b"", v) for v in values]


@pytest.fixture
def engine() -> Engine:
    e = Engine()
    e.create_topic("t", 2)
    return e


def values(engine: Engine, partition: int = 0) -> list[bytes]:
    return [r.value for r in engine.read("t", partition, 0, 1000)]


def test_records_keep_producer_data(engine: Engine) -> None:
    result = engine.append("t", 0, recs(b"a", b"b"), ProducerBatch("p", 3, 10, 11))
    assert (result.base_offset, result.last_offset, result.producer_epoch) == (0, 1, 3)
    got = engine.read("t", 0, 0, 10)
    assert [(r.producer_id, r.producer_epoch, r.sequence) for r in got] == [
        ("p", 3, 10),
        ("p", 3, 11),
    ]


def test_resent_batch_is_acknowledged_again_and_not_appended(engine: Engine) -> None:
    batch = ProducerBatch("p", 1, 0, 1)
    first = engine.append("t", 0, recs(b"a", b"b"), batch)
    notified: list[tuple[str, int]] = []
    engine.add_listener(lambda t, p: notified.append((t, p)))
    again = engine.append("t", 0, recs(b"a", b"b"), batch)
    assert again.duplicate is True
    assert (again.base_offset, again.last_offset, again.producer_epoch) == (0, 1, 1)
    assert first.duplicate is False
    assert values(engine) == [b"a", b"b"]
    assert notified == []


def test_the_last_five_ranges_are_remembered(engine: Engine) -> None:
    for i in range(6):
        engine.append("t", 0, recs(b"%d" % i), ProducerBatch("p", 0, i, i))
    for i in range(1, 6):  # ranges 1..5 are remembered, with their offsets
        result = engine.append("t", 0, recs(b"x"), ProducerBatch("p", 0, i, i))
        assert (result.duplicate, result.base_offset) == (True, i)
    with pytest.raises(EngineError) as exc:  # range 0 is forgotten: it is out of order now
        engine.append("t", 0, recs(b"x"), ProducerBatch("p", 0, 0, 0))
    assert exc.value.code == "OUT_OF_ORDER_SEQUENCE"
    assert engine.high_watermark("t", 0) == 6


def test_sequence_gap_is_out_of_order(engine: Engine) -> None:
    engine.append("t", 0, recs(b"a", b"b"), ProducerBatch("p", 0, 5, 6))
    with pytest.raises(EngineError, match="next sequence must be 7") as exc:
        engine.append("t", 0, recs(b"c"), ProducerBatch("p", 0, 8, 8))
    assert exc.value.code == "OUT_OF_ORDER_SEQUENCE"
    engine.append("t", 0, recs(b"c"), ProducerBatch("p", 0, 7, 7))
    assert values(engine) == [b"a", b"b", b"c"]


def test_overlapping_but_different_range_is_out_of_order(engine: Engine) -> None:
    engine.append("t", 0, recs(b"a", b"b"), ProducerBatch("p", 0, 0, 1))
    with pytest.raises(EngineError) as exc:
        engine.append("t", 0, recs(b"b"), ProducerBatch("p", 0, 1, 1))
    assert exc.value.code == "OUT_OF_ORDER_SEQUENCE"


def test_lower_epoch_is_fenced(engine: Engine) -> None:
    engine.append("t", 0, recs(b"a"), ProducerBatch("p", 2, 0, 0))
    with pytest.raises(EngineError, match=r"epoch 1 .* epoch 2 is already in use") as exc:
        engine.append("t", 0, recs(b"b"), ProducerBatch("p", 1, 1, 1))
    assert exc.value.code == "PRODUCER_FENCED"
    assert values(engine) == [b"a"]


def test_higher_epoch_resets_the_sequence(engine: Engine) -> None:
    engine.append("t", 0, recs(b"a"), ProducerBatch("p", 0, 41, 41))
    bumped = engine.append("t", 0, recs(b"b"), ProducerBatch("p", 1, 0, 0))
    assert (bumped.producer_epoch, bumped.duplicate, bumped.base_offset) == (1, False, 1)
    with pytest.raises(EngineError) as exc:  # the old epoch is now fenced, even as a re-send
        engine.append("t", 0, recs(b"a"), ProducerBatch("p", 0, 41, 41))
    assert exc.value.code == "PRODUCER_FENCED"


def test_state_is_per_producer_and_partition(engine: Engine) -> None:
    engine.append("t", 0, recs(b"a"), ProducerBatch("p", 0, 0, 0))
    # the same range from another producer, or to another partition, is new data
    assert not engine.append("t", 0, recs(b"b"), ProducerBatch("q", 0, 0, 0)).duplicate
    assert not engine.append("t", 1, recs(b"c"), ProducerBatch("p", 0, 0, 0)).duplicate
    assert values(engine) == [b"a", b"b"]
    assert values(engine, 1) == [b"c"]


def test_sequence_range_must_number_the_records(engine: Engine) -> None:
    with pytest.raises(EngineError, match="do not number the 1 record") as exc:
        engine.append("t", 0, recs(b"a"), ProducerBatch("p", 0, 0, 1))
    assert exc.value.code == "INVALID_ARGUMENT"
    assert engine.high_watermark("t", 0) == 0


def test_plain_appends_do_not_disturb_producer_state(engine: Engine) -> None:
    engine.append("t", 0, recs(b"a"), ProducerBatch("p", 0, 0, 0))
    engine.append("t", 0, recs(b"plain"))
    dup = engine.append("t", 0, recs(b"a"), ProducerBatch("p", 0, 0, 0))
    assert (dup.duplicate, dup.base_offset) == (True, 0)
    assert engine.append("t", 0, recs(b"b"), ProducerBatch("p", 0, 1, 1)).base_offset == 2
