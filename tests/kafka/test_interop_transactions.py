"""Transactions with three independent clients against the reference broker, in both
revisions (the ``kafka`` fixture): kafka-python, aiokafka and confluent-kafka (librdkafka)
each commit one transaction and abort another, and read the topic back with
isolation_level read_committed (only the committed records) and read_uncommitted (both);
each also commits a group's offsets inside a transaction (send_offsets_to_transaction:
kafka-python and aiokafka beside a commit and an abort, whose offsets are dropped;
confluent-kafka in a consume-transform-produce loop with a group consumer).

Revision ``doc`` advertises no flexible version, so the clients speak the transaction
APIs' older versions there (AddPartitionsToTxn v0-2, EndTxn v0-2, ...) and the newer ones
in ``apache``: both are served."""

from __future__ import annotations

import asyncio
import time
import uuid
import warnings
from typing import Any

import pytest

from tests.support.broker import Broker

pytestmark = pytest.mark.slow

COMMITTED = [b"c0", b"c1", b"c2"]
ABORTED = [b"a0", b"a1", b"a2"]


def _name(kind: str) -> str:
    return f"txn-{kind}-{uuid.uuid4().hex[:8]}"


# kafka-python ---------------------------------------------------------------------------

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KpPartition
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KpNewTopic
    from kafka.structs import OffsetAndMetadata as KpOffset


def _kp_read(address: str, topic: str, isolation: str) -> list[bytes]:
    c = KafkaConsumer(
        bootstrap_servers=address,
        isolation_level=isolation,
        enable_auto_commit=False,
        consumer_timeout_ms=2000,
    )
    try:
        tp = KpPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        return [m.value for m in c]
    finally:
        c.close()


def test_kafka_python_commits_aborts_and_sends_offsets(kafka: Broker) -> None:
    address, topic = kafka.address, _name("kp")
    admin = KafkaAdminClient(bootstrap_servers=address)
    admin.create_topics([KpNewTopic(topic, 1, 1)])
    admin.close()
    p = KafkaProducer(bootstrap_servers=address, transactional_id=f"{topic}-tx")
    try:
        p.init_transactions()
        p.begin_transaction()
        for v in COMMITTED:
            p.send(topic, value=v)
        p.send_offsets_to_transaction({KpPartition(topic, 0): KpOffset(3, "m", -1)}, topic)
        p.commit_transaction()
        p.begin_transaction()
        for v in ABORTED:
            p.send(topic, value=v)
        p.send_offsets_to_transaction({KpPartition(topic, 0): KpOffset(9, "m", -1)}, topic)
        p.flush()
        p.abort_transaction()
    finally:
        p.close()
    assert _kp_read(address, topic, "read_committed") == COMMITTED
    assert _kp_read(address, topic, "read_uncommitted") == COMMITTED + ABORTED
    group = KafkaConsumer(bootstrap_servers=address, group_id=topic)
    try:
        assert group.committed(KpPartition(topic, 0)) == 3
    finally:
        group.close()


# aiokafka -------------------------------------------------------------------------------


async def _aio_read(address: str, topic: str, isolation: str) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    c = AIOKafkaConsumer(
        bootstrap_servers=address, isolation_level=isolation, enable_auto_commit=False
    )
    await c.start()
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        got: list[bytes] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            batch = await c.getmany(timeout_ms=500)
            got += [m.value for ms in batch.values() for m in ms if m.value is not None]
            if not batch and got:
                break
        return got
    finally:
        await c.stop()


async def _aio(address: str, topic: str) -> tuple[list[bytes], list[bytes], int | None]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=address)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        await admin.close()
    p = AIOKafkaProducer(bootstrap_servers=address, transactional_id=f"{topic}-tx")
    await p.start()
    try:
        async with p.transaction():
            for v in COMMITTED:
                await p.send(topic, value=v)
            await p.send_offsets_to_transaction({TopicPartition(topic, 0): 3}, topic)
        await p.begin_transaction()
        for v in ABORTED:
            await p.send(topic, value=v)
        await p.send_offsets_to_transaction({TopicPartition(topic, 0): 9}, topic)
        await p.flush()
        await p.abort_transaction()
    finally:
        await p.stop()
    committed = await _aio_read(address, topic, "read_committed")
    everything = await _aio_read(address, topic, "read_uncommitted")
    group = AIOKafkaConsumer(bootstrap_servers=address, group_id=topic)
    await group.start()
    try:
        offset = await group.committed(TopicPartition(topic, 0))
    finally:
        await group.stop()
    return committed, everything, offset


def test_aiokafka_commits_aborts_and_sends_offsets(kafka: Broker) -> None:
    committed, everything, offset = asyncio.run(_aio(kafka.address, _name("aio")))
    assert committed == COMMITTED
    assert everything == COMMITTED + ABORTED
    assert offset == 3


# confluent-kafka (librdkafka) -----------------------------------------------------------


def _ck_read(address: str, topic: str, isolation: str, want: int) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": address,
            "group.id": f"{topic}-{isolation}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len(got) < want:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        time.sleep(0.5)  # nothing more may come: an aborted record would show here
        while (m := c.poll(0.5)) is not None:
            if m.error() is None:
                got.append(m.value())
        return got
    finally:
        c.close()


def test_confluent_kafka_commits_and_aborts(kafka: Broker) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    address, topic = kafka.address, _name("ck")
    admin = AdminClient({"bootstrap.servers": address})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(20)
    p = Producer({"bootstrap.servers": address, "transactional.id": f"{topic}-tx"})
    failed: list[Any] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failed.append(err)

    p.init_transactions(20)
    p.begin_transaction()
    for v in COMMITTED:
        p.produce(topic, value=v, on_delivery=delivered)
    p.commit_transaction(20)
    p.begin_transaction()
    for v in ABORTED:
        p.produce(topic, value=v, on_delivery=delivered)
    assert p.flush(20) == 0
    p.abort_transaction(20)
    assert not failed, failed
    assert _ck_read(address, topic, "read_committed", 3) == COMMITTED
    assert _ck_read(address, topic, "read_uncommitted", 6) == COMMITTED + ABORTED


def test_confluent_kafka_consume_transform_produce(kafka: Broker) -> None:
    """A group consumer reads, a transactional producer writes the transformed records and
    the consumer's position with send_offsets_to_transaction, then commits: the group's
    committed offset is the position, and the output is readable read_committed."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    address, source, sink = kafka.address, _name("ck-in"), _name("ck-out")
    admin = AdminClient({"bootstrap.servers": address})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in (source, sink)]).values():
        future.result(20)
    seed = Producer({"bootstrap.servers": address})
    for v in COMMITTED:
        seed.produce(source, value=v)
    assert seed.flush(20) == 0
    group = f"{source}-group"
    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    p = Producer({"bootstrap.servers": address, "transactional.id": f"{source}-tx"})
    try:
        consumer.subscribe([source])
        got: list[Any] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(got) < len(COMMITTED):
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m)
        assert [m.value() for m in got] == COMMITTED
        p.init_transactions(20)
        p.begin_transaction()
        for m in got:
            p.produce(sink, value=m.value().upper())
        position = consumer.position(consumer.assignment())
        p.send_offsets_to_transaction(position, consumer.consumer_group_metadata(), 20)
        p.commit_transaction(20)
        committed = consumer.committed([TopicPartition(source, 0)], timeout=20)
        assert committed[0].offset == len(COMMITTED)
    finally:
        consumer.close()
    assert _ck_read(address, sink, "read_committed", 3) == [v.upper() for v in COMMITTED]
