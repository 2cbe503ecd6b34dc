"""The checking front-end: a protocol's front-end with a checker and a fault plan around it.

It hands each client frame to the protocol's :class:`ConnectionChecker` before the real
front-end serves it, records both in the :class:`Ledger`, shows the checker every reply
the client gets, and applies the fault plan: an ``error`` fault answers in place of the
front-end (nothing is served, so nothing is written), every other fault lets it serve
and then changes how the reply travels (``slow``: held back; ``split``; ``reset``) or does
the protocol's action first.  The broker answers as the protocol prescribes whatever a
client breaks: checking never changes an answer.

Which connection a framing error belongs to is known from the connection's task: the
server makes a connection's session, deframer and framing replies in that connection's
own asyncio task, so a context variable set by :meth:`new_session` names it.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from conformance.errors import ProtocolError
from conformance.plugin import Plugin
from conformance.server import Frontend, Outcome, Pending, Session
from conformance.validate.contract import ConnectionChecker, Seen, Validation
from conformance.validate.faults import Fault, FaultPlan
from conformance.validate.ledger import Ledger
from conformance.validate.watched import WatchedDeframer
from conformance.wire.framing import Deframer

log = logging.getLogger("conformance.validate")

_CONNECTION: contextvars.ContextVar[CheckingSession | None] = contextvars.ContextVar(
    "checking_session", default=None
)


@dataclass
class _Held:
    """Replies held back until ``deadline`` (a ``slow`` fault), or a pending reply whose
    replies are seen by the checker when they come (and held the extra time)."""

    session: CheckingSession
    request: bytes
    deadline: float
    replies: list[bytes] | None = None
    inner: Pending | None = None
    delay: float = 0.0
    cut: int | None = None
    """A reset fault's cut (bytes written): the reply is not shown to the checker."""
    abandon_on_eof: bool = True
    _ready: list[bytes] | None = field(default=None, init=False)
    _at: float = field(default=0.0, init=False)
    _told: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if self.inner is not None:
            self.abandon_on_eof = self.inner.abandon_on_eof
            self.deadline = self.inner.deadline + self.delay

    def poll(self, now: float) -> list[bytes] | None:
        if self._ready is None:
            got = self.replies if self.inner is None else self.inner.poll(now)
            if got is None:
                return None
            self._ready, self._at = got, now
        due = self.deadline if self.inner is None else self._at + self.delay
        if now < due:
            return None
        if not self._told:
            self._told = True
            if self.cut is None:
                self.session.saw_replies(self.request, self._ready)
            else:
                self.session.cut_reply(self._ready, self.cut)
        return self._ready


class CheckingSession:
    def __init__(
        self, frontend: CheckingFrontend, inner: Session, conn: int, checker: ConnectionChecker
    ) -> None:
        self.frontend = frontend
        self.inner = inner
        self.conn = conn
        self.checker = checker

    def received(self, count: int) -> None:
        told = getattr(self.checker, "received", None)  # optional: which frames came together
        if told is not None:
            told(count)
        self.inner.received(count)

    def closed(self) -> None:
        self._unfinished()
        try:
            found = self.checker.closed(time.monotonic())
        except Exception:
            log.exception("validate: the checker failed at the end of connection %d", self.conn)
            found = []
        self.frontend.ledger.close(self.conn, found)
        self.frontend.forget(self.conn)
        self.inner.closed()

    def _unfinished(self) -> None:
        """A client that ended its connection inside a frame (a length promising more than
        it sent, a last line without its terminator) broke the framing: shown to the
        checker as bytes the deframer could not frame.  Not when the broker closed."""
        deframer = self.frontend.deframer_of(self.conn)
        ledger = self.frontend.ledger
        if deframer is None or deframer.error is not None or not deframer.buffered:
            return
        if ledger.connections[self.conn].closed_by is not None or ledger.stopping:
            return
        why = f"the connection ended inside a frame: {deframer.buffered} bytes of it were sent"
        try:
            violation = self.checker.framing(why)
        except Exception:
            log.exception("validate: the checker failed on an unfinished frame")
            return
        ledger.framing(self.conn, violation, deframer.tail[-deframer.buffered :])

    def _seen(self, frame: bytes) -> Seen:
        try:
            return self.checker.request(frame, time.monotonic())
        except Exception:
            log.exception("validate: the checker failed on a frame of connection %d", self.conn)
            self.frontend.ledger.checker_failures += 1
            return Seen("?", f"not checked ({len(frame)} bytes): the checker failed")

    def saw_replies(self, request: bytes, framed: list[bytes]) -> None:
        """The client gets ``framed`` replies to ``request``: recorded, shown the checker."""
        plugin = self.frontend.plugin
        for data in framed:
            try:
                payloads = plugin.framing.deframer("reply").feed(data)
            except ProtocolError:
                payloads = [data]
            for payload in payloads:
                self.frontend.ledger.reply(self.conn, payload)
                try:
                    self.checker.reply(payload, request)
                except Exception:
                    log.exception("validate: the checker failed on a reply")

    def handle(self, frame: bytes) -> Outcome:
        front = self.frontend
        seen = self._seen(frame)
        deframer = front.deframer_of(self.conn)
        wire = (
            deframer.sent(frame)
            if deframer is not None
            else front.plugin.framing.frame(frame, "request")
        )
        index = front.ledger.request(self.conn, wire, seen)
        fault = front.plan.fire(seen.kind) if front.plan else None
        if fault is not None and fault.effect == "error":
            payload = front.validation.error_reply(frame, fault.value)
            if payload is not None:
                fired = front.ledger.fault(fault, self.conn, index, wire, seen)
                framed = front.plugin.framing.frame(payload, "reply")
                self.saw_replies(frame, [framed])
                closes = front.validation.errors[fault.value].closes
                if closes:
                    front.ledger.closing(self.conn, f"closed by the broker (fault {fired.number})")
                return Outcome([framed], close=closes)
            fault.fired -= 1  # this request cannot carry that error: the next one may
            fault = None
        if fault is not None:
            front.ledger.fault(fault, self.conn, index, wire, seen)
            if fault.effect == "action":
                front.validation.act(fault.value, frame)
        outcome = self.inner.handle(frame)
        return self._with_fault(frame, outcome, fault)

    def _with_fault(self, frame: bytes, outcome: Outcome, fault: Fault | None) -> Outcome:
        delay = fault.value / 1000 if fault is not None and fault.effect == "slow" else 0.0
        cut: float | None = fault.value if fault is not None and fault.effect == "reset" else None
        if outcome.pending is not None:
            at = None if cut is None else int(_pending_size(outcome) * cut)
            outcome.pending = _Held(self, frame, 0.0, inner=outcome.pending, delay=delay, cut=at)
        if outcome.replies:
            if delay:
                held = _Held(self, frame, time.monotonic() + delay, replies=outcome.replies)
                outcome.replies, outcome.pending = [], held
            elif cut is None:
                self.saw_replies(frame, outcome.replies)
            else:
                self.cut_reply(outcome.replies, int(sum(len(r) for r in outcome.replies) * cut))
        if fault is not None and fault.effect == "split":
            outcome.pieces = fault.value
        if cut is not None:
            size = sum(len(r) for r in outcome.replies) or _pending_size(outcome)
            outcome.reset_after = int(size * cut)
            number = self.frontend.ledger.fired[-1].number
            self.frontend.ledger.closing(self.conn, f"reset by the broker (fault {number})")
        elif outcome.close:
            self.frontend.ledger.closing(self.conn, "closed by the broker after its reply")
        return outcome

    def cut_reply(self, framed: list[bytes], written: int) -> None:
        """A reset fault writes the first ``written`` bytes of ``framed``: the client never
        gets the reply, so the checker is not shown it; the ledger says what was written."""
        size = sum(len(r) for r in framed)
        written = min(written, size)
        self.frontend.ledger.event(
            self.conn, f"reply cut: {written} of its {size} bytes written, then the reset"
        )


