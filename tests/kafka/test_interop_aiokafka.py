"""aiokafka (an independent asyncio client) against the reference broker, revision apache:
topic admin, produce with headers and acks=all, a group of two through a rebalance,
committed offsets honoured by a new consumer, and every compression codec."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.kafka.interop import Seen, check_split, expected, values
from tests.support.broker import Broker

pytestmark = pytest.mark.slow


async def _create(address: str, topic: str, partitions: int = 3) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=address)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
        assert topic in await admin.list_topics()
    finally:
        await admin.close()


async def _produce(
    address: str, topic: str, indexes: range, compression: str | None = None
) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=address, acks="all", compression_type=compression, linger_ms=5
    )
    await producer.start()
    try:
        sent = [
            await producer.send(
                topic,
                key=b"key-%d" % i,
                value=b"value-%d" % i,
                headers=[("index", str(i).encode()), ("origin", b"aiokafka")],
            )
            for i in indexes
        ]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()


def _consumer(address: str, topic: str, group: str | None) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
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


def _settled(consumer: AIOKafkaConsumer) -> int:
    """Partitions the consumer owns once its group is settled (0 while it rebalances)."""
    coordinator = consumer._coordinator
    if coordinator is not None and (coordinator.need_rejoin(consumer._subscription.subscription)):
        return 0
    return len(consumer.assignment())


async def _poll_until(
    consumers: list[AIOKafkaConsumer], seen: list[Seen], done: Callable[[], bool], within: float
) -> None:
    end = time.monotonic() + within
    while not done():
        assert time.monotonic() < end, f"timed out with {[len(s) for s in seen]} records"
        for consumer, got in zip(consumers, seen, strict=True):
            polled = await consumer.getmany(timeout_ms=100)
            for records in polled.values():
                got += [(r.partition, r.offset, r.value, list(r.headers)) for r in records]
            if polled and consumer._group_id is not None:
                await consumer.commit()


async def _group_scenario(address: str) -> None:
    topic, group = f"aio-{uuid.uuid4().hex[:8]}", f"aio-group-{uuid.uuid4().hex[:8]}"
    await _create(address, topic)
    a, b = _consumer(address, topic, group), _consumer(address, topic, group)
    await a.start()
    await b.start()
    seen_a: Seen = []
    seen_b: Seen = []
    try:
        await _poll_until(
            [a, b], [seen_a, seen_b], lambda: _settled(a) + _settled(b) == 3, within=60
        )
        assert _settled(a) and _settled(b), "both members own partitions"
        await _produce(address, topic, range(0, 30))
        await _poll_until(
            [a, b], [seen_a, seen_b], lambda: len(seen_a) + len(seen_b) >= 30, within=60
        )
        check_split(seen_a, seen_b, range(30), b"aiokafka")

        await b.stop()  # leaves the group: a rebalances to own all three partitions
        seen_a.clear()
        await _poll_until([a], [seen_a], lambda: _settled(a) == 3, within=60)
        assert a.assignment() == {TopicPartition(topic, p) for p in range(3)}
        await _produce(address, topic, range(30, 60))
        await _poll_until([a], [seen_a], lambda: len(seen_a) >= 30, within=60)
        assert values(seen_a) == expected(range(30, 60)), "lost or duplicated records"
    finally:
        await a.stop()
        await b.stop()

    await _produce(address, topic, range(60, 90))
    c = _consumer(address, topic, group)
    await c.start()
    seen_c: Seen = []
    try:
        await _poll_until([c], [seen_c], lambda: len(seen_c) >= 30, within=60)
        await asyncio.sleep(0.5)
        await _poll_until([c], [seen_c], lambda: True, within=5)
    finally:
        await c.stop()
    assert values(seen_c) == expected(range(60, 90)), "committed offsets were not honoured"


def test_a_group_of_two_rebalances_when_one_leaves_and_commits_are_honoured(
    kafka: Broker,
) -> None:
    asyncio.run(_group_scenario(kafka.address))


async def _codec_scenario(address: str, compression: str) -> list[bytes]:
    topic = f"aio-{compression}-{uuid.uuid4().hex[:8]}"
    await _create(address, topic)
    await _produce(address, topic, range(50), compression)
    consumer = _consumer(address, topic, None)
    await consumer.start()
    seen: Seen = []
    try:
        await _poll_until([consumer], [seen], lambda: len(seen) >= 50, within=30)
    finally:
        await consumer.stop()
    return values(seen)


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_are_read_back_as_produced(kafka: Broker, compression: str) -> None:
    assert asyncio.run(_codec_scenario(kafka.address, compression)) == expected(range(50))
