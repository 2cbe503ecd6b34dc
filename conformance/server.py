"""The one asyncio TCP shell of the reference broker.

It accepts connections, feeds received bytes to the protocol's deframer, hands each
frame to the protocol session, and writes the replies back in order.  It knows no
protocol: a :class:`Frontend` supplies the deframer, the per-connection session and
the reply to a framing error.  Limits enforced here, for every protocol:

* a deframer refuses an oversize length before the payload is read, so a lying
  prefix costs nothing;
* at most ``max_connections`` open at once (further ones are closed on accept);
* a write that the peer does not drain within ``write_timeout`` seconds closes that
  connection, so a client that stops reading cannot hold the broker;
* every connection is its own task: one slow or hostile peer never stalls another.

A session may turn its connection into a push stream (Cursus STREAM): the server then
keeps reading (and discarding) frames and wakes the stream whenever the engine
reports an append.

A reply may also wait (Kafka's JoinGroup until the rebalance completes, a long-poll
Fetch until data arrives): the outcome then carries a :class:`Pending`, which the
server polls whenever the front-end reports a change, and at least every ``TICK``
seconds, until it gives its replies; it must give them once its deadline has passed.
The connection's later requests wait their turn, so replies stay in request order; a
peer that closes its side while a reply waits has the connection closed, unless the
pending reply says it is not abandoned so (``abandon_on_eof``).

Fault hooks, for brokers that misbehave on purpose (the fuzzer's targets); both are
protocol-agnostic and cost nothing when unused:

* ``Outcome(stall=True)``: after writing the outcome's replies the server stops
  serving that connection: it stops reading from the socket, writes nothing and does
  not close it, until the connection task is cancelled (:meth:`Server.close`), which
  then closes it promptly.  This is a hang as a peer sees it.
* ``Session.received(count)``: called with the number of whole frames each read
  delivered (when there is at least one), before any of them is handled or, on a
  streaming connection, ignored; a no-op for a well-behaved session.

Faults on demand (``serve --validate`` with a fault plan), also carried by the outcome and
applied to its replies and to those of its pending reply alike:

* ``Outcome(pieces=N)``: the replies are written in N pieces of about equal size,
  :data:`PIECE_GAP` seconds apart, each drained before the next;
* ``Outcome(reset_after=K)``: only the first K bytes of the replies are written, then the
  connection is reset (closed without the rest).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from conformance.errors import ProtocolError
from conformance.wire.framing import Deframer

log = logging.getLogger("conformance.server")

READ_CHUNK = 256 * 1024
PIECE_GAP = 0.01
"""The pause between the pieces of a reply written in pieces (a fault)."""
TICK = 0.05
"""How often a pending reply is polled when nothing changes (timed state: a join delay)."""


class Stream(Protocol):
    def poll(self) -> list[bytes]:
        """Framed bytes ready to push now ([] when nothing is new)."""
        ...


class Pending(Protocol):
    deadline: float
    """``time.monotonic()`` seconds by which :meth:`poll` must give the replies."""
    abandon_on_eof: bool
    """Whether the peer's end of stream abandons the reply (Kafka: a broker closes on
    end of stream); if not, the reply is still sent, and the requests after it answered,
    as a line protocol's broker that reads until end of stream and answers each line does."""

    def poll(self, now: float) -> list[bytes] | None:
        """The framed replies once ready (at the latest at the deadline), else None."""
        ...


@dataclass
class Outcome:
    """What to do after one frame: send ``replies`` (framed bytes), then maybe wait for the
    ``pending`` replies, close, stream, or (a fault hook) stall: serve the connection no
    more, without closing it."""

    replies: list[bytes] = field(default_factory=list)
    close: bool = False
    stream: Stream | None = None
    stall: bool = False
    pending: Pending | None = None
    pieces: int = 1
    reset_after: int | None = None


class Session(Protocol):
    def handle(self, frame: bytes) -> Outcome: ...

    def closed(self) -> None: ...

    def received(self, count: int) -> None:
        """Fault hook: one read delivered ``count`` (>= 1) whole frames, not yet handled."""
        ...


class Frontend(Protocol):
    name: str

    def new_deframer(self) -> Deframer: ...

    def new_session(self, peer: str) -> Session: ...

    def framing_error(self, exc: ProtocolError) -> Outcome:
        """The reply to input the deframer refused (the connection is closed after it)."""
        ...

    def add_change_listener(self, callback: Callable[[], None]) -> Callable[[], None]: ...

    def set_address(self, host: str, port: int) -> None: ...


