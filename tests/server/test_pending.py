"""The server's pending replies: a reply that waits for a change or a deadline keeps the
connection's replies in request order and does not hold other connections."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from conformance.errors import ProtocolError
from conformance.server import Outcome, Server
from conformance.wire.framing import LengthPrefixDeframer


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


class Wait:
    """Replies ``b"woke"`` once the front-end's flag is set, ``b"late"`` at the deadline."""

    def __init__(self, front: Front, seconds: float, abandon_on_eof: bool = True) -> None:
        self.front = front
        self.deadline = time.monotonic() + seconds
        self.abandon_on_eof = abandon_on_eof

    def poll(self, now: float) -> list[bytes] | None:
        if self.front.flag:
            return [frame(b"woke")]
        return [frame(b"late")] if now >= self.deadline else None


class Session:
    def __init__(self, front: Front) -> None:
        self.front = front

    def received(self, count: int) -> None: ...

    def closed(self) -> None: ...

    def handle(self, payload: bytes) -> Outcome:
        if payload.startswith(b"wait"):
            return Outcome(pending=Wait(self.front, float(payload[4:] or 5)))
        if payload.startswith(b"hold"):  # a reply the peer's end of stream does not abandon
            return Outcome(pending=Wait(self.front, float(payload[4:] or 5), False))
        if payload == b"set":
            self.front.flag = True
            for listener in self.front.listeners:
                listener()
        return Outcome([frame(b"echo " + payload)])


class Front:
    name = "pending"

    def __init__(self) -> None:
        self.flag = False
        self.listeners: list[Callable[[], None]] = []

    def new_deframer(self) -> LengthPrefixDeframer:
        return LengthPrefixDeframer(max_frame=1024)

    def new_session(self, peer: str) -> Session:
        return Session(self)

    def framing_error(self, exc: ProtocolError) -> Outcome:
        return Outcome(close=True)

    def add_change_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        self.listeners.append(callback)
        return lambda: self.listeners.remove(callback)

    def set_address(self, host: str, port: int) -> None: ...


async def _read(reader: asyncio.StreamReader) -> bytes:
    n = int.from_bytes(await reader.readexactly(4), "big")
    return await reader.readexactly(n)


def test_a_pending_reply_waits_for_a_change_and_later_replies_follow_it() -> None:
    async def scenario() -> tuple[list[bytes], float]:
        server = Server(Front())
        _, port = await server.start()
        try:
            r1, w1 = await asyncio.open_connection("127.0.0.1", port)
            r2, w2 = await asyncio.open_connection("127.0.0.1", port)
            started = time.monotonic()
            w1.write(frame(b"wait") + frame(b"after"))  # pipelined behind the wait
            await asyncio.sleep(0.2)
            w2.write(frame(b"set"))  # another connection is served meanwhile
            assert await asyncio.wait_for(_read(r2), 2) == b"echo set"
            got = [await asyncio.wait_for(_read(r1), 2) for _ in range(2)]
            for w in (w1, w2):
                w.close()
            return got, time.monotonic() - started
        finally:
            await server.close()

    got, took = asyncio.run(scenario())
    assert got == [b"woke", b"echo after"]
    assert took < 2  # woken by the change, not by the 5 s deadline


def test_a_pending_reply_is_given_at_its_deadline_without_a_change() -> None:
    async def scenario() -> tuple[bytes, float]:
        server = Server(Front())
        _, port = await server.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            started = time.monotonic()
            writer.write(frame(b"wait0.3"))
            got = await asyncio.wait_for(_read(reader), 3)
            writer.close()
            return got, time.monotonic() - started
        finally:
            await server.close()

    got, took = asyncio.run(scenario())
    assert got == b"late"
    assert 0.25 <= took < 2


def test_a_peer_that_closes_its_side_while_a_reply_waits_is_closed() -> None:
    async def scenario() -> tuple[bytes, float]:
        server = Server(Front())
        _, port = await server.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            started = time.monotonic()
            writer.write(frame(b"wait30"))
            await writer.drain()
            await asyncio.sleep(0.1)
            writer.write_eof()
            got = await asyncio.wait_for(reader.read(), 3)  # EOF: the server closed
            writer.close()
            return got, time.monotonic() - started
        finally:
            await server.close()

    got, took = asyncio.run(scenario())
    assert got == b""
    assert took < 2  # not the 30 s deadline


def test_a_reply_not_abandoned_on_eof_is_sent_and_the_requests_after_it_answered() -> None:
    """``abandon_on_eof`` False (a line protocol answers every line it read): the peer's
    half-close does not drop the waiting reply, nor the replies to what followed it."""

    async def scenario() -> list[bytes]:
        server = Server(Front())
        _, port = await server.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(frame(b"hold0.3") + frame(b"after"))
            await writer.drain()
            writer.write_eof()
            got = [await asyncio.wait_for(_read(reader), 3) for _ in range(2)]
            assert await asyncio.wait_for(reader.read(), 3) == b""  # then closed
            writer.close()
            return got
        finally:
            await server.close()

    assert asyncio.run(scenario()) == [b"late", b"echo after"]
