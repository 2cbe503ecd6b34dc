"""Idempotent appends: duplicates acknowledged but not stored twice under every policy;
fencing, sequence order and ranges that number the records under STRICT only."""

from __future__ import annotations

import pytest

from conformance.engine import (
    DEDUPE_ONLY,
    STRICT,
    Engine,
    EngineError,
    IdempotencePolicy,
    NewRecord,
    ProducerBatch,
)


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
    result = engine.append("t", 0, recs(b"a", b"b"), ProducerBatch("p", 3, 10, 11), policy=STRICT)
    assert (result.base_offset, result.last_offset, result.producer_epoch) == (0, 1, 3)
    got = engine.read("t", 0, 0, 10)
    assert [(r.producer_id, r.producer_epoch, r.sequence) for r in got] == [
        ("p", 3, 10),
        ("p", 3, 11),
    ]


def test_resent_batch_is_acknowledged_again_and_not_appended(engine: Engine) -> None:
    batch = ProducerBatch("p", 1, 0, 1)
    first = engine.append("t", 0, recs(b"a", b"b"), batch, policy=STRICT)
    notified: list[tuple[str, int]] = []
    engine.add_listener(lambda t, p: notified.append((t, p)))
    again = engine.append("t", 0, recs(b"a", b"b"), batch, policy=STRICT)
    assert again.duplicate is True
    assert (again.base_offset, again.last_offset, again.producer_epoch) == (0, 1, 1)
    assert first.duplicate is False
    assert values(engine) == [b"a", b"b"]
    assert notified == []


def test_the_last_five_ranges_are_remembered(engine: Engine) -> None:
    for i in range(6):
        engine.append("t", 0, recs(b"%d" % i), ProducerBatch("p", 0, i, i), policy=STRICT)
    for i in range(1, 6):  # ranges 1..5 are remembered, with their offsets
        result = engine.append("t", 0, recs(b"x"), ProducerBatch("p", 0, i, i), policy=STRICT)
        assert (result.duplicate, result.base_offset) == (True, i)
    with pytest.raises(EngineError) as exc:  # range 0 is forgotten: it is out of order now
        engine.append("t", 0, recs(b"x"), ProducerBatch("p", 0, 0, 0), policy=STRICT)
    assert exc.value.code == "OUT_OF_ORDER_SEQUENCE"
    assert engine.high_watermark("t", 0) == 6


def test_sequence_gap_is_out_of_order(engine: Engine) -> None:
    engine.append("t", 0, recs(b"a", b"b"), ProducerBatch("p", 0, 5, 6), policy=STRICT)
    with pytest.raises(EngineError, match="next sequence must be 7") as exc:
        engine.append("t", 0, recs(b"c"), ProducerBatch("p", 0, 8, 8), policy=STRICT)
    assert exc.value.code == "OUT_OF_ORDER_SEQUENCE"
    engine.append("t", 0, recs(b"c"), ProducerBatch("p", 0, 7, 7), policy=STRICT)
    assert values(engine) == [b"a", b"b", b"c"]


def test_overlapping_but_different_range_is_out_of_order(engine: Engine) -> None:
    engine.append("t", 0, recs(b"a", b"b"), ProducerBatch("p", 0, 0, 1), policy=STRICT)
    with pytest.raises(EngineError) as exc:
        engine.append("t", 0, recs(b"b"), ProducerBatch("p", 0, 1, 1), policy=STRICT)
    assert exc.value.code == "OUT_OF_ORDER_SEQUENCE"


def test_lower_epoch_is_fenced(engine: Engine) -> None:
    engine.append("t", 0, recs(b"a"), ProducerBatch("p", 2, 0, 0), policy=STRICT)
    with pytest.raises(EngineError, match=r"epoch 1 .* epoch 2 is already in use") as exc:
        engine.append("t", 0, recs(b"b"), ProducerBatch("p", 1, 1, 1), policy=STRICT)
    assert exc.value.code == "PRODUCER_FENCED"
    assert values(engine) == [b"a"]


def test_higher_epoch_resets_the_sequence(engine: Engine) -> None:
    engine.append("t", 0, recs(b"a"), ProducerBatch("p", 0, 41, 41), policy=STRICT)
    bumped = engine.append("t", 0, recs(b"b"), ProducerBatch("p", 1, 0, 0), policy=STRICT)
    assert (bumped.producer_epoch, bumped.duplicate, bumped.base_offset) == (1, False, 1)
    with pytest.raises(EngineError) as exc:  # the old epoch is now fenced, even as a re-send
        engine.append("t", 0, recs(b"a"), ProducerBatch("p", 0, 41, 41), policy=STRICT)
    assert exc.value.code == "PRODUCER_FENCED"


