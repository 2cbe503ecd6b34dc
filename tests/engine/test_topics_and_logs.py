"""Engine topics and partition logs: creation, deletion, appends, reads, listeners."""

from __future__ import annotations

import pytest

from conformance.engine import MAX_PARTITIONS, Engine, EngineError, NewRecord, Record, TopicInfo


def rec(value: bytes, key: bytes = b"k") -> NewRecord:
    return NewRecord(key=key, value=value)


def code_of(exc: pytest.ExceptionInfo[EngineError]) -> str:
    return exc.value.code


@pytest.fixture
def engine() -> Engine:
    return Engine()


def test_create_list_and_describe_topics(engine: Engine) -> None:
    assert engine.create_topic("orders", 3) == TopicInfo("orders", 3)
    engine.create_topic("audit", 1)
    assert engine.list_topics() == [TopicInfo("audit", 1), TopicInfo("orders", 3)]
    assert engine.topic("orders") == TopicInfo("orders", 3)


def test_create_existing_topic_is_refused(engine: Engine) -> None:
    engine.create_topic("t", 1)
    with pytest.raises(EngineError, match="'t' already exists") as exc:
        engine.create_topic("t", 2)
    assert code_of(exc) == "TOPIC_EXISTS"
    assert engine.topic("t").partitions == 1


@pytest.mark.parametrize(
    ("count", "says"),
    [
        (0, "at least one partition"),
        (-1, "at least one partition"),
        (-(2**63), "at least one partition"),
        (10_001, "limit is 10000 partitions per topic"),
        (2**63 - 1, "limit is 10000 partitions per topic"),
    ],
)
def test_partition_count_out_of_bounds_is_refused(engine: Engine, count: int, says: str) -> None:
    with pytest.raises(EngineError, match=str(count)) as exc:
        engine.create_topic("t", count)
    assert code_of(exc) == "INVALID_PARTITIONS" and says in str(exc.value)
    assert engine.list_topics() == []


def test_the_partition_limit_is_configurable() -> None:
    small = Engine(max_partitions=4)
    assert small.create_topic("t", 4).partitions == 4
    with pytest.raises(EngineError, match="limit is 4 partitions per topic") as exc:
        small.create_topic("u", 5)
    assert code_of(exc) == "INVALID_PARTITIONS"
    assert Engine(max_partitions=20_000).create_topic("t", 20_000).partitions == 20_000
    assert Engine().max_partitions == MAX_PARTITIONS == 10_000
    for bad in (0, -1):
        with pytest.raises(ValueError, match="max_partitions"):
            Engine(max_partitions=bad)


@pytest.mark.parametrize("count", [1, 10_000])
def test_partition_count_bounds_are_accepted(engine: Engine, count: int) -> None:
    assert engine.create_topic("t", count).partitions == count
    assert engine.high_watermark("t", count - 1) == 0


def test_empty_topic_name_is_refused(engine: Engine) -> None:
    with pytest.raises(EngineError) as exc:
        engine.create_topic("", 1)
    assert code_of(exc) == "INVALID_ARGUMENT"


def test_unknown_topic_everywhere(engine: Engine) -> None:
    calls = [
        lambda: engine.topic("nope"),
        lambda: engine.delete_topic("nope"),
        lambda: engine.append("nope", 0, [rec(b"x")]),
        lambda: engine.read("nope", 0, 0, 10),
        lambda: engine.high_watermark("nope", 0),
        lambda: engine.subscribe("g", "nope"),
        lambda: engine.join_group("g", "nope", "c"),
        lambda: engine.commit("g", "nope", 0, 0),
    ]
    for call in calls:
        with pytest.raises(EngineError, match="no topic 'nope'") as exc:
            call()
        assert code_of(exc) == "UNKNOWN_TOPIC"


@pytest.mark.parametrize("partition", [-1, -2, -(2**63), 2, 99])
def test_unknown_partition(engine: Engine, partition: int) -> None:
    """A partition below 0 does not exist: it never indexes the list of logs from its end."""
    engine.create_topic("t", 2)
    joined = engine.join_group("h", "t", "c")
    for call in (
        lambda: engine.append("t", partition, [rec(b"x")]),
        lambda: engine.read("t", partition, 0, 1),
        lambda: engine.high_watermark("t", partition),
        lambda: engine.check_offset("t", partition, 0),
        lambda: engine.commit("g", "t", partition, 0),
        lambda: engine.commit_many("h", "t", {partition: 0}, joined.member_id, 1),
    ):
        with pytest.raises(EngineError, match=r"partitions 0\.\.1") as exc:
            call()
        assert code_of(exc) == "UNKNOWN_PARTITION"


def test_offsets_are_consecutive_per_partition(engine: Engine) -> None:
    engine.create_topic("t", 2)
    first = engine.append("t", 0, [rec(b"a"), rec(b"b")])
    second = engine.append("t", 0, [rec(b"c")])
    other = engine.append("t", 1, [rec(b"z")])
    assert (first.base_offset, first.last_offset, first.duplicate) == (0, 1, False)
    assert (second.base_offset, second.last_offset) == (2, 2)
    assert (other.base_offset, other.last_offset) == (0, 0)
    assert engine.high_watermark("t", 0) == 3
    assert engine.high_watermark("t", 1) == 1


def test_read_returns_stored_records(engine: Engine) -> None:
    engine.create_topic("t", 1)
    headers = (("h", b"\x00\xff"), ("h", b"again"))
    engine.append("t", 0, [NewRecord(b"\x00k", b"\xffv", headers), rec(b"2"), rec(b"3")])
    got = engine.read("t", 0, 0, 10)
    assert [r.offset for r in got] == [0, 1, 2]
    first = got[0]
    assert isinstance(first, Record)
    assert (first.key, first.value, first.headers) == (b"\x00k", b"\xffv", headers)
    assert (first.producer_id, first.producer_epoch, first.sequence) == ("", 0, -1)
    assert first.timestamp_ms > 1_600_000_000_000
    assert [r.value for r in engine.read("t", 0, 1, 1)] == [b"2"]
    assert [r.value for r in engine.read("t", 0, 1, 100)] == [b"2", b"3"]


