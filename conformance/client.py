"""Connections to a target broker: send bytes, read frames with a deadline, log the wire.

This is one of the two modules that touch sockets (the other is ``server.py``).  It knows
no protocol: a connection is given a deframer factory and frames whatever the codec
produces.  Every read has a deadline; when it passes, :class:`ReplyTimeout` is raised,
and a connection closed by the peer raises :class:`PeerClosed`.

Every byte sent and received, and every connect, close and timeout, is appended to a
:class:`WireLog` with a timestamp relative to the log's start: it is the evidence that
each verdict carries.  A connection knows which entries it wrote: :meth:`Connection.exchange`
is the evidence of the reply it returned last (its entry and the request sent before it),
and every :class:`ClientError` it raises (a close, a reset, a deadline, bytes that do not
frame) carries the evidence of its event (``exc.evidence``; a close or a deadline says so
in ``Evidence.ending``).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.errors import ProtocolError
from conformance.evidence import Evidence, Judged, fields_named
from conformance.plugin import FieldSpan, Opening, SessionRefused, open_session
from conformance.wire.framing import Deframer

HEX_KEEP = 4096
"""Bytes of each wire-log entry kept as hex by default (the length is always recorded;
``conformance run --wire-keep`` changes it)."""
FIELDS_KEEP = 4096
"""Fields of each wire-log entry kept (those that start within the kept bytes): enough
for a Fetch reply's decoded records and the fields after them."""


class ClientError(Exception):
    """A problem talking to the target (not a verdict by itself); ``evidence`` is the
    request sent last on the connection and the entry of the event (a close, a reset,
    the deadline passing, bytes that do not frame)."""

    def __init__(
        self, message: str, evidence: Evidence | None = None, waited: float | None = None
    ) -> None:
        super().__init__(message)
        self.evidence = evidence if evidence is not None else Evidence()
        self.waited = waited
        """How long the read waited, for a deadline that passed (seconds)."""


class ConnectFailed(ClientError):
    pass


class ReplyTimeout(ClientError):
    """No complete frame arrived before the deadline."""


class PeerClosed(ClientError):
    """The target closed the connection."""


class BadFraming(ClientError):
    """The target sent bytes the deframer refuses."""


@dataclass
class WireEntry:
    t: float
    conn: int
    dir: str  # send | recv | event
    len: int
    hex: str
    summary: str
    fields: list[list[Any]] = field(default_factory=list)
    """``[name, start, end, value]`` of the protocol's fields in the bytes, from its frame
    annotator, computed on every byte before the hex was cut."""

    def as_dict(self) -> dict[str, Any]:
        out = {
            "t": round(self.t, 6),
            "conn": self.conn,
            "dir": self.dir,
            "len": self.len,
            "hex": self.hex,
            "truncated": len(self.hex) // 2 < self.len,
            "summary": self.summary,
        }
        if self.fields:
            out["fields"] = self.fields
        return out


@dataclass
class WireLog:
    start: float = field(default_factory=time.monotonic)
    entries: list[WireEntry] = field(default_factory=list)
    describe: Callable[[str, bytes], str] | None = None
    annotate: Callable[[str, bytes], list[FieldSpan]] | None = None
    """``annotate(dir, data)``: the fields of what was sent (``send``: raw bytes) or
    received (``recv``: a frame payload)."""
    keep: int = HEX_KEEP
    """Bytes of each entry kept as hex; an entry cut shorter says so (``truncated``)."""
    _next_conn: int = 0

    def new_conn(self) -> int:
        self._next_conn += 1
        return self._next_conn

    def add(self, conn: int, direction: str, data: bytes = b"", summary: str = "") -> int:
        """Append an entry; its index in the log (what evidence names it by)."""
        if not summary and data and self.describe is not None:
            summary = self.describe(direction, data)
        fields: list[list[Any]] = []
        if data and self.annotate is not None and direction in ("send", "recv"):
            kept = [s for s in self.annotate(direction, data) if s.start < self.keep]
            fields = [[s.name, s.start, s.end, json_value(s.value)] for s in kept[:FIELDS_KEEP]]
        self.entries.append(
            WireEntry(
                time.monotonic() - self.start,
                conn,
                direction,
                len(data),
                data[: self.keep].hex(),
                summary,
                fields,
            )
        )
        return len(self.entries) - 1

    def as_list(self) -> list[dict[str, Any]]:
        return [e.as_dict() for e in self.entries]

    def render(self) -> str:
        lines = []
        for e in self.entries:
            shown = e.hex if len(e.hex) <= 96 else e.hex[:96] + "..."
            lines.append(f"{e.t:8.4f} #{e.conn} {e.dir:5} {e.len:>9} {e.summary}  {shown}")
        return "\n".join(lines)