class Server:
    def __init__(
        self,
        frontend: Frontend,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_connections: int = 1024,
        write_timeout: float = 30.0,
    ) -> None:
        self.frontend = frontend
        self.host = host
        self.port = port
        self.max_connections = max_connections
        self.write_timeout = write_timeout
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Event()
        self._remove_listener: Callable[[], None] | None = None

    async def start(self) -> tuple[str, int]:
        self._server = await asyncio.start_server(
            self._serve, self.host, self.port, limit=READ_CHUNK
        )
        sock = self._server.sockets[0]
        host, port = sock.getsockname()[:2]
        self.host, self.port = host, port
        self.frontend.set_address(host, port)
        self._remove_listener = self.frontend.add_change_listener(self._notify)
        return host, port

    def _notify(self) -> None:
        event, self._changed = self._changed, asyncio.Event()
        event.set()

    async def serve_forever(self) -> None:
        assert self._server is not None
        async with self._server:
            await self._server.serve_forever()

    async def close(self) -> None:
        if self._remove_listener is not None:
            self._remove_listener()
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self._connections) >= self.max_connections:
            writer.close()
            return
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        session = self.frontend.new_session(f"{peer[0]}:{peer[1]}" if peer else "?")
        try:
            await self._converse(reader, writer, session)
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass
        except asyncio.CancelledError:
            # close() cancels open connections; ending the task quietly matters on 3.11, whose
            # stream callback calls task.exception() on it and logs a traceback if cancelled
            pass
        except Exception:  # a bug in a handler must not take the broker down
            log.exception("connection from %s failed", peer)
        finally:
            self._connections.discard(task)
            session.closed()
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def _write(
        self, writer: asyncio.StreamWriter, chunks: list[bytes], outcome: Outcome | None = None
    ) -> None:
        data = b"".join(chunks)
        if outcome is not None and outcome.reset_after is not None:
            await self._write(writer, [data[: outcome.reset_after]])
            writer.transport.abort()
            raise ConnectionResetError("reset on purpose (a fault)")
        if outcome is not None and outcome.pieces > 1 and len(data) > 1:
            step = -(-len(data) // outcome.pieces)
            for at in range(0, len(data), step):
                if at:
                    await asyncio.sleep(PIECE_GAP)
                await self._write(writer, [data[at : at + step]])
            return
        if data:
            writer.write(data)
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
            # that races the drain's completion, and a cancelled push stream then lives on.
            async with asyncio.timeout(self.write_timeout):
                await writer.drain()

    async def _converse(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, session: Session
    ) -> None:
        deframer = self.frontend.new_deframer()
        stream_task: asyncio.Task[None] | None = None
        try:
            while True:
                data = await reader.read(READ_CHUNK)
                if not data:
                    return
                try:
                    frames = deframer.feed(data)
                except ProtocolError as exc:
                    await self._write(writer, self.frontend.framing_error(exc).replies)
                    return
                if frames:
                    session.received(len(frames))
                if stream_task is not None:
                    if stream_task.done():
                        return
                    continue  # frames sent on a streaming connection are read and ignored
                for frame in frames:
                    outcome = session.handle(frame)
                    if outcome.replies or outcome.pending is None:
                        await self._write(writer, outcome.replies, outcome)
                    if outcome.pending is not None:
                        replies = await self._settle(outcome.pending, reader)
                        if replies is None:
                            return  # the peer went away while the reply waited
                        await self._write(writer, replies, outcome)
                    if outcome.close:
                        return
                    if outcome.stall:
                        await self._stall(writer)
                        return
                    if outcome.stream is not None:
                        stream_task = asyncio.create_task(self._push(writer, outcome.stream))
                        break
                if deframer.error is not None:  # a bad prefix followed the frames just served
                    await self._write(writer, self.frontend.framing_error(deframer.error).replies)
                    return
        finally:
            if stream_task is not None:
                stream_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await stream_task

    async def _settle(self, pending: Pending, reader: asyncio.StreamReader) -> list[bytes] | None:
        """Poll ``pending`` on every change and every TICK until it gives its replies;
        None if the peer closed its side meanwhile (and sent nothing more) and the
        pending reply is abandoned then: the connection is then closed, as a Kafka broker
        closes on end of stream."""
        while True:
            if reader.at_eof() and pending.abandon_on_eof:
                return None
            changed = self._changed
            now = time.monotonic()
            replies = pending.poll(now)
            if replies is not None:
                return replies
            wait = min(max(pending.deadline - now, 0.0), TICK)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await changed.wait()

    async def _stall(self, writer: asyncio.StreamWriter) -> None:
        """Fault hook: read nothing, write nothing, keep the socket open until cancelled."""
        transport = writer.transport
        if isinstance(transport, asyncio.ReadTransport) and not transport.is_closing():
            transport.pause_reading()
        await asyncio.get_running_loop().create_future()  # completed by nothing: cancel only

    async def _push(self, writer: asyncio.StreamWriter, stream: Stream) -> None:
        try:
            while True:
                changed = self._changed
                chunks = stream.poll()
                if chunks:
                    await self._write(writer, chunks)
                else:
                    await changed.wait()
        except asyncio.CancelledError:
            raise
        except Exception:  # the peer stopped reading or went away: end the connection
            writer.transport.abort()
