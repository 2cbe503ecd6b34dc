"""Messages across protocols between clients no one here wrote: kafka-python and the real
``apache-iggy==0.8.0`` binding, against one ``conformance serve --all``.

The Iggy client makes a stream and a one-partition topic; its shared name is
``iggy.<stream id>.<topic id>`` (docs/cross-protocol.md).  kafka-python produces to that
name, with keys and headers, and the Iggy client polls the same payloads at the same offsets;
then the Iggy client sends to another topic and a kafka-python consumer reads them, at their
offsets, with no header of Iggy's own showing.  Without either client the module is skipped,
except under ``CI``, where it fails (the ``dev`` extras install both).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Iterator
from typing import Any, TypeVar

import pytest

from conformance.run_all import _wait_all_serving

try:
    import apache_iggy as iggy
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
except ImportError as exc:  # pragma: no cover - depends on the environment
    if os.environ.get("CI"):
        raise
    pytest.skip(f"a client is not importable ({exc})", allow_module_level=True)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("all-protocols")]

T = TypeVar("T")
CALL_DEADLINE_S = 10.0
COUNT = 5


@pytest.fixture(scope="module")
def addresses() -> Iterator[dict[str, str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance", "serve", "--all", "--port-base", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    found = _wait_all_serving(proc)
    try:
        assert found is not None, "serve --all did not start"
        yield found
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)


async def _call(awaitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(awaitable, CALL_DEADLINE_S)


async def _iggy(address: str) -> Any:
    client = iggy.IggyClient(address)
    await _call(client.connect())
    await _call(client.login_user("iggy", "iggy"))
    return client


async def _iggy_topic(client: Any, stream: str, topic: str) -> str:
    """A new stream with a one-partition topic; its shared name."""
    await _call(client.create_stream(stream))
    await _call(client.create_topic(stream, topic, partitions_count=1))
    made = await _call(client.get_topic(stream, topic))
    ids = await _call(client.get_stream(stream))
    return f"iggy.{ids.id}.{made.id}"


def test_kafka_python_produces_and_the_iggy_client_polls(addresses: dict[str, str]) -> None:
    stream = f"xr-{uuid.uuid4().hex[:6]}"

    async def make() -> str:
        return await _iggy_topic(await _iggy(addresses["iggy"]), stream, "from-kafka")

    shared = asyncio.run(make())
    producer = KafkaProducer(bootstrap_servers=addresses["kafka"], acks="all")
    try:
        sent = [
            producer.send(
                shared, key=b"k%d" % i, value=b"kafka-%d" % i, headers=[("h", b"%d" % i)]
            ).get(timeout=CALL_DEADLINE_S)
            for i in range(COUNT)
        ]
    finally:
        producer.close(timeout=10)
    assert [(m.partition, m.offset) for m in sent] == [(0, i) for i in range(COUNT)]

    async def read() -> list[tuple[int, bytes]]:
        client = await _iggy(addresses["iggy"])
        polled = await _call(
            client.poll_messages(stream, "from-kafka", 0, iggy.PollingStrategy.Offset(0), 10, False)
        )
        return [(m.offset(), m.payload()) for m in polled]

    assert asyncio.run(read()) == [(i, b"kafka-%d" % i) for i in range(COUNT)]


def test_the_iggy_client_sends_and_kafka_python_consumes(addresses: dict[str, str]) -> None:
    stream = f"xr-{uuid.uuid4().hex[:6]}"

    async def send() -> str:
        client = await _iggy(addresses["iggy"])
        shared = await _iggy_topic(client, stream, "to-kafka")
        messages = [iggy.SendMessage(b"iggy-%d" % i) for i in range(COUNT)]
        await _call(client.send_messages(stream, "to-kafka", 0, messages))
        return shared

    shared = asyncio.run(send())
    consumer = KafkaConsumer(bootstrap_servers=addresses["kafka"], enable_auto_commit=False)
    try:
        part = TopicPartition(shared, 0)
        consumer.assign([part])
        consumer.seek(part, 0)
        got: list[Any] = []
        end = time.monotonic() + CALL_DEADLINE_S
        while len(got) < COUNT and time.monotonic() < end:
            for records in consumer.poll(timeout_ms=200).values():
                got += records
    finally:
        consumer.close()
    assert [(r.offset, r.value) for r in got] == [(i, b"iggy-%d" % i) for i in range(COUNT)]
    shown = {key for r in got for key, _ in r.headers}
    assert not any(k.startswith("iggy.") for k in shown), shown  # Iggy's own fields stay its own
