"""A raw Cursus client for the ``serve --validate`` tests: frames on a socket, one reply
read per request (every read has a deadline), and batches of either revision, made right
or broken on purpose."""

from __future__ import annotations

import socket

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