def json_value(value: object) -> object:
    """A field value as JSON can hold it (bytes as text, long text cut)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "backslashreplace")
    if isinstance(value, str) and len(value) > 300:
        return value[:300] + "..."
    return value if isinstance(value, int | str | None) else str(value)


def judged(
    log: WireLog | None, evidence: Evidence, fields: Sequence[str], asked: Sequence[str] = ()
) -> Evidence:
    """``evidence`` (a request and its reply) with ``fields`` judged in its last frame and
    ``asked`` in its first, each name kept only where ``log``'s entry holds it (the reports'
    rule: a judged name must resolve); every name kept when there is no log to ask."""

    def held(entry: int, names: Sequence[str]) -> tuple[str, ...]:
        if log is None or not 0 <= entry < len(log.entries):
            return tuple(names)
        have = [f[0] for f in log.entries[entry].fields]
        return tuple(n for n in names if fields_named(n, have))

    frames = list(evidence.frames)
    if not frames:
        return evidence
    frames[-1] = Judged(frames[-1].entry, held(frames[-1].entry, fields))
    if asked and len(frames) > 1:
        frames[0] = Judged(frames[0].entry, held(frames[0].entry, asked))
    return Evidence(tuple(frames), evidence.ending)


class Connection:
    """One TCP connection to the target, with a deframer and a deadline on every read."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        deframer: Deframer,
        log: WireLog,
        timeout: float,
    ) -> None:
        self.log = log
        self.timeout = timeout
        self.id = log.new_conn()
        self._deframer = deframer
        self._frames: list[tuple[bytes, int, int | None]] = []
        """Frames read and not yet returned: payload, its entry, the request sent before it."""
        self.sent: int | None = None
        """The wire-log entry of the last request sent on this connection."""
        self.replied: tuple[int, int | None] | None = None
        """The entry of the frame :meth:`recv_frame` returned last, and of the request
        sent before it arrived."""
        self._ended: int | None = None  # the entry of the close or reset, once it came
        self.closed_by_peer = False
        self.session: Any = None
        """What the protocol's session opener returned (see :meth:`open`)."""
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            log.add(self.id, "event", summary=f"connect to {host}:{port} failed: {exc}")
            raise ConnectFailed(f"cannot connect to {host}:{port}: {exc.strerror or exc}") from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        log.add(self.id, "event", summary=f"connected to {host}:{port}")

    def send(self, data: bytes, summary: str = "") -> int:
        """Send ``data``; its wire-log entry."""
        self.sent = sent = self.log.add(self.id, "send", data, summary)
        try:
            self.sock.settimeout(self.timeout)
            self.sock.sendall(data)
        except TimeoutError:
            event = self.log.add(
                self.id, "event", summary="send timed out: the target stopped reading"
            )
            raise ReplyTimeout(
                "the target stopped reading what we send", self._ending(event, "timeout")
            ) from None
        except OSError as exc:
            self._ended = self.log.add(self.id, "event", summary=f"send failed: {exc}")
            raise PeerClosed(
                f"sending failed: {exc.strerror or exc}", self._ending(self._ended, "close")
            ) from None
        return sent

    def _ending(self, event: int | None, how: str) -> Evidence:
        return Evidence.of(self.sent, event, ending=how)

    def exchange(self) -> Evidence:
        """The evidence of the frame :meth:`recv_frame` returned last: the request sent
        before it on this connection, and its entry."""
        if self.replied is None:
            return Evidence.of(self.sent, None)
        reply, request = self.replied
        return Evidence.of(request, reply)

    def recv_frame(self, timeout: float | None = None) -> bytes:
        """The next whole frame payload; ReplyTimeout or PeerClosed otherwise (each
        carrying the evidence of the event)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not self._frames:
            if self._deframer.error is not None:
                raise BadFraming(str(self._deframer.error), self.exchange())
            if self.closed_by_peer:
                raise PeerClosed(
                    "the target closed the connection", self._ending(self._ended, "close")
                )
            left = deadline - time.monotonic()
            if left <= 0:
                event = self.log.add(self.id, "event", summary="deadline passed with no reply")
                raise ReplyTimeout(
                    "no reply before the deadline",
                    self._ending(event, "timeout"),
                    self.timeout if timeout is None else timeout,
                )
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 20)
            except TimeoutError:
                continue
            except OSError as exc:
                self._ended = self.log.add(self.id, "event", summary=f"connection reset: {exc}")
                self.closed_by_peer = True
                raise PeerClosed(
                    f"the connection was reset: {exc.strerror or exc}",
                    self._ending(self._ended, "close"),
                ) from None
            if not data:
                self._ended = self.log.add(self.id, "event", summary="closed by the target")
                self.closed_by_peer = True
                raise PeerClosed(
                    "the target closed the connection", self._ending(self._ended, "close")
                )
            try:
                frames = self._deframer.feed(data)
            except ProtocolError as exc:
                bad = self.log.add(self.id, "recv", data, summary=f"unframeable: {exc}")
                raise BadFraming(str(exc), Evidence.of(self.sent, bad)) from None
            for f in frames:
                self._frames.append((f, self.log.add(self.id, "recv", f), self.sent))
            if not frames:
                self.log.add(self.id, "recv", data, summary="partial frame")
        frame, entry, request = self._frames.pop(0)
        self.replied = (entry, request)
        return frame

    def wait_closed(self, timeout: float | None = None) -> bool:
        """True when the peer closes (or resets) before the deadline; frames read are dropped."""
        try:
            while True:
                self.recv_frame(timeout)
        except PeerClosed:
            return True
        except (ReplyTimeout, BadFraming):
            return False

    def open(self, opening: Opening | None) -> None:
        """Run the protocol's session opener on this connection (nothing if None);
        SessionRefused, ReplyTimeout or PeerClosed if it does not complete."""
        if opening is not None:

            def send(data: bytes) -> None:
                self.send(data, "session opener")

            self.session = open_session(opening, send, self.recv_frame)

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            self.log.add(self.id, "event", summary="closed by us")

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


PARTIAL_REPLY = "a reply began, but was not whole within"
"""How :func:`probe` says that an answer came too slowly (not that none came)."""


def probe(
    host: str,
    port: int,
    request: bytes,
    deframer: Deframer,
    timeout: float,
    opening: Opening | None = None,
    *,
    lenient: bool = False,
) -> str | None:
    """None when ``request`` on a new connection (opened by ``opening`` first, if the
    protocol has a session opener) gets a frame back in time, else why not.  With
    ``lenient`` (is a target that answered before still there?) any answer counts: a
    refused session or bytes that do not frame are the target talking."""
    log = WireLog()
    try:
        with Connection(host, port, deframer=deframer, log=log, timeout=timeout) as conn:
            conn.open(opening)
            conn.send(request)
            conn.recv_frame()
    except ConnectFailed as exc:
        return str(exc)
    except ReplyTimeout:
        if deframer.buffered:
            return f"{PARTIAL_REPLY} {timeout:.3g}s ({deframer.buffered} bytes came)"
        return f"no reply within {timeout:.3g}s"
    except BadFraming as exc:
        return None if lenient else str(exc)
    except PeerClosed as exc:
        return str(exc)
    except SessionRefused as exc:
        return None if lenient else f"the session was refused: {exc}"
    except ProtocolError as exc:  # a session opener's reply that does not decode
        return None if lenient else f"the session opener's reply: {exc}"
    return None