def test_a_raised_epoch_must_start_at_sequence_zero(engine: Engine) -> None:
    """Kafka's rule: after an epoch bump the producer's sequences start again at 0."""
    engine.append("t", 0, recs(b"a"), ProducerBatch("p", 0, 0, 0), policy=STRICT)
    with pytest.raises(EngineError, match=r"raised its epoch to 1 .* sequence 1; a new epoch"):
        engine.append("t", 0, recs(b"b"), ProducerBatch("p", 1, 1, 1), policy=STRICT)
    assert values(engine) == [b"a"]
    assert dedupe(engine, ProducerBatch("p", 1, 1, 1), b"b")[3] is False  # not a rule there


def test_state_is_per_producer_and_partition(engine: Engine) -> None:
    engine.append("t", 0, recs(b"a"), ProducerBatch("p", 0, 0, 0), policy=STRICT)
    # the same range from another producer, or to another partition, is new data
    assert not engine.append(
        "t", 0, recs(b"b"), ProducerBatch("q", 0, 0, 0), policy=STRICT
    ).duplicate
    assert not engine.append(
        "t", 1, recs(b"c"), ProducerBatch("p", 0, 0, 0), policy=STRICT
    ).duplicate
    assert values(engine) == [b"a", b"b"]
    assert values(engine, 1) == [b"c"]


def test_sequence_range_must_number_the_records(engine: Engine) -> None:
    with pytest.raises(EngineError, match="do not number the 1 record") as exc:
        engine.append("t", 0, recs(b"a"), ProducerBatch("p", 0, 0, 1), policy=STRICT)
    assert exc.value.code == "INVALID_ARGUMENT"
    assert engine.high_watermark("t", 0) == 0


def test_plain_appends_do_not_disturb_producer_state(engine: Engine) -> None:
    engine.append("t", 0, recs(b"a"), ProducerBatch("p", 0, 0, 0), policy=STRICT)
    engine.append("t", 0, recs(b"plain"))
    dup = engine.append("t", 0, recs(b"a"), ProducerBatch("p", 0, 0, 0), policy=STRICT)
    assert (dup.duplicate, dup.base_offset) == (True, 0)
    assert (
        engine.append("t", 0, recs(b"b"), ProducerBatch("p", 0, 1, 1), policy=STRICT).base_offset
        == 2
    )


def test_an_append_with_a_producer_needs_a_policy(engine: Engine) -> None:
    """No default: a front-end that forgets the policy must not get Kafka's refusals."""
    with pytest.raises(ValueError, match=r"policy=STRICT .* policy=DEDUPE_ONLY"):
        engine.append("t", 0, recs(b"a"), ProducerBatch("p", 0, 0, 0))
    assert values(engine) == []  # nothing stored
    assert engine.append("t", 0, recs(b"plain")).base_offset == 0  # no producer: no policy
    plain = engine.append("t", 0, recs(b"also"), None, policy=STRICT)  # a policy is ignored
    assert (plain.base_offset, plain.producer_epoch) == (1, 0)


def test_the_named_policies() -> None:
    assert IdempotencePolicy(True, True, True, True) == STRICT
    assert IdempotencePolicy(False, False, False) == DEDUPE_ONLY


# ------------------------------------------------------------------ DEDUPE_ONLY


def dedupe(
    engine: Engine, batch: ProducerBatch, *values: bytes, partition: int = 0
) -> tuple[int, int, int, bool]:
    r = engine.append("t", partition, recs(*values), batch, policy=DEDUPE_ONLY)
    return r.base_offset, r.last_offset, r.producer_epoch, r.duplicate


def test_dedupe_only_stores_a_sequence_gap(engine: Engine) -> None:
    assert dedupe(engine, ProducerBatch("p", 0, 0, 1), b"a", b"b") == (0, 1, 0, False)
    assert dedupe(engine, ProducerBatch("p", 0, 10, 10), b"c") == (2, 2, 0, False)
    assert values(engine) == [b"a", b"b", b"c"]
    assert [r.sequence for r in engine.read("t", 0, 0, 10)] == [0, 1, 10]


def test_dedupe_only_stores_an_overlap_and_a_step_back(engine: Engine) -> None:
    dedupe(engine, ProducerBatch("p", 0, 0, 1), b"a", b"b")
    assert dedupe(engine, ProducerBatch("p", 0, 1, 1), b"b2") == (2, 2, 0, False)
    assert dedupe(engine, ProducerBatch("p", 0, 0, 0), b"a2") == (3, 3, 0, False)
    assert values(engine) == [b"a", b"b", b"b2", b"a2"]


