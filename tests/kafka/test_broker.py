"""The Kafka front-end of the reference broker, request by request over a socket: the
error code of each failure, hostile values that break real servers, the revisions'
differences on the wire, long-poll Fetch and idempotent produce."""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.protocols.kafka import codec
from conformance.protocols.kafka import records as rec
from tests.support import broker as support
from tests.support.kafka_client import KafkaConn as Conn

PRODUCE, FETCH, METADATA, API_VERSIONS, CREATE_TOPICS = 0, 1, 3, 18, 19


@pytest.fixture(scope="module", params=["apache", "doc"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, tuple[str, int]]]:
    b = support.start("--revision", request.param, protocol="kafka")
    try:
        yield request.param, (b.host, b.port)
    finally:
        b.stop()


@pytest.fixture
def conn(served: tuple[str, tuple[str, int]]) -> Iterator[Conn]:
    c = Conn(served[1])
    yield c
    c.close()


def _topic(conn: Conn, partitions: int = 1) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    topics = [{"name": name, "num_partitions": partitions, "replication_factor": 1}]
    reply = conn.call(CREATE_TOPICS, 1, {"topics": topics, "timeout_ms": 1000})
    assert reply["topics"][0]["error_code"] == 0
    return name


def _produce(conn: Conn, topic: str, records: bytes, partition: int = 0, acks: int = 1) -> Any:
    part = {"index": partition, "records": records}
    body = {
        "acks": acks,
        "timeout_ms": 1000,
        "topic_data": [{"name": topic, "partition_data": [part]}],
    }
    return conn.call(PRODUCE, 3, body)["responses"][0]["partition_responses"][0]


def _fetch_body(topic: str, offset: int, wait_ms: int = 0, min_bytes: int = 0) -> dict[str, Any]:
    parts = [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]
    return {
        "replica_id": -1,
        "max_wait_ms": wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": 1 << 20,
        "topics": [{"topic": topic, "partitions": parts}],
    }


def test_a_negative_partition_index_is_unknown_and_the_broker_keeps_serving(conn: Conn) -> None:
    """KAF-PRODUCE-3: the value that makes pgcdc panic gets an error code here."""
    topic = _topic(conn)
    got = _produce(conn, topic, rec.encode_batch(rec.make_batch([b"x"])), partition=-1)
    assert got["error_code"] == 3
    body = _fetch_body(topic, 0)
    body["topics"][0]["partitions"][0]["partition"] = -7
    fetched = conn.call(FETCH, 4, body)
    assert fetched["responses"][0]["partitions"][0]["error_code"] == 3
    assert conn.call(API_VERSIONS, 0, {})["error_code"] == 0


def test_a_stale_crc_and_a_count_that_lies_are_refused_and_nothing_is_stored(
    served: tuple[str, tuple[str, int]], conn: Conn
) -> None:
    """KAF-REC-2, KAF-REC-3: a stale CRC is CORRUPT_MESSAGE; a count that lies is
    CORRUPT_MESSAGE in doc and INVALID_RECORD (87) in apache, as Apache Kafka answers."""
    topic = _topic(conn)
    good = bytearray(rec.encode_batch(rec.make_batch([b"a", b"b"])))
    stale = bytes(good[:-1]) + bytes([good[-1] ^ 1])
    assert _produce(conn, topic, stale)["error_code"] == 2
    lying = bytearray(good)
    lying[57:61] = struct.pack(">i", 1000)  # 1000 records claimed, 2 present
    from crc32c import crc32c

    lying[17:21] = crc32c(bytes(lying[21:])).to_bytes(4, "big")
    expected = 2 if served[0] == "doc" else 87
    assert _produce(conn, topic, bytes(lying))["error_code"] == expected
    hwm = conn.call(FETCH, 4, _fetch_body(topic, 0))["responses"][0]["partitions"][0]
    assert hwm["high_watermark"] == 0, "a refused batch stored records"


def test_an_oversize_or_negative_size_prefix_closes_the_connection(
    served: tuple[str, tuple[str, int]],
) -> None:
    """KAF-FRAME-3."""
    for prefix in (struct.pack(">i", -5), struct.pack(">i", 0x7FFFFFFF)):
        c = Conn(served[1])
        c.raw(prefix)
        assert c.frame(timeout=3) is None
        c.close()


