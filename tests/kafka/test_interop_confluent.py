"""confluent-kafka (librdkafka, an independent C client) against the reference broker,
revision apache: topic admin, produce with headers and acks=all, a group of two through
a rebalance, committed offsets honoured by a new consumer, and every compression codec."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.kafka.interop import Seen, check_split, expected, values
from tests.support.broker import Broker

pytestmark = pytest.mark.slow


def _create(address: str, topic: str, partitions: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": address})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(20)
    assert len(admin.list_topics(topic, timeout=20).topics[topic].partitions) == partitions


def _produce(address: str, topic: str, indexes: range, compression: str = "none") -> None:
    producer = Producer(
        {
            "bootstrap.servers": address,
            "acks": "all",
            "compression.type": compression,
            "linger.ms": 5,
            "enable.idempotence": True,
        }
    )
    failed: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failed.append(str(err))

    for i in indexes:
        producer.produce(
            topic,
            key=b"key-%d" % i,
            value=b"value-%d" % i,
            headers=[("index", str(i).encode()), ("origin", b"librdkafka")],
            on_delivery=delivered,
        )
    assert producer.flush(30) == 0, "records left undelivered"
    assert not failed, failed


class Member:
    """A group consumer that knows when its group has settled (assigned, no revoke since)."""

    def __init__(self, address: str, topic: str, group: str | None) -> None:
        config = {
            "bootstrap.servers": address,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "fetch.wait.max.ms": 200,
            "group.id": group or f"unused-{uuid.uuid4().hex}",
        }
        self.consumer = Consumer(config)
        self.owned: list[TopicPartition] = []
        self.changed = time.monotonic()
        self.group = group
        if group is None:
            meta = self.consumer.list_topics(topic, timeout=20)
            parts = [TopicPartition(topic, p, 0) for p in meta.topics[topic].partitions]
            self.consumer.assign(parts)
            self.owned = parts
        else:
            self.consumer.subscribe([topic], on_assign=self._assigned, on_revoke=self._revoked)

    def _assigned(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        self.owned, self.changed = list(partitions), time.monotonic()

    def _revoked(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        self.owned, self.changed = [], time.monotonic()

    def settled(self) -> int:
        """Partitions owned for at least one second without a change (0 otherwise)."""
        return len(self.owned) if time.monotonic() - self.changed > 1.0 else 0

    def poll(self, got: Seen) -> None:
        messages = self.consumer.consume(100, timeout=0.1)
        for m in messages:
            assert m.error() is None, m.error()
            got.append((m.partition(), m.offset(), m.value(), list(m.headers() or [])))
        if messages and self.group is not None:
            self.consumer.commit(asynchronous=False)

    def close(self) -> None:
        self.consumer.close()


class Polling(Protocol):
    def poll(self, got: Seen) -> None: ...
    def settled(self) -> int: ...
    def close(self) -> None: ...


def _poll_until(
    members: Sequence[Polling], seen: list[Seen], done: Callable[[], bool], within: float
) -> None:
    end = time.monotonic() + within
    while not done():
        assert time.monotonic() < end, f"timed out with {[len(s) for s in seen]} records"
        for member, got in zip(members, seen, strict=True):
            member.poll(got)


def two_then_one(
    address: str,
    topic: str,
    join: Callable[[], Polling],
    partitions: int,
    batch: int,
    settle_within: float,
    both_own: Callable[[Any, Any], None] = lambda a, b: None,
) -> None:
    """Two members of a group share the topic; one leaves and the other takes over
    every partition; a third member, joining later, starts at the committed offsets.
    Each phase produces ``batch`` records and expects each one read once."""
    a, b = join(), join()
    seen_a: Seen = []
    seen_b: Seen = []
    try:
        _poll_until(
            [a, b], [seen_a, seen_b], lambda: a.settled() + b.settled() == partitions, settle_within
        )
        assert a.settled() and b.settled(), "both members own partitions"
        both_own(a, b)
        _produce(address, topic, range(0, batch))
        _poll_until([a, b], [seen_a, seen_b], lambda: len(seen_a) + len(seen_b) >= batch, 60)
        check_split(seen_a, seen_b, range(batch), b"librdkafka")

        b.close()  # leaves the group: a is given b's partitions
        seen_a.clear()
        _poll_until([a], [seen_a], lambda: a.settled() == partitions, within=60)
        _produce(address, topic, range(batch, 2 * batch))
        _poll_until([a], [seen_a], lambda: len(seen_a) >= batch, within=60)
        assert values(seen_a) == expected(range(batch, 2 * batch)), "lost or duplicated records"
    finally:
        a.close()
        with contextlib.suppress(RuntimeError):  # closed above unless something failed first
            b.close()

    _produce(address, topic, range(2 * batch, 3 * batch))
    c = join()
    seen_c: Seen = []
    try:
        _poll_until([c], [seen_c], lambda: len(seen_c) >= batch, within=settle_within)
        time.sleep(0.5)
        _poll_until([c], [seen_c], lambda: True, within=5)
    finally:
        c.close()
    assert values(seen_c) == expected(range(2 * batch, 3 * batch)), (
        "committed offsets were not honoured"
    )


def test_a_group_of_two_rebalances_when_one_leaves_and_commits_are_honoured(
    kafka: Broker,
) -> None:
    topic, group = f"rd-{uuid.uuid4().hex[:8]}", f"rd-group-{uuid.uuid4().hex[:8]}"
    _create(kafka.address, topic)
    two_then_one(kafka.address, topic, lambda: Member(kafka.address, topic, group), 3, 30, 90)


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_are_read_back_as_produced(kafka: Broker, compression: str) -> None:
    topic = f"rd-{compression}-{uuid.uuid4().hex[:8]}"
    _create(kafka.address, topic)
    _produce(kafka.address, topic, range(50), compression)
    reader = Member(kafka.address, topic, None)
    seen: Seen = []
    try:
        _poll_until([reader], [seen], lambda: len(seen) >= 50, within=30)
    finally:
        reader.close()
    assert values(seen) == expected(range(50))