def test_read_at_high_watermark_is_empty_and_past_it_is_refused(engine: Engine) -> None:
    engine.create_topic("t", 1)
    engine.append("t", 0, [rec(b"1"), rec(b"2")])
    assert engine.read("t", 0, 2, 10) == []
    with pytest.raises(EngineError, match=r"outside 0\.\.2") as exc:
        engine.read("t", 0, 3, 10)
    assert code_of(exc) == "OFFSET_OUT_OF_RANGE"


@pytest.mark.parametrize("offset", [-1, -2, -(2**63)])
def test_an_offset_below_0_is_refused_never_read_from_the_end(engine: Engine, offset: int) -> None:
    engine.create_topic("t", 2)
    engine.append("t", 0, [rec(b"1"), rec(b"2")])
    joined = engine.join_group("h", "t", "c")
    for call in (
        lambda: engine.read("t", 0, offset, 10),
        lambda: engine.check_offset("t", 0, offset),
        lambda: engine.commit("g", "t", 0, offset),
        lambda: engine.commit_many("h", "t", {0: 1, 1: offset}, joined.member_id, 1),
    ):
        with pytest.raises(EngineError, match="below 0: offsets number the log from 0") as exc:
            call()
        assert code_of(exc) == "OFFSET_OUT_OF_RANGE"
    assert engine.committed("g", "t", 0) is None and engine.committed("h", "t", 0) is None


def test_check_offset_allows_any_position_from_0_past_the_end(engine: Engine) -> None:
    engine.create_topic("t", 1)
    for offset in (0, 1, 2**63 - 1):
        engine.check_offset("t", 0, offset)
    with pytest.raises(EngineError, match="int64 maximum") as exc:
        engine.check_offset("t", 0, 2**63)
    assert code_of(exc) == "OFFSET_OUT_OF_RANGE"


def test_read_needs_a_positive_max(engine: Engine) -> None:
    engine.create_topic("t", 1)
    with pytest.raises(EngineError, match="at least 1") as exc:
        engine.read("t", 0, 0, 0)
    assert code_of(exc) == "INVALID_ARGUMENT"


def test_empty_append_is_refused(engine: Engine) -> None:
    engine.create_topic("t", 1)
    with pytest.raises(EngineError) as exc:
        engine.append("t", 0, [])
    assert code_of(exc) == "INVALID_ARGUMENT"
    assert engine.high_watermark("t", 0) == 0


def test_delete_topic_removes_data_offsets_and_subscriptions(engine: Engine) -> None:
    engine.create_topic("t", 2)
    engine.create_topic("keep", 1)
    engine.append("t", 0, [rec(b"old")])
    engine.commit("g", "t", 0, 1)
    engine.commit("g", "keep", 0, 0)
    joined = engine.join_group("g", "t", "c")
    engine.subscribe("g", "keep")
    engine.delete_topic("t")
    assert engine.list_topics() == [TopicInfo("keep", 1)]
    assert engine.committed("g", "t", 0) is None
    assert engine.committed("g", "keep", 0) == 0
    assert engine.sync_group("g", joined.member_id, joined.generation) == {"keep": [0]}
    engine.create_topic("t", 1)  # a new topic of the same name starts empty
    assert engine.high_watermark("t", 0) == 0
    assert engine.committed("g", "t", 0) is None


def test_listeners_see_every_new_append_after_it_is_stored(engine: Engine) -> None:
    engine.create_topic("t", 2)
    seen: list[tuple[str, int, int]] = []
    remove = engine.add_listener(lambda t, p: seen.append((t, p, engine.high_watermark(t, p))))
    engine.append("t", 1, [rec(b"a"), rec(b"b")])
    engine.append("t", 0, [rec(b"c")])
    remove()
    remove()  # a second removal is harmless
    engine.append("t", 0, [rec(b"d")])
    assert seen == [("t", 1, 2), ("t", 0, 1)]


def test_a_listener_may_remove_itself(engine: Engine) -> None:
    engine.create_topic("t", 1)
    calls: list[str] = []
    removers: list[object] = []

    def once(topic: str, partition: int) -> None:
        calls.append("once")
        remover = removers[0]
        assert callable(remover)
        remover()

    removers.append(engine.add_listener(once))
    engine.add_listener(lambda t, p: calls.append("always"))
    engine.append("t", 0, [rec(b"1")])
    engine.append("t", 0, [rec(b"2")])
    assert calls == ["once", "always", "always"]


def test_closed_engine_refuses_changes(engine: Engine) -> None:
    engine.create_topic("t", 1)
    engine.close()
    engine.close()
    with pytest.raises(EngineError, match="closed") as exc:
        engine.append("t", 0, [rec(b"x")])
    assert code_of(exc) == "CLOSED"
    assert engine.high_watermark("t", 0) == 0


def test_error_carries_code_and_readable_message() -> None:
    err = EngineError("UNKNOWN_TOPIC", "there is no topic 'x'")
    assert err.code == "UNKNOWN_TOPIC"
    assert str(err) == "there is no topic 'x'"
    assert "UNKNOWN_TOPIC" in repr(err)


def test_bad_constructor_arguments() -> None:
    with pytest.raises(ValueError, match="unknown assignor 'sticky'"):
        Engine(assignor="sticky")
    with pytest.raises(ValueError, match="positive"):
        Engine(session_timeout_s=0)
