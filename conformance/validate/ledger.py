"""What ``serve --validate`` saw: every connection, frame, violation and fault, in order.

The checking front-end (:mod:`conformance.validate.frontend`) writes here as frames come
and go; the report (:mod:`conformance.validate.results`) is built from it when the broker
stops.  Memory is bounded: each connection keeps the bytes of its first
:data:`FRAMES_KEPT` frames (each cut to :data:`BYTES_KEPT`) and of every frame a
violation or a fault names; the rest are counted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from conformance.validate.contract import Seen, Violation
from conformance.validate.faults import Fault

FRAMES_KEPT = 400
BYTES_KEPT = 64 * 1024
FRAMES_MAX = 200_000
"""Frames recorded at most, over every connection: past it, only what a violation or a
fault names (a long SDK test run keeps its counts, not its every frame)."""
BYTES_MAX = 256 * 1024 * 1024
"""Bytes of frames kept in all; past it only a frame a violation or fault names keeps its
bytes (a frame that broke nothing keeps at most :data:`PLAIN_KEPT`)."""
PLAIN_KEPT = 4096
"""Bytes kept of a frame that broke nothing (what a report shows of it)."""
FOUND_KEPT = 1000
"""Violations of one requirement kept with their frames (all are counted)."""
FOLLOW = 40
"""Events after a fault read for what the client did next (at most): those of the faulted
connection and of connections opened after the fault (a retry, a reconnect), never those
of connections that were already open (another client's traffic would drown it)."""
FOLLOW_S = 15.0
"""... and for how long after it."""


@dataclass(slots=True)
class Frame:
    """A request the client sent (``send``), a reply it got (``recv``) or an event."""

    index: int
    t: float
    conn: int
    dir: str
    size: int
    data: bytes | None
    """The frame's bytes (a request: the whole frame; a reply: its payload), or None once
    the connection kept enough."""
    summary: str = ""


@dataclass
class Found:
    """A violation, the connection and the request frame it was found in."""

    violation: Violation
    conn: int
    frame: int


@dataclass
class Event:
    """Something that follows a fault: a request (with what the checker saw), a new
    connection, or a connection's end."""

    t: float
    conn: int
    what: str  # request | open | close | fault (another fault fired: ``by`` names it)
    seen: Seen | None = None
    frame: int | None = None
    """A request's frame (its index in :attr:`Ledger.frames`)."""
    by: str | None = None
    """A close the broker made, and why (None: the client closed)."""


@dataclass
class Fired:
    """A fault that fired: on which request, and the events that followed it."""

    number: int
    fault: Fault
    conn: int
    frame: int
    seen: Seen
    t: float
    after: list[Event] = field(default_factory=list)
    last_conn: int = 0
    """The newest connection when the fault fired: later ones are followed."""


@dataclass
class Connection:
    conn: int
    peer: str
    opened: float
    closed: float | None = None
    closed_by: str | None = None
    """Why the broker closed the connection (None: the client closed it)."""
    requests: int = 0
    checked: dict[str, int] = field(default_factory=dict)
    """Each requirement checked on this connection, with how many requests checked it."""
    frames: list[int] = field(default_factory=list)
    """Indexes in :attr:`Ledger.frames` of this connection's frames, in order."""


class Ledger:
    def __init__(self, clock: object = time.monotonic) -> None:
        self._clock = clock
        self.start = self._now()
        self.frames: list[Frame] = []
        self.connections: dict[int, Connection] = {}
        self.found: list[Found] = []
        self.broken: dict[str, int] = {}
        """How many times each requirement was broken (``found`` keeps the first ones)."""
        self.fired: list[Fired] = []
        self.checker_failures = 0
        self.kept_bytes = 0
        self.stopping = False
        """Set when the broker stops: the connections it then closes are its doing."""

    def _now(self) -> float:
        return self._clock()  # type: ignore[operator, no-any-return]

    def _t(self) -> float:
        return self._now() - self.start

    # ------------------------------------------------------------- connections

    def open(self, peer: str) -> int:
        conn = len(self.connections) + 1
        self.connections[conn] = Connection(conn, peer, self._t())
        self._follow(Event(self._t(), conn, "open"))
        return conn

    def closing(self, conn: int, why: str) -> None:
        """The broker is about to close ``conn`` (``why``: a reset fault, a framing error)."""
        c = self.connections[conn]
        if c.closed_by is None:
            c.closed_by = why

    def close(self, conn: int, violations: list[Violation]) -> None:
        c = self.connections[conn]
        if c.closed is not None:
            return
        c.closed = self._t()
        if c.closed_by is None and self.stopping:
            c.closed_by = "closed as the broker stopped"
        index = self.event(conn, c.closed_by or "closed by the client")
        for v in violations:
            self._found(v, conn, index)
        self._follow(Event(self._t(), conn, "close", by=c.closed_by))

    # ------------------------------------------------------------------ frames

    def _found(self, violation: Violation, conn: int, frame: int) -> None:
        n = self.broken.get(violation.requirement, 0)
        self.broken[violation.requirement] = n + 1
        if n < FOUND_KEPT:
            self.found.append(Found(violation, conn, frame))

    def _frame(self, conn: int, direction: str, data: bytes, summary: str, keep: bool) -> int:
        """The frame recorded; its index, or -1 when past the bounds (not recorded)."""
        c = self.connections[conn]
        kept = keep or (len(c.frames) < FRAMES_KEPT and self.kept_bytes < BYTES_MAX)
        if not keep and (len(self.frames) >= FRAMES_MAX or (direction == "recv" and not kept)):
            return -1
        data = data[: BYTES_KEPT if keep else PLAIN_KEPT] if kept else b""
        self.kept_bytes += len(data)
        frame = Frame(
            len(self.frames),
            self._t(),
            conn,
            direction,
            len(data),
            data if kept else None,
            summary,
        )
        self.frames.append(frame)
        c.frames.append(frame.index)
        return frame.index

    def request(self, conn: int, frame: bytes, seen: Seen) -> int:
        """A request frame and what the checker saw in it; its index."""
        c = self.connections[conn]
        c.requests += 1
        for req in seen.checked:
            c.checked[req] = c.checked.get(req, 0) + 1
        index = self._frame(conn, "send", frame, seen.summary, bool(seen.violations))
        for v in seen.violations:
            self._found(v, conn, index)
            if v.requirement not in c.checked:
                c.checked[v.requirement] = 1
        self._follow(Event(self._t(), conn, "request", seen, index if index >= 0 else None))
        return index

    def reply(self, conn: int, payload: bytes, keep: bool = False) -> int:
        return self._frame(conn, "recv", payload, "", keep)

    def event(self, conn: int, text: str) -> int:
        return self._frame(conn, "event", b"", text, True)

    def framing(self, conn: int, violation: Violation, data: bytes) -> None:
        """Bytes the deframer refused on ``conn``."""
        index = self._frame(conn, "send", data, f"refused: {violation.message}", True)
        self._found(violation, conn, index)
        c = self.connections[conn]
        c.checked[violation.requirement] = c.checked.get(violation.requirement, 0) + 1

    # ------------------------------------------------------------------ faults

    def fault(self, fault: Fault, conn: int, frame: int, data: bytes, seen: Seen) -> Fired:
        """``fault`` fired on the request recorded as ``frame`` (its bytes: ``data``)."""
        if frame < 0:  # past the bounds: recorded now, as a fault names it
            frame = self._frame(conn, "send", data, seen.summary, True)
        fired = Fired(len(self.fired) + 1, fault, conn, frame, seen, self._t())
        fired.last_conn = len(self.connections)
        self._follow(Event(fired.t, conn, "fault", seen, frame, by=f"fault {fired.number}"))
        self.fired.append(fired)
        self.frames[frame].data = data[:BYTES_KEPT]  # kept even past the bounds
        self.event(conn, f"fault {fired.number}: {fault.describe()}")
        return fired

    def _follow(self, event: Event) -> None:
        for fired in self.fired:
            mine = event.conn == fired.conn or event.conn > fired.last_conn
            if mine and len(fired.after) < FOLLOW and event.t - fired.t <= FOLLOW_S:
                fired.after.append(event)

    # ------------------------------------------------------------------ views

    def violations_of(self, requirement: str) -> list[Found]:
        return [f for f in self.found if f.violation.requirement == requirement]

    def checked_count(self, requirement: str) -> tuple[int, list[int]]:
        """How many requests were checked against ``requirement``, and on which
        connections."""
        total, conns = 0, []
        for c in self.connections.values():
            n = c.checked.get(requirement, 0)
            if n:
                total += n
                conns.append(c.conn)
        return total, conns