def test_a_lying_array_count_closes_the_connection_without_allocating(
    served: tuple[str, tuple[str, int]],
) -> None:
    """KAF-REC-3 (and the codec's bound): 2**31-1 topics claimed in a 4-byte body."""
    c = Conn(served[1])
    head = struct.pack(">hhih", METADATA, 0, 9, 1) + b"x"
    c.raw(codec.frame(head + struct.pack(">i", 0x7FFFFFFF)))
    assert c.frame(timeout=3) is None
    c.close()
    other = Conn(served[1])
    assert other.call(API_VERSIONS, 0, {})["error_code"] == 0
    other.close()


def test_an_unknown_api_key_is_answered_as_the_revision_says(
    served: tuple[str, tuple[str, int]],
) -> None:
    """KAF-VER-4 (doc: a bare int16 35) and KAF-VER-5 (apache: the connection closed)."""
    revision, address = served
    c = Conn(address)
    c.raw(codec.frame(struct.pack(">hhih", 999, 0, 77, -1)))
    got = c.frame(timeout=3)
    c.close()
    if revision == "doc":
        assert got == struct.pack(">ih", 77, 35)
    else:
        assert got is None


def test_an_unsupported_api_versions_version_is_answered_at_v0(
    served: tuple[str, tuple[str, int]], conn: Conn
) -> None:
    """KAF-VER-3: error 35 and versions to ask again at: every API's in doc, ApiVersions'
    alone in apache (Apache Kafka's ApiVersionsRequest.getErrorResponse)."""
    conn.raw(codec.frame(struct.pack(">hhih", API_VERSIONS, 99, 5, -1)))
    payload = conn.frame()
    assert payload is not None
    corr, body = codec.decode_response(payload, API_VERSIONS, 0)
    assert (corr, body["error_code"]) == (5, 35)
    listed = {a["api_key"] for a in body["api_keys"]}
    if served[0] == "doc":
        assert listed >= {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 18}
    else:
        assert listed == {18}


def test_response_headers_follow_the_revision(served: tuple[str, tuple[str, int]]) -> None:
    """KAF-HDR-3 (apache: header v1 for a flexible version) and KAF-HDR-4 (doc: v0)."""
    revision, address = served
    c = Conn(address)
    header = 0 if revision == "doc" else 1
    body = c.call(METADATA, 12, {"topics": None}, header=header)
    assert body["brokers"][0]["port"] == address[1]
    c.close()


def test_acks_0_gets_no_response_but_is_stored(conn: Conn) -> None:
    """KAF-PRODUCE-2."""
    topic = _topic(conn)
    part = {"index": 0, "records": rec.encode_batch(rec.make_batch([b"quiet"]))}
    data = [{"name": topic, "partition_data": [part]}]
    conn.send(PRODUCE, 3, {"acks": 0, "timeout_ms": 1000, "topic_data": data})
    reply = conn.call(FETCH, 4, _fetch_body(topic, 0))  # answered next: nothing came between
    data = reply["responses"][0]["partitions"][0]["records"]
    assert [r.value for b in rec.decode_batches(data) for r in b.records] == [b"quiet"]


def _idempotent(values: list[bytes], sequence: int) -> bytes:
    batch = rec.make_batch(values, producer_id=7, producer_epoch=0, base_sequence=sequence)
    return rec.encode_batch(batch)


def test_an_idempotent_resend_is_stored_once_and_a_gap_is_out_of_order(conn: Conn) -> None:
    """KAF-PRODUCE-4."""
    topic = _topic(conn)
    first = _idempotent([b"a", b"b"], 0)
    assert _produce(conn, topic, first)["base_offset"] == 0
    again = _produce(conn, topic, first)
    assert (again["error_code"], again["base_offset"]) == (0, 0)
    gap = _idempotent([b"c"], 5)
    assert _produce(conn, topic, gap)["error_code"] == 45
    nxt = _idempotent([b"c"], 2)
    assert _produce(conn, topic, nxt)["base_offset"] == 2


