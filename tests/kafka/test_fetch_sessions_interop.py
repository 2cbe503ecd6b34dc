"""Fetch sessions (KIP-227) with real clients: kafka-python and confluent-kafka (librdkafka)
consume through a recording proxy in front of the reference broker, and the frames show
what each did with sessions, and that every record was read once.

kafka-python (2.x and 3.x: ``FetchSessionHandler``, enable_incremental_fetch_sessions on
by default) asks for a session (epoch 0), gets an id, and goes incremental: the test
checks the broker's answer carried a session id and the client's next fetches named it
with epochs 1, 2, ..., most naming no partition.  librdkafka (2.16 here) does not use
fetch sessions: every Fetch (v16 against this broker) says session id 0 and epoch -1
(FINAL), and writes an empty forgotten-topics array ("broker use only" in its fetcher);
the test checks exactly that, and that the broker answered each without a session.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from conformance.protocols.kafka import codec
from tests.kafka.interop import expected
from tests.support import broker as support
from tests.support.kafka_capture import Capture, pairs

pytestmark = pytest.mark.slow
FETCH = 1
COUNT = 30


@dataclass
class Exchange:
    version: int
    session_id: int
    epoch: int
    partitions: int
    forgotten: int
    answered_id: int | None
    error: int | None


def _fetches(proxy: Capture) -> list[Exchange]:
    """Each Fetch a client sent and what the broker answered, in the order sent."""
    out = []
    for req, rep in sorted(pairs(proxy), key=lambda p: p[0].order):
        request = codec.decode_request(req.payload)
        if request.api_key != FETCH:
            continue
        body, v = request.body, request.api_version
        answered_id = error = None
        if rep is not None and v >= 7:
            _, reply = codec.decode_response(rep.payload, FETCH, v)
            answered_id, error = int(reply["session_id"]), int(reply["error_code"])
        out.append(
            Exchange(
                v,
                int(body.get("session_id", 0)),
                int(body.get("session_epoch", -1)),
                sum(len(t["partitions"]) for t in body.get("topics", [])),
                sum(len(t["partitions"]) for t in body.get("forgotten_topics_data") or []),
                answered_id,
                error,
            )
        )
    return out


def _check_sessionless(seen: list[Exchange]) -> None:
    """Every fetch was a sessionless full fetch (id 0, epoch -1), answered with id 0."""
    assert seen, "the client sent no Fetch"
    assert all(x.version >= 7 for x in seen), f"fetch versions {sorted({x.version for x in seen})}"
    answered = [x for x in seen if x.answered_id is not None]  # the last may be in flight
    assert answered, "no Fetch was answered"
    odd = [x for x in seen if (x.session_id, x.epoch) != (0, -1)]
    odd += [x for x in answered if (x.answered_id, x.error) != (0, 0)]
    assert not odd, f"fetches other than sessionless: {odd[:5]}"


def _check_sessions(seen: list[Exchange]) -> None:
    """A session was created (an answer with an id > 0) and used incrementally: a later
    fetch named it with epoch 1, and no fetch was refused a session error."""
    assert seen, "the client sent no Fetch"
    created = {x.answered_id for x in seen if x.answered_id and x.epoch == 0}
    assert created, f"no answer created a session: {seen[:5]}"
    incremental = [x for x in seen if x.session_id in created and x.epoch >= 1]
    assert any(x.epoch == 1 for x in incremental), f"no incremental fetch: {seen[:5]}"
    assert all(x.answered_id == x.session_id for x in incremental if x.error == 0)
    # an incremental fetch names only what changed: most name no partition at all
    assert any(x.partitions == 0 for x in incremental), "every incremental fetch named all"
    refused = [x for x in seen if x.error not in (None, 0)]
    assert not refused, f"session errors: {refused}"


def _create(address: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=address, client_id="sessions-admin")
    try:
        admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    finally:
        admin.close()


def _produce(address: str, topic: str, indexes: range) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=address, acks="all", linger_ms=5)
    try:
        for i in indexes:
            producer.send(topic, key=b"k%d" % (i % 3), value=b"value-%d" % i, partition=i % 3)
        producer.flush(timeout=20)
    finally:
        producer.close(timeout=10)


def _kafka_python(address: str, topic: str, got: list[bytes]) -> Callable[[], None]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=address, auto_offset_reset="earliest", fetch_max_wait_ms=100
    )
    consumer.assign([TopicPartition(topic, p) for p in range(3)])

    def poll() -> None:
        for records in consumer.poll(timeout_ms=100).values():
            got.extend(r.value for r in records)

    poll.close = consumer.close  # type: ignore[attr-defined]
    return poll


def _librdkafka(address: str, topic: str, got: list[bytes]) -> Callable[[], None]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "group.id": f"sessions-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(3)])

    def poll() -> None:
        msg = consumer.poll(0.1)
        if msg is not None and msg.error() is None:
            got.append(msg.value())

    poll.close = consumer.close  # type: ignore[attr-defined]
    return poll


CLIENTS = {"kafka-python": _kafka_python, "confluent-kafka": _librdkafka}
CHECKS = {"kafka-python": _check_sessions, "confluent-kafka": _check_sessionless}


@pytest.fixture(scope="module", params=["apache", "doc"])
def served(request: pytest.FixtureRequest) -> support.Broker:
    b = support.start("--revision", request.param, protocol="kafka")
    request.addfinalizer(b.stop)
    return b


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_client_consumes_with_the_fetch_sessions_it_uses(
    served: support.Broker, client: str
) -> None:
    topic = f"sessions-{client}-{uuid.uuid4().hex[:6]}"
    got: list[bytes] = []
    _create(served.address, topic)
    with Capture((served.host, served.port), label=client) as proxy:
        poll = CLIENTS[client](proxy.address, topic, got)
        end = time.monotonic() + 40
        for round_ in range(3):  # records in three rounds: the session sees changes
            part = range(round_ * COUNT // 3, (round_ + 1) * COUNT // 3)
            _produce(served.address, topic, part)
            while len(got) < part.stop and time.monotonic() < end:
                poll()
        quiet = time.monotonic() + 1.0  # more fetches of nothing new: incremental, empty
        while time.monotonic() < quiet:
            poll()
        poll.close()  # type: ignore[attr-defined]
    assert sorted(got) == expected(range(COUNT)), "lost or duplicated records"
    CHECKS[client](_fetches(proxy))
