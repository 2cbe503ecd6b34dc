"""SASL with independent clients against the reference broker requiring it (``serve
--sasl-username ... --sasl-password ...``), in both revisions: kafka-python, aiokafka
and confluent-kafka (librdkafka) authenticate with PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512, then produce and read back what they produced; a wrong password is
refused and each client reports an authentication failure.  kafka-python told
``api_version=(0, 10, 1)`` sends SaslHandshake v0 and then bare tokens (the old way,
which Kafka 4.0 still serves); aiokafka 0.14 negotiates v1 whatever it is told."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import confluent_kafka
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from kafka import KafkaConsumer, KafkaProducer

from tests.support import broker as support

pytestmark = pytest.mark.slow

USER, PASSWORD = "alice", "s3cret-Ü,="
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


@pytest.fixture(scope="module", params=["apache", "doc"])
def sasl_broker(request: pytest.FixtureRequest) -> Iterator[support.Broker]:
    served = support.start(
        "--revision",
        request.param,
        "--sasl-username",
        USER,
        "--sasl-password",
        PASSWORD,
        "--sasl-users",
        "bob:hunter2",
        protocol="kafka",
    )
    try:
        yield served
    finally:
        served.stop()


def _values(tag: str) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(5)]


# ------------------------------------------------------------------ kafka-python


def _kp(mechanism: str, password: str) -> dict[str, Any]:
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": USER,
        "sasl_plain_password": password,
    }


def _kp_round_trip(address: str, topic: str, tag: str, config: dict[str, Any]) -> list[bytes]:
    """kafka-python produces ``_values(tag)`` with ``config`` and reads the topic back."""
    producer = KafkaProducer(bootstrap_servers=address, **config)
    try:
        for v in _values(tag):
            producer.send(topic, v).get(timeout=10)
    finally:
        producer.close(timeout=10)
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=address,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
        **config,
    )
    try:
        return [m.value for m in consumer]
    finally:
        consumer.close()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_authenticates_produces_and_consumes(
    sasl_broker: support.Broker, mechanism: str
) -> None:
    topic = f"sasl-kp-{uuid.uuid4().hex[:8]}"
    got = _kp_round_trip(sasl_broker.address, topic, "kp", _kp(mechanism, PASSWORD))
    assert got == _values("kp")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_with_handshake_v0_exchanges_bare_tokens(
    sasl_broker: support.Broker, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="kafka.protocol.parser")
    topic = f"sasl-kp0-{uuid.uuid4().hex[:8]}"
    old = {"api_version": (0, 10, 1), **_kp(mechanism, PASSWORD)}
    got = _kp_round_trip(sasl_broker.address, topic, "kp0", old)
    assert got == _values("kp0")
    assert "SaslHandshakeRequest(version=0" in caplog.text and "SaslBytesRequest" in caplog.text


WRONG_PASSWORD_SCRIPT = """
import logging, sys
from kafka import KafkaProducer
logging.basicConfig(level=logging.ERROR, stream=sys.stdout)
try:
    KafkaProducer(bootstrap_servers=sys.argv[1], bootstrap_timeout_ms=3000,
                  security_protocol="SASL_PLAINTEXT", sasl_mechanism=sys.argv[2],
                  sasl_plain_username=sys.argv[3], sasl_plain_password="wrong")
except Exception as exc:
    print("raised", type(exc).__name__, exc)
"""


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_reports_a_wrong_password(sasl_broker: support.Broker, mechanism: str) -> None:
    # in a process of its own: a producer whose __init__ fails never closes its sockets
    # (kafka-python 3.0), and its leaked sockets would fail a later test
    proc = subprocess.run(
        [sys.executable, "-c", WRONG_PASSWORD_SCRIPT, sasl_broker.address, mechanism, USER],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert "raised KafkaTimeoutError" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "SaslAuthenticationFailedError" in proc.stdout


# ------------------------------------------------------------------ aiokafka


def _aio(mechanism: str, password: str) -> dict[str, Any]:
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": USER,
        "sasl_plain_password": password,
    }


async def _aio_round_trip(address: str, mechanism: str, topic: str) -> list[bytes]:
    producer = AIOKafkaProducer(bootstrap_servers=address, **_aio(mechanism, PASSWORD))
    await producer.start()
    try:
        for v in _values("aio"):
            await producer.send_and_wait(topic, v)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=address,
        auto_offset_reset="earliest",
        **_aio(mechanism, PASSWORD),
    )
    await consumer.start()
    got: list[bytes] = []
    try:
        end = time.monotonic() + 10
        while len(got) < 5 and time.monotonic() < end:
            batches = await consumer.getmany(timeout_ms=200)
            got += [bytes(m.value or b"") for ms in batches.values() for m in ms]
    finally:
        await consumer.stop()
    return got


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_authenticates_produces_and_consumes(
    sasl_broker: support.Broker, mechanism: str
) -> None:
    topic = f"sasl-aio-{uuid.uuid4().hex[:8]}"
    got = asyncio.run(_aio_round_trip(sasl_broker.address, mechanism, topic))
    assert got == _values("aio")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_reports_a_wrong_password(
    sasl_broker: support.Broker, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="aiokafka")

    async def start() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=sasl_broker.address, **_aio(mechanism, "wrong")
        )
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(Exception, match="bootstrap"):
        asyncio.run(start())
    assert "SaslAuthenticationFailed" in caplog.text


# ------------------------------------------------------------------ confluent-kafka


def _ck(mechanism: str, password: str, **more: Any) -> dict[str, Any]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": USER,
        "sasl.password": password,
        "log_level": 0,
        **more,
    }


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_authenticates_produces_and_consumes(
    sasl_broker: support.Broker, mechanism: str
) -> None:
    topic = f"sasl-ck-{uuid.uuid4().hex[:8]}"
    producer = confluent_kafka.Producer(
        _ck(mechanism, PASSWORD, **{"bootstrap.servers": sasl_broker.address})
    )
    for v in _values("ck"):
        producer.produce(topic, v)
    assert producer.flush(15) == 0
    consumer = confluent_kafka.Consumer(
        _ck(
            mechanism,
            PASSWORD,
            **{
                "bootstrap.servers": sasl_broker.address,
                "group.id": f"g-{topic}",
                "auto.offset.reset": "earliest",
            },
        )
    )
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        end = time.monotonic() + 30
        while len(got) < 5 and time.monotonic() < end:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                got.append(bytes(m.value() or b""))
    finally:
        consumer.close()
    assert got == _values("ck")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_reports_a_wrong_password(
    sasl_broker: support.Broker, mechanism: str
) -> None:
    errors: list[confluent_kafka.KafkaError] = []
    producer = confluent_kafka.Producer(
        _ck(
            mechanism,
            "wrong",
            **{"bootstrap.servers": sasl_broker.address, "error_cb": errors.append},
        )
    )
    end = time.monotonic() + 10
    while not errors and time.monotonic() < end:
        producer.poll(0.2)
    assert errors, "no error reported"
    assert errors[0].code() == confluent_kafka.KafkaError._AUTHENTICATION, errors[0].str()
    assert "Authentication failed" in errors[0].str()
