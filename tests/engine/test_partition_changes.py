"""Adding partitions to a topic and removing its last ones: numbering, records, committed
offsets, limits, group assignments, and recovery from the journal."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.engine import Engine, EngineError, GroupPolicy, NewRecord, TopicInfo
from conformance.engine.ops import AddPartitions, RemovePartitions, decode, encode


def rec(value: bytes) -> NewRecord:
    return NewRecord(key=None, value=value)


def test_added_partitions_are_numbered_after_the_last_and_start_empty() -> None:
    engine = Engine()
    engine.create_topic("t", 2)
    engine.append("t", 1, [rec(b"a")])
    assert engine.add_partitions("t", 3) == TopicInfo("t", 5)
    assert engine.topic("t").partitions == 5
    assert [engine.high_watermark("t", p) for p in range(5)] == [0, 1, 0, 0, 0]
    engine.append("t", 4, [rec(b"b")])
    assert engine.read("t", 4, 0, 10)[0].value == b"b"


def test_removing_drops_the_last_partitions_with_records_and_offsets() -> None:
    engine = Engine()
    engine.create_topic("t", 3)
    engine.append("t", 2, [rec(b"gone")])
    engine.commit("g", "t", 0, 0)
    engine.commit("g", "t", 2, 1)
    assert engine.remove_partitions("t", 1) == TopicInfo("t", 2)
    assert engine.committed("g", "t", 2) is None
    assert engine.committed("g", "t", 0) == 0
    with pytest.raises(EngineError) as exc:
        engine.high_watermark("t", 2)
    assert exc.value.code == "UNKNOWN_PARTITION"
    engine.add_partitions("t", 1)
    assert engine.high_watermark("t", 2) == 0  # a new partition, not the old one back


def test_a_topic_may_lose_every_partition_and_be_created_without_any() -> None:
    engine = Engine()
    engine.create_topic("t", 2)
    assert engine.remove_partitions("t", 2) == TopicInfo("t", 0)
    assert engine.create_topic("empty", 0, min_partitions=0) == TopicInfo("empty", 0)
    with pytest.raises(EngineError, match="at least one partition"):
        engine.create_topic("u", 0)


@pytest.mark.parametrize("count", [0, -1, 4])
def test_removing_none_or_more_than_exist_is_refused(count: int) -> None:
    engine = Engine()
    engine.create_topic("t", 3)
    with pytest.raises(EngineError, match="has 3 partitions") as exc:
        engine.remove_partitions("t", count)
    assert exc.value.code == "INVALID_PARTITIONS"
    assert engine.topic("t").partitions == 3


def test_adding_none_or_past_the_limit_is_refused() -> None:
    engine = Engine(max_partitions=4)
    engine.create_topic("t", 3)
    for count, says in ((0, "at least one partition"), (2, "would have 5 partitions")):
        with pytest.raises(EngineError, match=says) as exc:
            engine.add_partitions("t", count)
        assert exc.value.code == "INVALID_PARTITIONS"
    with pytest.raises(EngineError) as missing:
        engine.add_partitions("nope", 1)
    assert missing.value.code == "UNKNOWN_TOPIC"


def test_group_assignments_follow_the_partition_count() -> None:
    engine = Engine()
    policy = GroupPolicy(assignor="roundrobin")
    engine.create_topic("t", 2)
    engine.join_group("g", "t", "a", policy=policy)
    engine.join_group("g", "t", "b", policy=policy)
    engine.add_partitions("t", 2)
    shares = {m.member_id: m.assignment["t"] for m in engine.group_info("g").members}
    assert shares == {"a-1": [0, 2], "b-2": [1, 3]}
    engine.remove_partitions("t", 3)
    shares = {m.member_id: m.assignment["t"] for m in engine.group_info("g").members}
    assert shares == {"a-1": [0], "b-2": []}


@pytest.mark.parametrize("op", [AddPartitions("t/é", 7), RemovePartitions("x", 2**32 - 1)])
def test_the_operations_round_trip_through_the_journal_encoding(
    op: AddPartitions | RemovePartitions,
) -> None:
    assert decode(encode(op)) == op


def test_partition_changes_are_recovered_and_compacted(tmp_path: Path) -> None:
    with Engine(str(tmp_path)) as engine:
        engine.create_topic("t", 1)
        engine.add_partitions("t", 2)
        engine.append("t", 2, [rec(b"x")])
        engine.append("t", 1, [rec(b"y")])
        engine.commit("g", "t", 2, 1)
        engine.remove_partitions("t", 1)
        engine.add_partitions("t", 1)
    with Engine(str(tmp_path)) as again:
        assert again.topic("t").partitions == 3
        assert [again.high_watermark("t", p) for p in range(3)] == [0, 1, 0]
        assert again.committed("g", "t", 2) is None
    with Engine(str(tmp_path)) as third:  # the compacted journal holds the same state
        assert [third.high_watermark("t", p) for p in range(3)] == [0, 1, 0]
