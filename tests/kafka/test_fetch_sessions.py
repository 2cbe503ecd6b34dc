"""KIP-227 fetch sessions on the reference broker: the session cache's eviction rules
(sans-IO, a clock of our own) and the Fetch handler with its sessions, in process."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.engine import Engine
from conformance.protocols.kafka import fetch_sessions as fs
from conformance.protocols.kafka import records as rec
from conformance.protocols.kafka.broker import KafkaFrontend
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import Broker, KafkaConfig
from conformance.protocols.kafka.handlers import HANDLERS

NOT_FOUND, BAD_EPOCH, TOPIC_ID_ERROR = 70, 71, 106

# ------------------------------------------------------------------ the cache alone


def _parts(n: int) -> dict[fs.Key, fs.Cached]:
    return {(f"t{i}", 0): fs.Cached(f"t{i}", fs.ZERO_ID, {"partition": 0}) for i in range(n)}


def test_next_epoch_counts_up_wraps_to_1_and_stays_final() -> None:
    assert fs.next_epoch(0) == 1
    assert fs.next_epoch(41) == 42
    assert fs.next_epoch(fs.INT32_MAX) == 1
    assert fs.next_epoch(-1) == -1 and fs.next_epoch(-7) == -1


def test_a_full_cache_refuses_a_new_session_it_cannot_evict() -> None:
    cache = fs.SessionCache(slots=2, seed=1)
    a, b = cache.create(0, False, False, _parts(1)), cache.create(0, False, False, _parts(1))
    assert a > 0 and b > 0 and a != b
    # nothing is stale (unused 120 s) or old (created 120 s ago): no room
    assert cache.create(60_000, False, False, _parts(5)) == fs.INVALID_SESSION_ID
    assert set(cache.sessions) == {a, b}


def test_the_least_recently_used_session_unused_for_120_s_is_evicted() -> None:
    cache = fs.SessionCache(slots=2, seed=2)
    a = cache.create(0, False, False, _parts(3))
    b = cache.create(1_000, False, False, _parts(3))
    cache.touch(cache.sessions[a], 2_000)  # a used later: b is the least recently used
    c = cache.create(121_500, False, False, _parts(1))
    assert c > 0 and set(cache.sessions) == {a, c} and b not in cache.sessions
    assert cache.evictions == 1


def test_an_old_session_is_evicted_by_a_bigger_one_not_by_a_smaller_one() -> None:
    cache = fs.SessionCache(slots=1, seed=3)
    a = cache.create(0, False, False, _parts(2))
    cache.touch(cache.sessions[a], 120_001)  # used: not stale; old: evictable by all
    assert cache.create(130_000, False, False, _parts(2)) == fs.INVALID_SESSION_ID  # not bigger
    b = cache.create(130_000, False, False, _parts(3))
    assert b > 0 and set(cache.sessions) == {b}


def test_a_privileged_session_evicts_a_young_unprivileged_one_but_not_the_reverse() -> None:
    cache = fs.SessionCache(slots=1, seed=4)
    a = cache.create(0, False, False, _parts(10))
    follower = cache.create(1_000, True, False, _parts(1))  # privileged beats unprivileged
    assert follower > 0 and set(cache.sessions) == {follower}
    assert cache.create(2_000, False, False, _parts(50)) == fs.INVALID_SESSION_ID
    assert a not in cache.sessions


def test_session_ids_are_positive_and_unique() -> None:
    cache = fs.SessionCache(slots=500, seed=5)
    ids = {cache.create(0, False, False, _parts(1)) for _ in range(500)}
    assert len(ids) == 500 and min(ids) > 0 and max(ids) <= fs.INT32_MAX


# ------------------------------------------------------------------ the broker, in process


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def broker() -> Broker:
    return KafkaFrontend(Engine(), KafkaConfig(revision="apache"), Clock()).broker


def _call(broker: Broker, key: int, version: int, body: dict[str, Any]) -> Any:
    answer = HANDLERS[key](broker, Request(key, version, 1, "t", body), "127.0.0.1:1")
    if isinstance(answer, dict):
        return answer
    body_out = answer.poll(answer.deadline)  # type: ignore[union-attr]
    assert body_out is not None
    return body_out


def _topic(broker: Broker, name: str, partitions: int = 2) -> str:
    topics = [{"name": name, "num_partitions": partitions, "replication_factor": 1}]
    _call(broker, 19, 4, {"topics": topics, "timeout_ms": 1000})
    return name


def _produce(broker: Broker, topic: str, partition: int, value: bytes) -> None:
    data = rec.encode_batch(rec.make_batch([value]))
    part = {"index": partition, "records": data}
    body = {
        "acks": 1,
        "timeout_ms": 1000,
        "topic_data": [{"name": topic, "partition_data": [part]}],
    }
    _call(broker, 0, 3, body)


def _fetch(
    broker: Broker,
    sid: int,
    epoch: int,
    parts: dict[int, int],
    *,
    topic: str = "s",
    version: int = 12,
    forget: list[int] | None = None,
) -> Any:
    ref = {"topic_id": broker.topic_id(topic)} if version >= 13 else {"topic": topic}
    asked = [
        {"partition": p, "fetch_offset": o, "partition_max_bytes": 1 << 20}
        for p, o in parts.items()
    ]
    body: dict[str, Any] = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "session_id": sid,
        "session_epoch": epoch,
        "topics": [{**ref, "partitions": asked}] if asked else [],
        "forgotten_topics_data": [{**ref, "partitions": forget}] if forget else [],
    }
    return _call(broker, 1, version, body)


def _answered(reply: Any) -> dict[int, Any]:
    return {p["partition_index"]: p for t in reply["responses"] for p in t["partitions"]}


def test_a_full_fetch_at_epoch_0_creates_a_session_and_final_does_not(broker: Broker) -> None:
    _topic(broker, "s")
    full = _fetch(broker, 0, 0, {0: 0, 1: 0})
    assert full["error_code"] == 0 and full["session_id"] > 0
    assert sorted(_answered(full)) == [0, 1]
    sessionless = _fetch(broker, 0, -1, {0: 0})
    assert sessionless["session_id"] == 0 and sorted(_answered(sessionless)) == [0]
    old = _fetch(broker, 0, 0, {0: 0}, version=6)  # v0-6 have no sessions
    assert "session_id" not in old or old["session_id"] == 0


def test_an_incremental_fetch_answers_only_what_changed(broker: Broker) -> None:
    _topic(broker, "s")
    sid = _fetch(broker, 0, 0, {0: 0, 1: 0})["session_id"]
    quiet = _fetch(broker, sid, 1, {})
    assert quiet["error_code"] == 0 and quiet["session_id"] == sid and quiet["responses"] == []
    _produce(broker, "s", 1, b"new")
    news = _fetch(broker, sid, 2, {})
    got = _answered(news)
    assert list(got) == [1] and got[1]["high_watermark"] == 1 and got[1]["records"]
    # the fetch offset is not advanced by the broker: the client names the partition again
    again = _answered(_fetch(broker, sid, 3, {1: 1}))
    assert again == {}
    assert _answered(_fetch(broker, sid, 4, {})) == {}


def test_unknown_ids_wrong_epochs_and_a_topic_id_switch_are_refused(broker: Broker) -> None:
    _topic(broker, "s")
    sid = _fetch(broker, 0, 0, {0: 0})["session_id"]
    unknown = _fetch(broker, sid + 1 if sid < fs.INT32_MAX else 1, 1, {})
    assert (unknown["error_code"], unknown["session_id"], unknown["responses"]) == (
        NOT_FOUND,
        0,
        [],
    )
    assert _fetch(broker, 0, 5, {0: 0})["error_code"] == NOT_FOUND  # id 0, epoch > 0
    wrong = _fetch(broker, sid, 2, {})
    assert (wrong["error_code"], wrong["session_id"]) == (BAD_EPOCH, 0)
    switched = _fetch(broker, sid, 1, {}, version=13)
    assert (switched["error_code"], switched["session_id"]) == (TOPIC_ID_ERROR, 0)
    assert _fetch(broker, sid, 1, {})["error_code"] == 0  # the refusals left the epoch alone


def test_final_epoch_closes_a_session_and_forgetting_everything_does_too(broker: Broker) -> None:
    _topic(broker, "s")
    sid = _fetch(broker, 0, 0, {0: 0, 1: 0})["session_id"]
    closed = _fetch(broker, sid, -1, {0: 0})
    assert closed["session_id"] == 0 and sorted(_answered(closed)) == [0]
    assert _fetch(broker, sid, 1, {})["error_code"] == NOT_FOUND
    sid = _fetch(broker, 0, 0, {0: 0, 1: 0})["session_id"]
    partly = _fetch(broker, sid, 1, {}, forget=[0])
    assert partly["session_id"] == sid
    _produce(broker, "s", 0, b"forgotten")
    assert _answered(_fetch(broker, sid, 2, {})) == {}  # partition 0 is no longer in it
    empty = _fetch(broker, sid, 3, {}, forget=[1])
    assert empty["session_id"] == 0 and empty["error_code"] == 0
    assert _fetch(broker, sid, 4, {})["error_code"] == NOT_FOUND


def test_a_new_full_fetch_naming_a_session_replaces_it(broker: Broker) -> None:
    _topic(broker, "s")
    sid = _fetch(broker, 0, 0, {0: 0})["session_id"]
    renewed = _fetch(broker, sid, 0, {0: 0})
    assert renewed["session_id"] > 0 and renewed["session_id"] != sid
    assert _fetch(broker, sid, 1, {})["error_code"] == NOT_FOUND


def test_sessions_by_topic_id_from_v13(broker: Broker) -> None:
    _topic(broker, "s")
    sid = _fetch(broker, 0, 0, {0: 0, 1: 0}, version=13)["session_id"]
    _produce(broker, "s", 0, b"x")
    got = _fetch(broker, sid, 1, {}, version=13)
    assert [t["topic_id"] for t in got["responses"]] == [broker.topic_id("s")]
    assert list(_answered(got)) == [0]
    assert _fetch(broker, sid, 2, {}, version=12)["error_code"] == TOPIC_ID_ERROR


def test_an_error_partition_is_always_answered(broker: Broker) -> None:
    _topic(broker, "s")
    sid = _fetch(broker, 0, 0, {0: 50})["session_id"]  # offset out of range
    for epoch in (1, 2):
        got = _answered(_fetch(broker, sid, epoch, {}))
        assert got[0]["error_code"] == 1


def test_an_overtaken_incremental_fetch_is_refused_with_the_session_id(broker: Broker) -> None:
    _topic(broker, "s")
    sid = _fetch(broker, 0, 0, {0: 0})["session_id"]
    body = {"max_wait_ms": 500, "min_bytes": 1, "session_id": sid, "session_epoch": 1, "topics": []}
    waiting = HANDLERS[1](broker, Request(1, 12, 1, "t", body), "p")
    assert _fetch(broker, sid, 2, {})["error_code"] == 0  # another fetch of the session
    late = waiting.poll(waiting.deadline)  # type: ignore[union-attr]
    assert late is not None and (late["error_code"], late["session_id"]) == (BAD_EPOCH, sid)


def test_the_cache_is_per_broker_and_bounded(broker: Broker) -> None:
    cache = fs.cache_of(broker)
    assert cache is fs.cache_of(broker) and cache.slots == fs.SLOTS
    other = KafkaFrontend(Engine(), KafkaConfig(revision="apache"), Clock()).broker
    assert fs.cache_of(other) is not cache
    _topic(broker, "s")
    cache.slots = 1
    assert _fetch(broker, 0, 0, {0: 0})["session_id"] > 0
    assert _fetch(broker, 0, 0, {0: 0})["session_id"] == 0  # full, nothing evictable


def test_random_session_traffic_always_gets_an_answer_the_codec_writes(broker: Broker) -> None:
    """Seeded random fetches (full, final, incremental at right and wrong epochs, named,
    forgotten and unknown partitions, both sides of v13) with produces between: every
    answer encodes at its version, and a session's answer names the session or none."""
    import random

    from conformance.protocols.kafka import codec

    rng = random.Random(25)
    _topic(broker, "s", partitions=3)
    sessions: dict[int, tuple[int, int]] = {}  # id -> (next epoch, version)
    for step in range(1500):
        if rng.random() < 0.15:
            _produce(broker, "s", rng.randrange(3), b"v%d" % step)
            continue
        version = rng.choice([7, 11, 12, 13, 16])
        parts = {p: rng.randrange(0, 6) for p in rng.sample(range(5), rng.randrange(0, 4))}
        forget = rng.sample(range(5), rng.randrange(0, 3))
        if sessions and rng.random() < 0.6:
            sid, (epoch, _) = rng.choice(sorted(sessions.items()))
            epoch = epoch if rng.random() < 0.8 else rng.choice([epoch + 1, 7, -3])
        else:
            sid, epoch = rng.choice([0, 0, 0, 99]), rng.choice([0, 0, -1])
        reply = _fetch(broker, sid, epoch, parts, version=version, forget=forget)
        codec.encode_response(1, version, 1, reply)
        got = reply["session_id"]
        if epoch == 0 and got > 0:
            sessions[got] = (1, version)
        if sid in sessions and epoch not in (0, -1):
            if reply["error_code"] == 0 and got == sid:
                sessions[sid] = (fs.next_epoch(epoch), sessions[sid][1])
            elif reply["error_code"] == 0:
                del sessions[sid]  # forgot its last partition
        if sid in sessions and epoch in (0, -1):
            del sessions[sid]
        assert got in (0, sid) or epoch == 0, (step, sid, epoch, got)
