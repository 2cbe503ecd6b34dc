"""Independent clients produce to a topic they have never seen, which the broker makes on
their Metadata request (KAF-CONV-1): in revision apache that request is answered
UNKNOWN_TOPIC_OR_PARTITION, as Apache Kafka (KRaft) answers it, and each client must ask
again and then write; in doc the topic is listed at once.  Both revisions (the ``kafka``
fixture)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Producer
from kafka import KafkaProducer

from tests.support.broker import Broker

pytestmark = pytest.mark.slow


def _topic(who: str) -> str:
    return f"auto-{who}-{uuid.uuid4().hex[:8]}"


def test_kafka_python_writes_to_a_topic_it_makes(kafka: Broker) -> None:
    producer = KafkaProducer(bootstrap_servers=kafka.address, acks="all", max_block_ms=20_000)
    try:
        sent = producer.send(_topic("kp"), value=b"first").get(timeout=20)
    finally:
        producer.close(timeout=10)
    assert (sent.partition, sent.offset) == (0, 0)


def test_aiokafka_writes_to_a_topic_it_makes(kafka: Broker) -> None:
    async def run() -> tuple[int, int]:
        producer = AIOKafkaProducer(bootstrap_servers=kafka.address, acks="all")
        await producer.start()
        try:
            sent = await asyncio.wait_for(producer.send_and_wait(_topic("aio"), b"first"), 20)
        finally:
            await producer.stop()
        return sent.partition, sent.offset

    assert asyncio.run(run()) == (0, 0)


def test_librdkafka_writes_to_a_topic_it_makes(kafka: Broker) -> None:
    reports: list[tuple[object, int, int]] = []
    producer = Producer({"bootstrap.servers": kafka.address, "acks": "all"})
    producer.produce(
        _topic("rdkafka"),
        b"first",
        on_delivery=lambda err, msg: reports.append((err, msg.partition(), msg.offset())),
    )
    assert producer.flush(20) == 0, "not delivered within 20 s"
    assert reports == [(None, 0, 0)]