def _pending_size(outcome: Outcome) -> int:
    """A reset of a reply not yet known (pending) cuts it at half its frame header: the
    size is unknown until it is ready, so a fraction cannot be taken of it."""
    return 8 if outcome.pending is not None else 0


class _WatchedDeframer(WatchedDeframer):
    """Bytes this deframer refuses are a framing violation of the connection whose task
    reads them."""

    def __init__(self, inner: Deframer, frontend: CheckingFrontend) -> None:
        super().__init__(inner, frontend.plugin.framing)
        self.frontend = frontend

    def refused(self, exc: ProtocolError) -> None:
        session = _CONNECTION.get()
        if session is None:
            return
        self.frontend.ledger.closing(session.conn, f"closed by the broker: {exc}")
        violation = session.checker.framing(str(exc))
        self.frontend.ledger.framing(session.conn, violation, self.tail)


class CheckingFrontend:
    """``inner`` served as usual, every client frame checked and the plan's faults applied."""

    def __init__(
        self,
        inner: Frontend,
        plugin: Plugin,
        validation: Validation,
        plan: FaultPlan,
        ledger: Ledger | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.plugin = plugin
        self.validation = validation
        self.plan = plan
        self.ledger = ledger or Ledger()
        self._deframers: dict[int, _WatchedDeframer] = {}
        self.address = ""
        """``HOST:PORT`` once listening."""

    def new_session(self, peer: str) -> CheckingSession:
        conn = self.ledger.open(peer)
        session = CheckingSession(
            self, self.inner.new_session(peer), conn, self.validation.connection(conn)
        )
        _CONNECTION.set(session)
        return session

    def new_deframer(self) -> _WatchedDeframer:
        watched = _WatchedDeframer(self.inner.new_deframer(), self)
        session = _CONNECTION.get()
        if session is not None:
            self._deframers[session.conn] = watched
        return watched

    def framing_error(self, exc: ProtocolError) -> Outcome:
        session = _CONNECTION.get()
        if session is not None and session.conn in self._deframers:
            self._deframers.pop(session.conn).refused(exc)
        return self.inner.framing_error(exc)

    def deframer_of(self, conn: int) -> _WatchedDeframer | None:
        return self._deframers.get(conn)

    def forget(self, conn: int) -> None:
        self._deframers.pop(conn, None)

    def add_change_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        remove = self.inner.add_change_listener(callback)

        def stopping() -> None:  # the server removes its listener first when it stops
            self.ledger.stopping = True
            remove()

        return stopping

    def set_address(self, host: str, port: int) -> None:
        self.address = f"{host}:{port}"
        self.inner.set_address(host, port)
