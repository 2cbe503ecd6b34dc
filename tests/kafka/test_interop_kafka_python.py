"""kafka-python (an independent client) against the reference broker, revision apache:
topic admin, produce with headers and acks=all, a group of two through a rebalance,
committed offsets honoured by a new consumer, and every compression codec."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from tests.kafka.interop import Seen, check_split, expected, values
from tests.support.broker import Broker

pytestmark = pytest.mark.slow


def _create(address: str, topic: str, partitions: int = 3) -> None:
    admin = KafkaAdminClient(bootstrap_servers=address, client_id="interop-admin")
    try:
        admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
        described = {t["name"]: t for t in admin.describe_topics([topic])}
        assert len(described[topic]["partitions"]) == partitions
    finally:
        admin.close()


def _produce(address: str, topic: str, indexes: range, compression: str | None = None) -> None:
    producer = KafkaProducer(
        bootstrap_servers=address, acks="all", compression_type=compression, linger_ms=5
    )
    try:
        for i in indexes:
            producer.send(
                topic,
                key=b"key-%d" % i,
                value=b"value-%d" % i,
                headers=[("index", str(i).encode()), ("origin", b"kafka-python")],
            )
        producer.flush(timeout=20)
    finally:
        producer.close(timeout=10)


def _consumer(address: str, topic: str, group: str | None) -> KafkaConsumer:
    return KafkaConsumer(
        topic,
        bootstrap_servers=address,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=300,
        max_poll_interval_ms=20000,
        fetch_max_wait_ms=200,
    )


def _poll_until(
    consumers: list[KafkaConsumer], seen: list[Seen], done: Callable[[], bool], within: float
) -> None:
    end = time.monotonic() + within
    while not done():
        assert time.monotonic() < end, f"timed out with {[len(s) for s in seen]} records"
        for consumer, got in zip(consumers, seen, strict=True):
            polled = consumer.poll(timeout_ms=100)
            for records in polled.values():
                for r in records:
                    got.append((r.partition, r.offset, r.value, list(r.headers)))
            if polled and consumer.config["group_id"] is not None:
                consumer.commit()  # records arrive only in a settled group (by design)


def _owned(consumer: KafkaConsumer) -> int:
    """How many partitions the consumer owns in a settled (stable) generation."""
    coordinator = consumer._coordinator
    if coordinator.rebalance_in_progress() or coordinator.need_rejoin():
        return 0
    return len(consumer.assignment())


def test_a_group_of_two_rebalances_when_one_leaves_and_commits_are_honoured(
    kafka: Broker,
) -> None:
    topic, group = f"kp-{uuid.uuid4().hex[:8]}", f"kp-group-{uuid.uuid4().hex[:8]}"
    _create(kafka.address, topic)

    a, b = _consumer(kafka.address, topic, group), _consumer(kafka.address, topic, group)
    seen_a: Seen = []
    seen_b: Seen = []
    try:
        # the group settles with both members before anything is produced, so each
        # record arrives in a stable generation and its commit succeeds
        _poll_until([a, b], [seen_a, seen_b], lambda: _owned(a) + _owned(b) == 3, within=60)
        assert _owned(a) and _owned(b), "both members own partitions"
        _produce(kafka.address, topic, range(0, 30))
        _poll_until([a, b], [seen_a, seen_b], lambda: len(seen_a) + len(seen_b) >= 30, within=60)
        check_split(seen_a, seen_b, range(30), b"kafka-python")

        b.close()  # leaves the group: a rebalances to own all three partitions
        seen_a.clear()
        _poll_until([a], [seen_a], lambda: _owned(a) == 3, within=60)
        _produce(kafka.address, topic, range(30, 60))
        _poll_until([a], [seen_a], lambda: len(seen_a) >= 30, within=60)
        assert values(seen_a) == expected(range(30, 60)), "lost or duplicated records"
    finally:
        a.close()
        b.close()

    _produce(kafka.address, topic, range(60, 90))
    c = _consumer(kafka.address, topic, group)
    seen_c: Seen = []
    try:
        _poll_until([c], [seen_c], lambda: len(seen_c) >= 30, within=60)
        time.sleep(0.5)
        _poll_until([c], [seen_c], lambda: True, within=5)
    finally:
        c.close()
    assert values(seen_c) == expected(range(60, 90)), "committed offsets were not honoured"


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_are_read_back_as_produced(kafka: Broker, compression: str) -> None:
    topic = f"kp-{compression}-{uuid.uuid4().hex[:8]}"
    _create(kafka.address, topic)
    _produce(kafka.address, topic, range(50), compression)
    consumer = _consumer(kafka.address, topic, None)
    seen: Seen = []
    try:
        _poll_until([consumer], [seen], lambda: len(seen) >= 50, within=30)
    finally:
        consumer.close()
    assert values(seen) == expected(range(50))