def test_a_long_poll_fetch_answers_when_data_arrives(served: tuple[str, tuple[str, int]]) -> None:
    """KAF-FETCH-1: waits up to max_wait_ms, and answers as soon as min_bytes arrive."""
    waiter, producer = Conn(served[1]), Conn(served[1])
    topic = _topic(producer)
    started = time.monotonic()
    waiter.send(FETCH, 4, _fetch_body(topic, 0, wait_ms=300, min_bytes=1))
    assert waiter.frame() is not None
    assert 0.25 <= time.monotonic() - started < 3, "no data: answered at max_wait_ms"
    started = time.monotonic()
    corr = waiter.send(FETCH, 4, _fetch_body(topic, 0, wait_ms=20_000, min_bytes=1))
    time.sleep(0.2)
    _produce(producer, topic, rec.encode_batch(rec.make_batch([b"wake"])))
    payload = waiter.frame()
    assert payload is not None and time.monotonic() - started < 5
    got, body = codec.decode_response(payload, FETCH, 4)
    assert got == corr
    data = body["responses"][0]["partitions"][0]["records"]
    assert [r.value for b in rec.decode_batches(data) for r in b.records] == [b"wake"]
    waiter.close()
    producer.close()


def test_a_fetch_outside_the_log_is_offset_out_of_range(conn: Conn) -> None:
    """KAF-FETCH-2."""
    topic = _topic(conn)
    for offset in (-1, 5):
        part = conn.call(FETCH, 4, _fetch_body(topic, offset))["responses"][0]["partitions"][0]
        assert part["error_code"] == 1


def test_doc_advertises_only_versions_its_header_v0_fits(
    served: tuple[str, tuple[str, int]],
) -> None:
    """pgcdc answers with header v0 everywhere, so revision doc advertises no flexible
    version but ApiVersions' (clients then pick versions whose responses they can read);
    apache advertises every declared version.  Both serve the document's table
    (KAF-VER-2)."""
    from conformance.protocols.kafka.apis import APIS

    revision, address = served
    c = Conn(address)
    keys = {a["api_key"]: a for a in c.call(API_VERSIONS, 3, {})["api_keys"]}
    c.close()
    for key, api in APIS.items():
        if revision == "doc" and api.flexible_from == api.low and key != API_VERSIONS:
            assert key not in keys, api.name  # flexible from its first version: not in doc
            continue
        high = keys[key]["max_version"]
        if revision == "apache" or key == API_VERSIONS:
            assert high == api.high
        else:
            assert api.flexible_from is None or high < api.flexible_from, api.name
    table = {18: 3, 3: 0, 10: 0, 11: 0, 14: 0, 12: 0, 13: 0, 2: 1, 1: 0, 8: 2, 9: 0}
    for key, version in table.items():
        assert keys[key]["min_version"] <= version <= keys[key]["max_version"]


def test_the_metadata_that_creates_a_topic_answers_as_kafka_does(
    served: tuple[str, tuple[str, int]], conn: Conn
) -> None:
    """Revision apache answers the Metadata request that auto-creates a topic as Kafka (KRaft)
    does, UNKNOWN_TOPIC_OR_PARTITION with no partitions (AutoTopicCreationManager); doc
    lists it at once.  Either way the topic exists from then: the next Metadata lists it and
    a Produce to it is served."""
    revision = served[0]
    name = f"auto-{uuid.uuid4().hex[:8]}"
    ask = {"topics": [{"name": name}], "allow_auto_topic_creation": True}
    first = conn.call(METADATA, 4, ask)["topics"][0]
    if revision == "apache":
        assert (first["error_code"], first["partitions"]) == (3, [])
    else:
        assert (first["error_code"], len(first["partitions"])) == (0, 1)
    assert _produce(conn, name, rec.encode_batch(rec.make_batch([b"v"])))["error_code"] == 0
    again = conn.call(METADATA, 4, ask)["topics"][0]
    assert (again["error_code"], len(again["partitions"])) == (0, 1)


def test_metadata_v10_and_v11_may_not_ask_by_topic_id(
    served: tuple[str, tuple[str, int]], conn: Conn
) -> None:
    """Topic ids in a Metadata request are served from v12: at v10-11 Kafka answers every
    topic INVALID_REQUEST (handleTopicMetadataRequest, MetadataRequest.getErrorResponse)."""
    if served[0] == "doc":  # it never gets there: no flexible Metadata version is advertised
        keys = conn.call(18, 0, {})["api_keys"]
        (metadata,) = [k for k in keys if k["api_key"] == METADATA]
        assert metadata["max_version"] < 9, metadata
        return
    tid = str(uuid.uuid4())
    body = {"topics": [{"name": None, "topic_id": tid}], "allow_auto_topic_creation": False}
    for version in (10, 11):
        reply = conn.call(METADATA, version, body, header=1)
        assert [t["error_code"] for t in reply["topics"]] == [42]
    found = conn.call(METADATA, 12, body, header=1)["topics"]
    assert [t["error_code"] for t in found] == [100], "v12: an unknown id is UNKNOWN_TOPIC_ID"


