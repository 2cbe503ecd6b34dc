"""A raw Cursus client for the ``serve --validate`` tests: frames on a socket, one reply
read per request (every read has a deadline), and batches of either revision, made right
or broken on purpose."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field

from conformance.protocols.cursus import codec, real_codec
from conformance.protocols.cursus.messages import Batch, Message

DEADLINE_S = 5.0


def address_of(text: str) -> tuple[str, int]:
    host, port = text.rsplit(":", 1)
    return host, int(port)


class RawClient:
    """Frames sent as given; :meth:`ask` reads the one reply frame."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.sock = socket.create_connection(address, timeout=DEADLINE_S)
        self.deframer = codec.new_deframer()
        self.frames: list[bytes] = []

    def send(self, payload: bytes) -> None:
        self.sock.sendall(codec.frame(payload))

    def ask(self, payload: bytes) -> bytes:
        self.send(payload)
        for _ in range(1000):
            if self.frames:
                break
            data = self.sock.recv(1 << 20)
            assert data, f"the broker closed the connection after {payload[:60]!r}"
            self.frames.extend(self.deframer.feed(data))
        return self.frames.pop(0)

    def cut_frame(self, promised: int, sent: bytes) -> None:
        """A length prefix promising ``promised`` bytes, only ``sent`` of them, and a close."""
        self.sock.sendall(promised.to_bytes(4, "big") + sent)
        self.close()

    def close(self) -> None:
        self.sock.close()


def text(revision: str, command: str) -> bytes:
    """A text command as the revision's client sends it (real: in the envelope)."""
    return real_codec.envelope(command) if revision == "real" else command.encode()


def batch(
    revision: str,
    topic: str,
    seqs: range,
    *,
    partition: int = 0,
    acks: str = "1",
    idempotent: bool = True,
    producer: str = "p-1",
) -> Batch:
    messages = tuple(
        Message(seq_num=s, producer_id=producer, epoch=1, payload=f"m{s}".encode()) for s in seqs
    )
    return Batch(
        topic=topic,
        partition=str(partition),
        acks=acks,
        idempotent=idempotent,
        seq_start=seqs[0],
        seq_end=seqs[-1],
        messages=messages,
    )


def encoded(revision: str, b: Batch) -> bytes:
    return real_codec.encode_batch(b) if revision == "real" else codec.encode_batch(b)


def lying_count(revision: str, topic: str) -> bytes:
    """A batch whose messageCount says 3 but that holds 2 messages."""
    three = encoded(revision, batch(revision, topic, range(100, 103), idempotent=False))
    two = encoded(revision, batch(revision, topic, range(100, 102), idempotent=False))
    return three[: len(two)]


# ------------------------------------------------------------ the official client


@dataclass
class ClientRun:
    """What ``cursus-client`` did: payloads sent, acknowledged, and read in the group."""

    sent: list[str] = field(default_factory=list)
    acked: int = 0
    read: list[tuple[int, int, str]] = field(default_factory=list)
    """(partition, offset, payload) of every message the group consumer yielded."""
    errors: list[str] = field(default_factory=list)


def run_official_client(
    address: str,
    topic: str,
    count: int,
    *,
    partitions: int = 2,
    linger_s: float = 2.0,
    max_retries: int = 3,
    flush_timeout_ms: int = 8000,
) -> ClientRun:
    """cursus-client's Producer sends ``count`` messages (acks all, idempotent), then its
    Consumer reads the topic in a group (streaming), iterating until every message came
    and ``linger_s`` more (so that faults on heartbeats fire while it iterates), at most
    20 s; then it is closed."""
    from cursus import Acks, Consumer, ConsumerConfig, ConsumerMode, Producer, ProducerConfig

    run = ClientRun(sent=[f"{topic}-{i}" for i in range(count)])
    producer = Producer(
        ProducerConfig(
            topic=topic,
            brokers=[address],
            partitions=partitions,
            acks=Acks.ALL,
            idempotent=True,
            linger_ms=5,
            max_retries=max_retries,
            flush_timeout_ms=flush_timeout_ms,
        )
    )
    try:
        for i, payload in enumerate(run.sent):
            producer.send(payload, key=f"key-{i % 4}" if i % 3 == 0 else "")
        producer.flush()
    except Exception as exc:  # a finding, reported by the test
        run.errors.append(f"producer: {exc!r}")
    finally:
        producer.close()
    run.acked = producer.unique_ack_count
    consumer = Consumer(
        ConsumerConfig(
            topic=topic,
            brokers=[address],
            group_id=f"{topic}-g",
            consumer_id="reader",
            mode=ConsumerMode.STREAMING,
            heartbeat_interval_ms=300,
            auto_commit_interval_s=0.3,
        )
    )

    def iterate() -> None:
        try:
            for m in consumer:
                run.read.append((m.partition, m.offset, str(m.payload)))
        except Exception as exc:
            run.errors.append(f"consumer: {exc!r}")

    thread = threading.Thread(target=iterate, daemon=True)
    thread.start()
    started = time.monotonic()
    complete_at: float | None = None
    while time.monotonic() - started < 20.0 and thread.is_alive():
        if complete_at is None and {p for _, _, p in run.read} >= set(run.sent):
            complete_at = time.monotonic()
        if complete_at is not None and time.monotonic() - complete_at > linger_s:
            break
        time.sleep(0.05)
    consumer.close()
    thread.join(5)
    return run


def stored(address: str, topic: str, partitions: int) -> list[bytes]:
    """Every payload of ``topic`` in the broker's log, read with our own CONSUME (real)."""
    out: list[bytes] = []
    client = RawClient(address_of(address))
    try:
        for p in range(partitions):
            command = (
                f"CONSUME topic={topic} partition={p} offset=0 member=check group=check-{p} "
                "batch=10000"
            )
            got = real_codec.decode_reply(client.ask(real_codec.envelope(command)))
            assert isinstance(got, Batch), got
            out += [m.payload for m in got.messages]
    finally:
        client.close()
    return out
