"""Mini-Kafka clients for ``serve --validate`` tests: a well-behaved one and broken frames.

:class:`ScenarioClient` behaves as MK-CLI-* ask: it connects on demand and again after the
connection is lost, reads each reply whole however it comes (a length, then length-4 more
bytes, over any number of reads), sends a request again after an error reply or a lost
connection (CONSUME and FLUSH: reading twice is harmless), and reads a topic on from the
next offset each reply gives.  Every read has a deadline and every retry loop a bound.

:data:`BROKEN` are frames that each break one client requirement, for a test to send on a
connection of their own (the broker closes some connections).
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field

from conformance.protocols.minikafka import codec

READ_S = 10.0
ATTEMPTS = 4
BACKOFF_S = 0.05
MAX_READS = 1000


class Lost(Exception):
    """The connection ended (closed or reset) before a whole reply came."""


@dataclass
class ScenarioClient:
    host: str
    port: int
    sock: socket.socket | None = None
    log: list[str] = field(default_factory=list)
    """What happened, one line each (``...: error '...' -> again``, ``...: lost -> reconnect``)."""

    def _connect(self) -> socket.socket:
        if self.sock is None:
            self.sock = socket.create_connection((self.host, self.port), timeout=READ_S)
            self.log.append("connected")
        return self.sock

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _exactly(self, sock: socket.socket, n: int, end: float) -> bytes:
        out = b""
        while len(out) < n:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no whole reply within {READ_S} s")
            sock.settimeout(left)
            try:
                chunk = sock.recv(n - len(out))
            except ConnectionError as exc:
                raise Lost(str(exc)) from None
            if not chunk:
                raise Lost(f"closed after {len(out)} of {n} bytes")
            out += chunk
        return out

    def _once(self, payload: bytes) -> codec.Reply:
        sock = self._connect()
        try:
            sock.sendall(codec.frame(payload))
        except ConnectionError as exc:
            raise Lost(str(exc)) from None
        end = time.monotonic() + READ_S
        (length,) = struct.unpack(">i", self._exactly(sock, 4, end))
        return codec.decode_reply(self._exactly(sock, length - 4, end))

    def call(self, request: codec.Request, resend: bool = True) -> codec.Reply:
        """``request``'s reply; sent again (up to :data:`ATTEMPTS` in all) after an error
        reply, and after a lost connection when ``resend``."""
        payload = codec.encode_request(request)
        for attempt in range(1, ATTEMPTS + 1):
            try:
                reply = self._once(payload)
            except Lost as exc:
                self.close()
                self.log.append(f"{codec.describe(request)}: lost ({exc}) -> reconnect")
                if not resend:
                    raise
                continue
            if isinstance(reply, codec.Failure) and attempt < ATTEMPTS:
                self.log.append(f"{codec.describe(request)}: error {reply.error!r} -> again")
                time.sleep(BACKOFF_S)
                continue
            return reply
        raise AssertionError(f"{codec.describe(request)}: no answer in {ATTEMPTS} attempts")

    def produce(self, topic: str, values: list[bytes]) -> list[int]:
        """Each value acknowledged, in order: their offsets.  A PRODUCE whose reply was lost
        is not sent again (it may have been written): the scenario aims no reset at it."""
        offsets = []
        for value in values:
            reply = self.call(codec.Produce(topic, value), resend=False)
            assert isinstance(reply, codec.ProduceOk), codec.describe(reply)
            offsets.append(reply.offset)
        return offsets

    def consume_all(self, topic: str, batch: int, start: int = 0) -> list[tuple[int, bytes]]:
        """Read ``topic`` from ``start`` to its end, each CONSUME at the next offset the
        previous reply gave, until a read returns nothing."""
        got: list[tuple[int, bytes]] = []
        offset = start
        for _ in range(MAX_READS):
            reply = self.call(codec.Consume(topic, offset, batch))
            assert isinstance(reply, codec.ConsumeOk), codec.describe(reply)
            if not reply.messages:
                return got
            got += [(c.offset, c.data) for c in reply.messages]
            offset = reply.next_offset
        raise AssertionError(f"{topic}: not at its end after {MAX_READS} reads")

    def flush(self) -> None:
        reply = self.call(codec.Flush())
        assert isinstance(reply, codec.FlushOk), codec.describe(reply)


# ------------------------------------------------------------------ broken frames


def _payload(request: codec.Request) -> bytes:
    return codec.encode_request(request)


def _off_by_4(payload: bytes) -> bytes:
    """The document's off-by-4: a length that counts the payload but not itself."""
    return struct.pack(">I", len(payload)) + payload


def _cut(payload: bytes, by: int) -> bytes:
    """A frame whose length is right for the bytes sent, its last field ``by`` bytes short."""
    return codec.frame(payload[:-by])


@dataclass(frozen=True)
class Broken:
    name: str
    raw: bytes
    breaks: str
    """The one client requirement it breaks."""
    answered: bool
    """The broker answers it (an error reply) rather than closing the connection."""


PRODUCE_HELLO = _payload(codec.Produce("t", b"hello"))
BROKEN_BASIC = [
    Broken("wrong length (off by 4)", _off_by_4(PRODUCE_HELLO), "MK-CLI-1", False),
    Broken("unknown type byte 0x07", codec.frame(b"\x07"), "MK-CLI-2", False),
    Broken("negative offset", codec.frame(_payload(codec.Consume("t", -1, 5))), "MK-CLI-10", True),
    Broken("cut field (PRODUCE data)", _cut(PRODUCE_HELLO, 3), "MK-CLI-6", True),
    Broken("batch size 0", codec.frame(_payload(codec.Consume("t", 0, 0))), "MK-CLI-11", True),
]
"""The five of issue 24: one violation each."""
BROKEN_MORE = [
    Broken("length 4 (no type byte)", bytes.fromhex("00000004"), "MK-CLI-1", False),
    Broken("length 3", bytes.fromhex("00000003"), "MK-CLI-1", False),
    Broken("negative length", bytes.fromhex("80000000"), "MK-CLI-1", False),
    Broken("a reply type (0x02)", codec.frame(b"\x02\x01"), "MK-CLI-2", False),
    Broken("length over 8 MiB", bytes.fromhex("00900000"), "MK-CLI-5", False),
    Broken("negative topic length", codec.frame(bytes.fromhex("03ffffffff")), "MK-CLI-6", True),
    Broken(
        "CONSUME without batch size", _cut(_payload(codec.Consume("t", 0, 1)), 2), "MK-CLI-6", True
    ),
    Broken("empty topic", codec.frame(_payload(codec.Consume("", 0, 1))), "MK-CLI-7", True),
    Broken(
        "topic not UTF-8", codec.frame(_payload(codec.Consume(b"\xff", 0, 1))), "MK-CLI-8", True
    ),
    Broken(
        "padded CONSUME",
        codec.frame(_payload(codec.Consume("t", 0, 1)) + bytes(7)),
        "MK-CLI-3",
        True,
    ),
    Broken("FLUSH with a byte more", codec.frame(b"\x05\x00"), "MK-CLI-3", True),
]
"""More of the same kind, in revision ``doc``."""