def test_leave_group_of_a_group_that_does_not_exist(conn: Conn) -> None:
    """Kafka's classicGroupLeave: UNKNOWN_MEMBER_ID for the whole request, at every version."""
    group = f"ghost-{uuid.uuid4().hex[:8]}"
    old = conn.call(13, 1, {"group_id": group, "member_id": "nobody"})
    assert old["error_code"] == 25
    members = [{"member_id": "nobody", "group_instance_id": None}]
    new = conn.call(13, 3, {"group_id": group, "members": members})
    assert (new["error_code"], new["members"]) == (25, [])


def test_producer_ids_keep_growing_across_a_restart_with_a_journal(tmp_path: Path) -> None:
    """With --data-dir the journal remembers producers' sequences: a producer id given
    again after a restart would make a new producer's first batch out of order."""
    ids = []
    for _ in range(2):
        b = support.start("--data-dir", str(tmp_path), protocol="kafka")
        try:
            c = Conn((b.host, b.port))
            ids.append(c.call(22, 0, {"transactional_id": None})["producer_id"])
            c.close()
        finally:
            b.stop()
    assert ids[1] > ids[0] >= 0


def test_a_compressed_batch_past_the_size_limit_is_too_large_and_the_broker_stays_fast(
    conn: Conn, served: tuple[str, tuple[str, int]]
) -> None:
    """A small zstd batch of a million empty records (7 MB decompressed) is refused with
    MESSAGE_TOO_LARGE within the resource limit, not decoded into a million objects
    while every connection waits (the review measured a 6 s stall before the limit)."""
    topic = _topic(conn)
    bomb = rec.encode_batch(rec.make_batch([b""] * 1_000_000, compression="zstd"))
    assert len(bomb) < 1 << 20
    started = time.monotonic()
    assert _produce(conn, topic, bomb)["error_code"] == 10
    assert time.monotonic() - started < 2
    other = Conn(served[1])
    assert other.call(API_VERSIONS, 0, {})["error_code"] == 0
    other.close()


def test_a_fetch_error_is_answered_at_once_not_at_max_wait(conn: Conn) -> None:
    """An unknown topic or an offset out of range is answered without the long poll."""
    topic = _topic(conn)
    for body in (_fetch_body("no-such-topic", 0, 5000, 1), _fetch_body(topic, 9, 5000, 1)):
        started = time.monotonic()
        part = conn.call(FETCH, 4, body)["responses"][0]["partitions"][0]
        assert part["error_code"] in (1, 3)
        assert time.monotonic() - started < 2


def test_fetch_v3_plus_returns_the_first_batch_even_with_a_limit_of_0(conn: Conn) -> None:
    """KIP-74: a consumer whose limit is smaller than a batch still gets that batch."""
    topic = _topic(conn)
    _produce(conn, topic, rec.encode_batch(rec.make_batch([b"x" * 500])))
    body = _fetch_body(topic, 0)
    body["max_bytes"] = 0
    body["topics"][0]["partitions"][0]["partition_max_bytes"] = 0
    data = conn.call(FETCH, 4, body)["responses"][0]["partitions"][0]["records"]
    assert [r.value for b in rec.decode_batches(data) for r in b.records] == [b"x" * 500]


def test_init_producer_id_gives_an_unknown_producer_a_new_id(
    conn: Conn, served: tuple[str, tuple[str, int]]
) -> None:
    """An idempotent producer asking again with its id and epoch is not fenced (no
    transactions here): doc bumps a known id's epoch; apache hands out a new id at epoch 0,
    as Apache Kafka does for a null transactional id.  Only one of id and epoch given is
    INVALID_REQUEST."""
    header = 0 if served[0] == "doc" else None  # v3 is flexible: doc answers header v0
    body = {"transactional_id": None, "producer_id": 123, "producer_epoch": 4}
    fresh = conn.call(22, 3, body, header)
    assert fresh["error_code"] == 0 and fresh["producer_id"] != 123
    body = {"transactional_id": None, "producer_id": fresh["producer_id"], "producer_epoch": 0}
    again = conn.call(22, 3, body, header)
    if served[0] == "doc":
        assert (again["producer_id"], again["producer_epoch"]) == (fresh["producer_id"], 1)
    else:
        assert again["producer_id"] not in (123, fresh["producer_id"])
        assert again["producer_epoch"] == 0
    body = {"transactional_id": None, "producer_id": -1, "producer_epoch": 3}
    half = conn.call(22, 3, body, header)
    assert half["error_code"] == 42


