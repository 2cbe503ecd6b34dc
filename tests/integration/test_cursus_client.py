"""The official Cursus Python client (``cursus-client`` 0.1.1) against the reference broker.

``conformance serve --protocol cursus --revision real --port 0`` runs as a subprocess (its
``serving cursus on HOST:PORT`` line gives the address).  The client's Producer produces with
each acks level it can use and with idempotence, its Consumer reads back in a consumer group
(the client has no consumer without a group: it always joins one, ``default-group`` when
none is named), in streaming and in polling mode: every acknowledged message is read back,
none twice.  Against ``--revision doc`` the same client gets nothing done: it speaks the real
layouts (FACTS.md).

What the client cannot do against any correct broker of revision real (the real broker's
source, FACTS.md), so not tested as working:

* acks 0: the real broker answers an acks-0 batch with the bare text ``OK``
  (pkg/controller/produce_handler.go) and the client parses every reply to a batch as JSON
  (cursus/protocol/decoder.py ``decode_ack``, called by cursus/producer.py ``_send_batch``):
  it fails, resends and stores the batch again.  ``test_acks_0_is_stored_but_never_acked``
  shows it.
* leaving a group: cursus/protocol/command.py ``leave_group`` sends no ``generation=``, which
  the real broker requires (``ERROR: missing_generation``); the member stays until its session
  times out, so a second consumer of the same group gets all partitions only after that
  (``test_a_new_consumer_resumes_from_the_committed_offsets`` uses a short session timeout).
* compression: the client gzips only batches and gunzips every read, where the real broker
  inflates every frame and compresses no reply (FACTS 1.3).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from cursus import (
    Acks,
    Consumer,
    ConsumerConfig,
    ConsumerMode,
    Message,
    Producer,
    ProducerConfig,
)
from cursus.errors import CursusError

from conformance.protocols.cursus import codec, real_codec
from conformance.protocols.cursus.real_messages import command
from tests.support import broker
from tests.support.cursus_client import CursusTestClient

pytestmark = [pytest.mark.slow]

READ_DEADLINE_S = 20.0


@pytest.fixture(scope="module")
def real() -> Iterator[broker.Broker]:
    args = ("--revision", "real", "--keepalive-ms", "300", "--session-timeout", "2")
    with broker.running(*args) as b:
        yield b


@pytest.fixture(scope="module")
def doc() -> Iterator[broker.Broker]:
    with broker.running("--revision", "doc") as b:
        yield b


def produce(address: str, topic: str, count: int, **config: object) -> tuple[Producer, list[str]]:
    """``count`` messages (every third with a key) through one Producer, flushed and closed."""
    cfg = ProducerConfig(topic=topic, brokers=[address], linger_ms=5, **config)  # type: ignore[arg-type]
    producer = Producer(cfg)
    sent = [f"{topic}-{i}" for i in range(count)]
    for i, payload in enumerate(sent):
        producer.send(payload, key=f"key-{i % 4}" if i % 3 == 0 else "")
    producer.flush()
    producer.close()
    return producer, sent


def consume(consumer: Consumer, want: int, deadline: float = READ_DEADLINE_S) -> list[Message]:
    """Iterate ``consumer`` on a thread until ``want`` messages came or the deadline passed."""
    got: list[Message] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            for m in consumer:
                got.append(m)
                if len(got) >= want:
                    return
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(deadline)
    consumer.close()
    t.join(5)
    assert not errors, errors
    return got


def consumer(address: str, topic: str, group: str, mode: ConsumerMode) -> Consumer:
    return Consumer(
        ConsumerConfig(
            topic=topic,
            brokers=[address],
            group_id=group,
            consumer_id=f"{group}-reader",
            mode=mode,
            heartbeat_interval_ms=300,
            auto_commit_interval_s=0.3,
        )
    )


def stored(b: broker.Broker, topic: str, partitions: int) -> list[bytes]:
    """Every payload of ``topic``, read with our own CONSUME (not the client's)."""
    out: list[bytes] = []
    with CursusTestClient(b.host, b.port) as c:
        for p in range(partitions):
            cmd = command(
                "CONSUME", topic=topic, partition=p, offset=0, member="check", batch=10_000
            )
            c.sock.sendall(codec.frame(real_codec.encode_command(cmd)))
            while not c.frames:
                data = c.sock.recv(1 << 20)
                assert data, "the broker closed the connection"
                c.frames.extend(c.deframer.feed(data))
            got = real_codec.decode_reply(c.frames.pop(0))
            out += [m.payload for m in getattr(got, "messages", ())]
    return out


def once_each(got: list[Message], sent: list[str]) -> None:
    places = [(m.partition, m.offset) for m in got]
    assert len(set(places)) == len(places), f"read twice: {sorted(places)}"
    assert sorted(m.payload for m in got) == sorted(sent)


@pytest.mark.parametrize(
    ("acks", "idempotent", "mode"),
    [
        (Acks.ALL, True, ConsumerMode.STREAMING),
        (Acks.ONE, False, ConsumerMode.POLLING),
        (Acks.ONE, True, ConsumerMode.STREAMING),
    ],
    ids=["acks-all-idempotent-streaming", "acks-1-polling", "acks-1-idempotent-streaming"],
)
def test_every_acked_message_is_read_back_once(
    real: broker.Broker, acks: Acks, idempotent: bool, mode: ConsumerMode
) -> None:
    topic = f"interop-{acks.name.lower()}-{int(idempotent)}-{mode.value}"
    producer, sent = produce(
        real.address, topic, 40, partitions=3, acks=acks, idempotent=idempotent
    )
    assert producer.unique_ack_count == len(sent)
    assert sorted(stored(real, topic, 3)) == sorted(s.encode() for s in sent)
    got = consume(consumer(real.address, topic, f"{topic}-g", mode), len(sent))
    once_each(got, sent)


def test_two_groups_each_read_every_message(real: broker.Broker) -> None:
    topic = "interop-two-groups"
    _, sent = produce(real.address, topic, 24, partitions=2, acks=Acks.ALL)
    for group, mode in (("first", ConsumerMode.STREAMING), ("second", ConsumerMode.POLLING)):
        once_each(consume(consumer(real.address, topic, f"{topic}-{group}", mode), 24), sent)


def test_a_new_consumer_resumes_from_the_committed_offsets(real: broker.Broker) -> None:
    """The first consumer commits what it read when it closes; the next one of the group
    starts after it (once the first's session ran out: its LEAVE_GROUP lacks a generation)."""
    topic, group = "interop-resume", "interop-resume-g"
    _, first = produce(real.address, topic, 12, partitions=2, acks=Acks.ONE)
    once_each(consume(consumer(real.address, topic, group, ConsumerMode.POLLING), 12), first)
    more = Producer(ProducerConfig(topic=topic, brokers=[real.address], partitions=2, linger_ms=5))
    later = [f"{topic}-later-{i}" for i in range(8)]
    for payload in later:
        more.send(payload)
    more.flush()
    more.close()
    assert more.unique_ack_count == len(later)
    time.sleep(3.0)  # the first consumer's member times out (serve --session-timeout 2)
    got = consume(consumer(real.address, topic, group, ConsumerMode.STREAMING), len(later), 15)
    once_each(got, later)


def test_acks_0_is_stored_but_never_acked(real: broker.Broker) -> None:
    """The real broker answers acks 0 with a bare OK, which the client cannot read as JSON."""
    topic = "interop-acks-0"
    producer, sent = produce(
        real.address, topic, 1, partitions=1, acks=Acks.NONE, max_retries=0, flush_timeout_ms=1500
    )
    assert producer.unique_ack_count == 0
    assert stored(real, topic, 1)[:1] == [sent[0].encode()]


def test_the_client_gets_nothing_done_against_revision_doc(doc: broker.Broker) -> None:
    """The document's broker reads the client's envelope and batches as garbage."""
    topic = "interop-doc"
    producer, _ = produce(
        doc.address, topic, 3, partitions=1, acks=Acks.ONE, max_retries=0, flush_timeout_ms=1500
    )
    assert producer.unique_ack_count == 0
    c = consumer(doc.address, topic, "interop-doc-g", ConsumerMode.POLLING)
    with pytest.raises(CursusError, match="join group failed"):
        next(iter(c))
    c.close()
