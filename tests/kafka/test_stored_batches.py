"""What the Kafka broker does with a batch its topic's compression.type changes, as
Kafka's ``UnifiedLog.append`` and ``KafkaApis.handleFetchRequest`` do: a batch that grows
past max.message.bytes when recompressed is refused, and a Fetch below v10 of a zstd
topic is UNSUPPORTED_COMPRESSION_TYPE."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from conformance.protocols.kafka import records as rec
from conformance.protocols.kafka.errors import CODES
from tests.support import broker as support
from tests.support.kafka_client import KafkaConn as Conn

PRODUCE, FETCH, CREATE_TOPICS = 0, 1, 19


@pytest.fixture(scope="module")
def conn() -> Iterator[Conn]:
    b = support.start("--revision", "apache", protocol="kafka")
    c = Conn((b.host, b.port))
    try:
        yield c
    finally:
        c.close()
        b.stop()


def _topic(conn: Conn, **configs: str) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    cfg = [{"name": k.replace("_", "."), "value": v} for k, v in configs.items()]
    topic = {"name": name, "num_partitions": 1, "replication_factor": 1, "configs": cfg}
    reply = conn.call(CREATE_TOPICS, 5, {"topics": [topic], "timeout_ms": 1000})
    assert reply["topics"][0]["error_code"] == 0, reply
    return name


def _produce(conn: Conn, topic: str, data: bytes) -> Any:
    part = {"index": 0, "records": data}
    data_ = [{"name": topic, "partition_data": [part]}]
    body = {"acks": 1, "timeout_ms": 1000, "topic_data": data_}
    return conn.call(PRODUCE, 8, body)["responses"][0]["partition_responses"][0]


def _fetch(conn: Conn, topic: str, version: int) -> Any:
    parts = [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": parts}],
    }
    return conn.call(FETCH, version, body)["responses"][0]["partitions"][0]


def test_a_batch_that_grows_past_the_limit_when_decompressed_is_refused(conn: Conn) -> None:
    topic = _topic(conn, compression_type="uncompressed", max_message_bytes="2000")
    small = rec.encode_batch(rec.make_batch([bytes(50_000)], compression="gzip"))
    assert len(small) < 2000
    got = _produce(conn, topic, small)
    assert got["error_code"] == CODES["MESSAGE_TOO_LARGE"], got
    assert _fetch(conn, topic, 12)["high_watermark"] == 0


@pytest.mark.parametrize(("version", "error"), [(9, "UNSUPPORTED_COMPRESSION_TYPE"), (10, "NONE")])
def test_a_fetch_below_v10_of_a_zstd_topic_is_refused(conn: Conn, version: int, error: str) -> None:
    topic = _topic(conn, compression_type="zstd")
    assert _produce(conn, topic, rec.encode_batch(rec.make_batch([b"z"])))["error_code"] == 0
    got = _fetch(conn, topic, version)
    assert got["error_code"] == CODES[error], got
    if error == "NONE":
        (batch,) = rec.decode_batches(bytes(got["records"]))
        assert batch.compression_name == "zstd"