def test_a_refused_acks_0_produce_closes_the_connection(conn: Conn) -> None:
    part = {"index": 0, "records": rec.encode_batch(rec.make_batch([b"x"]))}
    data = [{"name": "no-such-topic", "partition_data": [part]}]
    conn.send(PRODUCE, 3, {"acks": 0, "timeout_ms": 1000, "topic_data": data})
    assert conn.frame(timeout=3) is None


def test_an_unknown_coordinator_key_type_and_an_empty_group_id_are_refused(conn: Conn) -> None:
    """Kafka answers INVALID_REQUEST (42) and INVALID_GROUP_ID (24) here."""
    assert conn.call(10, 1, {"key": "g", "key_type": 9})["error_code"] == 42
    assert conn.call(10, 1, {"key": "g", "key_type": 0})["error_code"] == 0
    groups = conn.call(15, 0, {"groups": ["", "nobody"]})["groups"]
    assert [(g["error_code"], g["group_state"]) for g in groups] == [(24, "Dead"), (0, "Dead")]


def test_list_offsets_by_timestamp_finds_the_first_record_at_or_after_it(
    conn: Conn, served: tuple[str, tuple[str, int]]
) -> None:
    """KAF-OFFSET-2 and Kafka's lookup by time, over timestamps that do not ascend,
    checked against a scan; -3 (v7+) is the record with the largest timestamp."""
    topic = _topic(conn)
    stamps = [5, 3, 9, 7, 9, 1]
    batch = rec.make_batch([b"%d" % s for s in stamps], timestamps=stamps)
    _produce(conn, topic, rec.encode_batch(batch))
    header = 0 if served[0] == "doc" else None

    def lookup(version: int, timestamp: int) -> tuple[int, int]:
        parts = [{"partition_index": 0, "timestamp": timestamp}]
        body = {"replica_id": -1, "topics": [{"name": topic, "partitions": parts}]}
        got = conn.call(2, version, body, header)["topics"][0]["partitions"][0]
        return got["offset"], got["timestamp"]

    for t in range(0, 11):
        first = next((i for i, s in enumerate(stamps) if s >= t), -1)
        assert lookup(1, t) == (first, stamps[first] if first >= 0 else -1), t
    assert lookup(7, -3) == (2, 9)
    assert lookup(1, -1)[0] == len(stamps) and lookup(1, -2)[0] == 0


def test_list_offsets_earliest_local_and_latest_tiered(
    served: tuple[str, tuple[str, int]], conn: Conn
) -> None:
    """Without remote storage (Kafka's UnifiedLog.fetchOffsetByTimestamp): -4, the earliest
    local offset, is the log start offset DeleteRecords moved; -5, the latest tiered
    offset, is -1 with leader epoch -1."""
    name = f"tiers-{uuid.uuid4().hex[:8]}"
    conn.call(3, 4, {"topics": [{"name": name}], "allow_auto_topic_creation": True})
    assert _produce(conn, name, rec.encode_batch(rec.make_batch([b"a", b"b", b"c"]))) is not None
    parts = [{"partition_index": 0, "offset": 2}]
    deleted = conn.call(21, 1, {"topics": [{"name": name, "partitions": parts}], "timeout_ms": 1})
    assert deleted["topics"][0]["partitions"][0]["error_code"] == 0
    got = {}
    for ts in (-2, -4, -5):
        asked = [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": ts}]
        body = {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [{"name": name, "partitions": asked}],
        }
        header = 0 if served[0] == "doc" else 1  # doc answers response header v0 everywhere
        p = conn.call(2, 9, body, header=header)["topics"][0]["partitions"][0]
        got[ts] = (p["error_code"], p["offset"], p["leader_epoch"])
    assert got == {-2: (0, 2, 0), -4: (0, 2, 0), -5: (0, -1, -1)}