def test_dedupe_only_deduplicates_an_exact_resend(engine: Engine) -> None:
    dedupe(engine, ProducerBatch("p", 4, 0, 1), b"a", b"b")
    dedupe(engine, ProducerBatch("p", 4, 7, 7), b"c")
    notified: list[tuple[str, int]] = []
    engine.add_listener(lambda t, p: notified.append((t, p)))
    assert dedupe(engine, ProducerBatch("p", 4, 0, 1), b"a", b"b") == (0, 1, 4, True)
    assert dedupe(engine, ProducerBatch("p", 4, 7, 7), b"c") == (2, 2, 4, True)
    assert values(engine) == [b"a", b"b", b"c"]
    assert notified == []


def test_dedupe_only_a_range_must_match_exactly_to_be_a_duplicate(engine: Engine) -> None:
    dedupe(engine, ProducerBatch("p", 0, 0, 1), b"a", b"b")
    assert dedupe(engine, ProducerBatch("p", 0, 0, 2), b"x")[3] is False  # seq_end differs
    assert dedupe(engine, ProducerBatch("p", 1, 0, 1), b"y")[3] is False  # epoch differs
    assert dedupe(engine, ProducerBatch("q", 0, 0, 1), b"z")[3] is False  # producer differs
    assert dedupe(engine, ProducerBatch("p", 0, 0, 1), b"a", b"b", partition=1)[3] is False
    assert values(engine) == [b"a", b"b", b"x", b"y", b"z"]


def test_dedupe_only_stores_a_lower_epoch_and_keeps_tracking_the_highest(engine: Engine) -> None:
    dedupe(engine, ProducerBatch("p", 5, 0, 0), b"a")
    assert dedupe(engine, ProducerBatch("p", 3, 0, 0), b"old") == (1, 1, 5, False)
    assert dedupe(engine, ProducerBatch("p", 3, 0, 0), b"old") == (1, 1, 5, True)  # remembered
    assert dedupe(engine, ProducerBatch("p", 5, 1, 1), b"b") == (2, 2, 5, False)
    assert dedupe(engine, ProducerBatch("p", 6, 0, 0), b"c") == (3, 3, 6, False)
    assert values(engine) == [b"a", b"old", b"b", b"c"]
    got = engine.read("t", 0, 0, 10)
    assert [r.producer_epoch for r in got] == [5, 3, 5, 6]  # each record keeps its own epoch


def test_dedupe_only_stores_a_range_that_does_not_number_the_records(engine: Engine) -> None:
    assert dedupe(engine, ProducerBatch("p", 0, 0, 5), b"a") == (0, 0, 0, False)
    assert dedupe(engine, ProducerBatch("p", 0, 9, 3), b"b", b"c") == (1, 2, 0, False)
    assert dedupe(engine, ProducerBatch("p", 0, 9, 3), b"b", b"c") == (1, 2, 0, True)
    # the records have no sequence of their own: the range does not give one
    assert [r.sequence for r in engine.read("t", 0, 0, 10)] == [-1, -1, -1]


def test_dedupe_only_remembers_the_last_five_ranges(engine: Engine) -> None:
    for i in range(6):
        dedupe(engine, ProducerBatch("p", 0, i * 10, i * 10), b"%d" % i)
    assert dedupe(engine, ProducerBatch("p", 0, 10, 10), b"x")[3] is True
    assert dedupe(engine, ProducerBatch("p", 0, 0, 0), b"x") == (6, 6, 0, False)  # forgotten


def test_a_strict_append_after_dedupe_only_ones_follows_the_highest_epoch(engine: Engine) -> None:
    """One engine serves several protocols: STRICT checks the same remembered state."""
    dedupe(engine, ProducerBatch("p", 2, 0, 0), b"a")
    dedupe(engine, ProducerBatch("p", 1, 50, 50), b"low")
    with pytest.raises(EngineError) as exc:
        engine.append("t", 0, recs(b"b"), ProducerBatch("p", 2, 51, 51), policy=STRICT)
    assert exc.value.code == "OUT_OF_ORDER_SEQUENCE"  # next at epoch 2 is 1, not 51
    with pytest.raises(EngineError) as exc:
        engine.append("t", 0, recs(b"low"), ProducerBatch("p", 1, 50, 50), policy=STRICT)
    assert exc.value.code == "PRODUCER_FENCED"
    assert engine.append("t", 0, recs(b"b"), ProducerBatch("p", 2, 1, 1), policy=STRICT)
