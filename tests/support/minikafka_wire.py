"""A tiny blocking mini-Kafka client for tests: raw bytes out, whole frames in, every read
with a deadline.  Requests and replies go through the protocol's own codec; raw bytes
(broken frames, on purpose) go out as they are."""

from __future__ import annotations

import socket
import struct
import time
from types import TracebackType

from conformance.protocols.minikafka import codec

DEADLINE_S = 5.0


class Closed(Exception):
    """The broker closed the connection before a whole frame came (``partial``: what did)."""

    def __init__(self, partial: bytes) -> None:
        super().__init__(f"closed after {len(partial)} bytes of a frame: {partial[:40].hex()}")
        self.partial = partial


class Conn:
    def __init__(self, host: str, port: int, deadline_s: float = DEADLINE_S) -> None:
        self.sock = socket.create_connection((host, port), timeout=deadline_s)
        self.deadline_s = deadline_s
        self.buf = b""

    def __enter__(self) -> Conn:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def send(self, raw: bytes) -> None:
        self.sock.sendall(raw)

    def _more(self, end: float) -> bool:
        """Read what comes before ``end``; False on EOF (TimeoutError past it)."""
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no whole frame within the deadline; have {self.buf[:40].hex()}")
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return False
        self.buf += chunk
        return True

    def read_frame(self, deadline_s: float | None = None) -> bytes:
        """The next reply's payload (its length field counts its own 4 bytes)."""
        end = time.monotonic() + (self.deadline_s if deadline_s is None else deadline_s)
        while True:
            if len(self.buf) >= 4:
                (length,) = struct.unpack(">i", self.buf[:4])
                assert length >= 4, f"a reply length of {length}"
                if len(self.buf) >= length:
                    payload, self.buf = self.buf[4:length], self.buf[length:]
                    return payload
            if not self._more(end):
                raise Closed(self.buf)

    def read_exactly(self, n: int) -> bytes:
        """The next ``n`` bytes as they come, whatever they frame."""
        end = time.monotonic() + self.deadline_s
        while len(self.buf) < n:
            if not self._more(end):
                raise Closed(self.buf)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def reply(self, deadline_s: float | None = None) -> codec.Reply:
        return codec.decode_reply(self.read_frame(deadline_s))

    def call(self, request: codec.Request) -> codec.Reply:
        self.send(codec.frame(codec.encode_request(request)))
        return self.reply()

    def produce(self, topic: str | bytes, data: bytes) -> int:
        reply = self.call(codec.Produce(topic, data))
        assert isinstance(reply, codec.ProduceOk), f"PRODUCE {topic!r}: {reply}"
        return reply.offset

    def consume(self, topic: str | bytes, offset: int, batch: int) -> codec.ConsumeOk:
        reply = self.call(codec.Consume(topic, offset, batch))
        assert isinstance(reply, codec.ConsumeOk), f"CONSUME {topic!r} {offset}: {reply}"
        return reply

    def closed_within(self, seconds: float) -> bool:
        """True if the broker closes the connection within ``seconds`` (what it sent before
        stays in ``buf``); False if it is still open then."""
        end = time.monotonic() + seconds
        try:
            while self._more(end):
                pass
        except TimeoutError:
            return False
        return True


def flush_payload() -> bytes:
    return codec.encode_request(codec.Flush())
