"""The fuzz harness: send one case to a target and judge what it did.

ORACLE.  Within ``deadline`` seconds of the case's last write, the target answers every
complete frame it was sent with a reply that the codec can frame (success or error), or
closes the connection.  Exceptions and their own rules:

* a request silent by design (Cursus ``STREAM``) owes no reply, nor does anything sent
  after it on that connection;
* a case that ends inside a frame (truncated, a length prefix longer than what follows,
  a prefix over the limit) or with a silent request is followed by a half-close of our
  side; the target must then close the connection within the deadline;
* connections opened with a partial frame and abandoned owe nothing; the case's own
  connection must still be served;
* where the protocol has a session opener (a login), every connection -- the case's, the
  probe's, the canary's -- runs it first (a case's only if its ``session`` says so); its
  replies are owed like any other (silence is a HANG), and a refusal is a BAD_REPLY.

Findings, by class:

* ``HANG`` -- the deadline passes on an open connection while a reply or a close is owed;
* ``DROPPED`` -- the target closed the connection with a reply owed, where the protocol
  says it may not (its fuzzing part's ``may_close``; a protocol without one may close);
* ``CRASH`` -- after the target closed or hung, a new connection is refused (or, twice,
  dropped before it answers a probe request); also a case whose own connection is
  refused (the target died after answering an earlier case: the campaign then looks
  for the culprit among the cases just before it);
* ``STOPPED`` -- after the target closed or hung, new connections are still accepted but
  the probe (the session opener and one valid request) gets no answer within the
  deadline: on one fresh connection, then on every one of two rounds of three at once
  (:func:`probe`): the target stopped serving while its port still accepts (a connection
  stalled on its own is a HANG, not this);
* ``BAD_REPLY`` -- the target sent bytes the codec cannot frame;
* ``CORRUPTION`` -- a canary round trip (produce to a reserved topic no case names, then
  consume), run every N cases and at the end, does not return what was acknowledged;
* ``LEAK`` -- (reference broker only) its resident memory grew past a bound.

This module does the socket work of the fuzzer, the third place after ``server.py`` and
``client.py`` allowed to: the per-case cost has to stay far below a wire-logged
:class:`conformance.client.Connection`.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import socket
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

from conformance.errors import ProtocolError
from conformance.fuzz.case import FuzzCase, FuzzProtocol
from conformance.plugin import SessionRefused, open_session

RECV = 65536

ANSWERED = "answered"
CLOSED = "closed"
HANG = "hang"
BAD_REPLY = "bad_reply"
REFUSED = "refused"
CRASH = "crash"
STOPPED = "stopped"
DROPPED = "dropped"
ABORTED = "aborted"
"""Ran while the target died or stopped: judged by the finding of the case that showed it."""
SLOW = "slow"
"""Showed a target the fuzzer restarts silent for a short look's time, but neither it nor a
case in flight with it stops a fresh start when replayed alone: taken for a slow target (a
loaded machine), not a stop, and no finding (:func:`.campaign._blame`)."""

FINDING_OF = {
    HANG: "HANG",
    DROPPED: "DROPPED",
    BAD_REPLY: "BAD_REPLY",
    CRASH: "CRASH",
    REFUSED: "CRASH",
    STOPPED: "STOPPED",
}
"""The finding class of a case outcome (outcomes not listed are no finding)."""

DOWN = frozenset({CRASH, REFUSED, STOPPED})
"""Outcomes after which the target no longer accepts or serves."""

SERVING = "serving"
SILENT = "silent"
"""What :func:`probe` saw: ``SERVING``, ``REFUSED`` (not accepting, or dropping every
connection) or ``SILENT`` (accepting, not answering)."""


@dataclass(frozen=True)
class Expectation:
    owed: int
    """Replies owed: complete frames before any silent request or bad prefix."""
    must_close: bool
    """The case ends inside a frame or after a silent request: half-close, wait for EOF."""
    may_close: bool = True
    """The target may close before the owed replies (else that close is DROPPED)."""


def expectation(proto: FuzzProtocol, sent: bytes) -> Expectation:
    deframer = proto.new_deframer()
    try:
        frames = deframer.feed(sent)
    except ProtocolError:
        return Expectation(0, True)
    owed = 0
    for payload in frames:
        if not proto.owes_reply(payload):
            return Expectation(owed, True)
        owed += 1
    tail = deframer.error is not None or deframer.buffered > 0
    return Expectation(owed, tail, proto.may_close(sent))


@dataclass(frozen=True)
class Result:
    outcome: str
    replies: int
    latency_s: float
    detail: str = ""

    @property
    def finding(self) -> str:
        return FINDING_OF.get(self.outcome, "")


@functools.lru_cache(maxsize=64)
def _literal(host: str) -> socket.AddressFamily | None:
    """The address family of an IP literal (no name lookup needed), else None."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        return family
    return None


def _connect(host: str, port: int, timeout: float) -> socket.socket:
    """A new connection; OutOfResources when this machine, not the target, is the limit."""
    try:
        return _connect_to(host, port, timeout)
    except OSError as exc:
        if exc.errno in OWN_LIMITS:
            what = "local ports" if exc.errno == errno.EADDRNOTAVAIL else "file descriptors"
            raise OutOfResources(
                f"this machine ran out of {what} ({exc.strerror}): "
                "lower --connections, or raise the limit (ulimit -n)"
            ) from None
        raise


def _connect_to(host: str, port: int, timeout: float) -> socket.socket:
    family = _literal(host)
    if family is None:  # a name: resolve it each time, as it may move
        sock = socket.create_connection((host, port), timeout=timeout)
    else:  # every case connects: skip the resolver for an address
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect((host, port))
        except BaseException:
            sock.close()
            raise
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _Replies:
    """Reply payloads read from ``sock`` one at a time, within one deadline."""

    def __init__(self, proto: FuzzProtocol, sock: socket.socket, deadline: float) -> None:
        self.sock, self.end = sock, time.monotonic() + deadline
        self.deframer = proto.new_reply_deframer()
        self.ready: list[bytes] = []

    def __call__(self) -> bytes:
        while not self.ready:
            left = self.end - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply before the deadline")
            self.sock.settimeout(left)
            data = self.sock.recv(RECV)
            if not data:
                raise ConnectionError("the target closed the connection")
            self.ready += self.deframer.feed(data)
        return self.ready.pop(0)


def open_on(
    proto: FuzzProtocol,
    sock: socket.socket,
    deadline: float,
    own: bool = False,
    session: bool = True,
) -> None:
    """Run the protocol's session opener on ``sock`` (nothing when it has none): a case's
    (``session``: its :attr:`FuzzCase.session`), or with ``own`` the one of the fuzzer's
    own connections (:meth:`FuzzProtocol.own_opening`).  TimeoutError,
    ConnectionError/OSError, ProtocolError or SessionRefused if it fails."""
    opening = proto.own_opening() if own else proto.opening(session)
    if opening is not None:
        open_session(opening, sock.sendall, _Replies(proto, sock, deadline))


def accepts(host: str, port: int, timeout: float) -> bool:
    """True if the target accepts a new connection."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


SILENT_LOOKS = 3
SILENT_ROUNDS = 2
"""A silent probe is confirmed by :data:`SILENT_ROUNDS` rounds of this many fresh
connections at once (one deadline a round), every one of them silent: a target that
stalls one connection in ten at random is then taken for stopped about once in ten
million probes."""

DROPPED = "dropped"
"""A look whose connection was accepted, then closed before any answer."""

OWN_LIMITS = frozenset({errno.EMFILE, errno.ENFILE, errno.EADDRNOTAVAIL, errno.ENOBUFS})
"""Connect errors that are the fuzzer's own machine running out, not the target."""


@dataclass(frozen=True)
class Looks:
    """How :func:`probe` judges a silence: ``rounds`` of :data:`SILENT_LOOKS` looks confirm
    a first silent look, and each look waits ``timeout`` seconds at most (None: the
    caller's deadline).  The default confirms with every round and waits the deadline: a
    target given by address cannot be restarted, so a stop it is charged with must be
    sure.  A target the fuzzer restarts (:class:`conformance.fuzz.owned.Owned`) looks for
    a time measured on its own answers at each start, far shorter than a deadline."""

    rounds: int = SILENT_ROUNDS
    timeout: float | None = None
    at_once: int = 1
    """Looks made at once the first time (more than one: a silence is judged in one look's
    time, every one of them silent, instead of one look and then its rounds)."""


CONFIRMED = Looks()


class OutOfResources(Exception):
    """The fuzzer's machine ran out of file descriptors or local ports."""


def probe(
    proto: FuzzProtocol, host: str, port: int, timeout: float, looks: Looks = CONFIRMED
) -> str:
    """Whether the target serves: SERVING, REFUSED or SILENT (see the oracle).

    A refused connect is REFUSED at once (a supervisor may restart a crashed target
    within milliseconds).  A look that was accepted and then dropped is made once more:
    a dying process's listening socket can still complete a handshake for a moment.  A
    silent look is confirmed as :data:`SILENT_ROUNDS` explains: a target may stall one
    connection on its own (a HANG of that connection, not of the target).  ``looks`` may
    say otherwise (:class:`Looks`: a target the fuzzer restarts)."""
    if looks.timeout is not None:
        timeout = min(timeout, looks.timeout)
    if looks.at_once > 1:
        seen = _looks(proto, host, port, timeout, looks.at_once)
        if seen == REFUSED:  # one of them refused or dropped: looked at once more, below
            seen = DROPPED
    else:
        seen = _look(proto, host, port, timeout)
    if seen == DROPPED:
        time.sleep(0.05)
        seen = _look(proto, host, port, timeout)
    if seen == DROPPED:
        return REFUSED
    if seen != SILENT:
        return seen
    for _ in range(looks.rounds):
        seen = _looks(proto, host, port, timeout)
        if seen != SILENT:
            return seen
    return SILENT


def _looks(
    proto: FuzzProtocol, host: str, port: int, timeout: float, count: int = SILENT_LOOKS
) -> str:
    """``count`` looks at once: SERVING as soon as one is answered, SILENT if all are
    silent, else REFUSED."""
    pool = ThreadPoolExecutor(count, thread_name_prefix="probe")
    try:
        jobs = [pool.submit(_look, proto, host, port, timeout) for _ in range(count)]
        seen_all = set()
        for job in as_completed(jobs):
            seen_all.add(job.result())
            if SERVING in seen_all:
                return SERVING  # the looks still waiting end by their own deadline
    finally:
        pool.shutdown(wait=False)
    return SILENT if seen_all == {SILENT} else REFUSED


def _look(proto: FuzzProtocol, host: str, port: int, timeout: float) -> str:
    try:
        sock = _connect(host, port, timeout)
    except OSError:
        return REFUSED
    with sock:
        try:
            open_on(proto, sock, timeout, own=True)
            sock.sendall(proto.frame(proto.probe_payload))
            sock.settimeout(timeout)
            return SERVING if sock.recv(1) else DROPPED
        except TimeoutError:
            return SILENT
        except SessionRefused:
            return SERVING  # it answered: alive
        except (OSError, ProtocolError):
            return DROPPED


def serves(
    proto: FuzzProtocol, host: str, port: int, timeout: float, looks: Looks = CONFIRMED
) -> bool:
    """True if the target answers a probe (see :func:`probe`)."""
    return probe(proto, host, port, timeout, looks) == SERVING


def _abandon(host: str, port: int, partials: Sequence[bytes], timeout: float) -> None:
    for data in partials:
        with (
            contextlib.closing(_connect(host, port, timeout)) as sock,
            contextlib.suppress(OSError),
        ):
            sock.sendall(data)


def execute(
    proto: FuzzProtocol,
    case: FuzzCase,
    host: str,
    port: int,
    deadline: float,
    looks: Looks = CONFIRMED,
) -> Result:
    """Run ``case`` on a new connection and judge it by the oracle (CRASH included;
    ``looks``: :func:`probe`'s)."""
    start = time.monotonic()
    try:
        _abandon(host, port, case.abandon, deadline)
        sock = _connect(host, port, deadline)
    except OSError as exc:
        return Result(REFUSED, 0, time.monotonic() - start, f"connect: {exc}")
    early = None
    if looks.timeout is not None and looks.timeout < deadline:
        early = (looks.timeout, functools.partial(_looks, proto, host, port, looks.timeout))
    with contextlib.closing(sock):
        result = _opened(proto, sock, deadline, case.session) or _converse(
            proto, sock, case, deadline, early
        )
    if result.outcome in DOWN:
        return result
    if result.outcome in (CLOSED, HANG, DROPPED):
        seen = probe(proto, host, port, deadline, looks)
        if seen == REFUSED:
            return Result(CRASH, result.replies, result.latency_s, "new connections are refused")
        if seen == SILENT:
            why = "new connections are accepted, but a probe request gets no answer"
            return Result(STOPPED, result.replies, result.latency_s, why)
    return result


CRASH_GRACE_S = 0.1
"""How long a target may take to die after a case (a crash after the reply still counts)."""


def shows(
    proto: FuzzProtocol,
    case: FuzzCase,
    finding: str,
    host: str,
    port: int,
    deadline: float,
    looks: Looks = CONFIRMED,
) -> tuple[bool, str]:
    """Run ``case`` and say whether it shows ``finding``, and what happened; a CRASH or a
    STOPPED may come a moment after the case was answered (``looks``: :func:`probe`'s)."""
    result = execute(proto, case, host, port, deadline, looks)
    detail = f"outcome {result.outcome}" + (f": {result.detail}" if result.detail else "")
    if result.finding == finding:
        return True, detail
    if finding in ("CRASH", "STOPPED") and result.outcome in (ANSWERED, CLOSED):
        seen = probe(proto, host, port, deadline, looks)  # at once: it may be restarted
        if seen == SERVING:
            time.sleep(CRASH_GRACE_S)  # or it may take a moment to die
            seen = probe(proto, host, port, deadline, looks)
        if (finding, seen) == ("CRASH", REFUSED):
            return True, f"{detail}, then new connections are refused"
        if (finding, seen) == ("STOPPED", SILENT):
            return True, f"{detail}, then a probe request on a new connection gets no answer"
    return False, detail


def _opened(
    proto: FuzzProtocol, sock: socket.socket, deadline: float, session: bool
) -> Result | None:
    """None once the session is open (or a case that opens none), else the outcome of
    the failed opening."""
    t0 = time.monotonic()
    try:
        open_on(proto, sock, deadline, session=session)
    except TimeoutError:
        return Result(HANG, 0, time.monotonic() - t0, "the session opener got no reply")
    except SessionRefused as exc:
        return Result(BAD_REPLY, 0, time.monotonic() - t0, f"the session was refused: {exc}")
    except ProtocolError as exc:
        return Result(BAD_REPLY, 0, time.monotonic() - t0, f"session opener reply: {exc}")
    except OSError:
        return Result(CLOSED, 0, time.monotonic() - t0, "closed while the session was opened")
    return None


Early = tuple[float, Callable[[], str]]
"""``(after, look)``: a reply owed and silent for ``after`` seconds, the target is looked
at on fresh connections (``look()``, :func:`_looks`) instead of waiting out the deadline."""


def _converse(
    proto: FuzzProtocol,
    sock: socket.socket,
    case: FuzzCase,
    deadline: float,
    early: Early | None = None,
) -> Result:
    expect = expectation(proto, case.sent)
    last = len(case.writes) - 1
    t0 = time.monotonic()
    for i, data in enumerate(case.writes):
        try:
            sock.sendall(data)
        except TimeoutError:  # it stopped reading while a write was pending
            return Result(HANG, 0, time.monotonic() - t0, "stopped reading our writes")
        except OSError:  # the target closed on us: allowed
            return Result(CLOSED, 0, time.monotonic() - t0, "closed while we were sending")
        if case.gap_s and i < last:
            time.sleep(case.gap_s)
    if expect.must_close:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
    return _read(proto, sock, expect, deadline, early)


def _read(
    proto: FuzzProtocol,
    sock: socket.socket,
    expect: Expectation,
    deadline: float,
    early: Early | None = None,
) -> Result:
    """The case's replies, judged by the oracle.  With ``early`` (a target the fuzzer
    restarts), a silence of ``early[0]`` seconds while something is owed makes it look at
    the target on fresh connections at once: if none of them is answered either, the
    target stopped, and the case says so without waiting out its deadline; otherwise the
    case waits on (a slow reply is no stop; a crash closes the case's connection)."""
    t0 = time.monotonic()
    end = t0 + deadline
    deframer = proto.new_reply_deframer()
    replies = 0
    looked_at = t0 + early[0] if early is not None else end
    while True:
        if replies >= expect.owed and not expect.must_close:
            return Result(ANSWERED, replies, time.monotonic() - t0)
        now = time.monotonic()
        if early is not None and now >= looked_at:
            seen, looked_at = early[1](), end
            if seen == SILENT:
                why = "silent, and so are new connections: the target stopped serving"
                return Result(STOPPED, replies, time.monotonic() - t0, why)
        left = min(end, looked_at) - time.monotonic()
        if left <= 0 and looked_at >= end:
            owed = "a close" if replies >= expect.owed else f"{expect.owed - replies} replies"
            return Result(HANG, replies, time.monotonic() - t0, f"silent; still owed {owed}")
        sock.settimeout(max(left, 0.001))
        try:
            data = sock.recv(RECV)
        except TimeoutError:
            continue
        except OSError:  # reset: a close
            return _closed(expect, replies, time.monotonic() - t0, "reset")
        if not data:
            return _closed(expect, replies, time.monotonic() - t0, "")
        try:
            # pushes after a silent request are not counted: only replies owed are
            replies = min(replies + len(deframer.feed(data)), expect.owed)
        except ProtocolError as exc:
            return Result(BAD_REPLY, replies, time.monotonic() - t0, str(exc))
        if deframer.error is not None:
            return Result(BAD_REPLY, replies, time.monotonic() - t0, str(deframer.error))


def _closed(expect: Expectation, replies: int, latency_s: float, how: str) -> Result:
    if replies < expect.owed and not expect.may_close:
        why = f"closed with {expect.owed - replies} of {expect.owed} replies owed"
        return Result(DROPPED, replies, latency_s, f"{why} ({how})" if how else why)
    return Result(CLOSED, replies, latency_s, how)


def exchange(
    proto: FuzzProtocol, host: str, port: int, payloads: Sequence[bytes], deadline: float
) -> list[bytes]:
    """Send each payload framed on one connection and return the replies (one each)."""
    with contextlib.closing(_connect(host, port, deadline)) as sock:
        open_on(proto, sock, deadline, own=True)
        sock.sendall(b"".join(proto.frame(p) for p in payloads))
        deframer = proto.new_reply_deframer()
        out: list[bytes] = []
        end = time.monotonic() + deadline
        while len(out) < len(payloads):
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no reply within {deadline} s")
            sock.settimeout(left)
            data = sock.recv(RECV)
            if not data:
                raise ConnectionError("the target closed the connection")
            out += deframer.feed(data)
        return out


CANARY_TRIES = 5
"""A canary round trip that fails on the way is tried this often on fresh connections: a
target that stalls one connection in ten at random fails five in a row about once in
ten thousand checks."""


class Canary:
    """Produce-then-consume round trips on the reserved topic; remembers what was acked."""

    def __init__(self, proto: FuzzProtocol, host: str, port: int, tag: str, deadline: float):
        self.proto, self.host, self.port = proto, host, port
        self.tag, self.deadline = tag, deadline
        self.acked: dict[int, bytes] = {}
        self.checks = 0

    def check(self) -> str:
        """Write a fresh value, then read back every value acked so far: '' or what is wrong.

        A round trip that fails on the way (a connection stalled, dropped, refused) is made
        once more on fresh connections: one stalled connection is a HANG, not lost data."""
        problem = ""
        for _ in range(CANARY_TRIES):
            self.checks += 1
            value = f"canary {self.tag} #{self.checks}".encode()
            try:
                produce = self.proto.canary_produce([value])
                readback = self.proto.canary_readback()
                sent = [produce, *readback]
                replies = exchange(self.proto, self.host, self.port, sent, self.deadline)
                offset = self.proto.canary_acked(replies[-1])
                if offset is None:
                    said = self.proto.describe(replies[0], [produce])
                    if not readback:
                        return f"the canary write was refused: {said}"
                    read = self.proto.describe(replies[-1], readback[-1:])
                    return f"the canary write ({said}) is not in what was read back: {read}"
                self.acked[offset] = value
                return self._verify()
            except (OSError, TimeoutError, ProtocolError, SessionRefused) as exc:
                problem = f"the canary round trip failed: {exc}"
        return problem

    def _verify(self) -> str:
        pending = dict(self.acked)
        while pending:
            first = min(pending)
            (reply,) = exchange(
                self.proto, self.host, self.port, [self.proto.canary_consume(first)], self.deadline
            )
            values = self.proto.canary_values(reply)
            if not values:
                return f"acknowledged offset {first} ({pending[first]!r}) reads back nothing"
            for offset in range(first, first + len(values)):
                want = pending.pop(offset, None)
                got = values[offset - first]
                if want is not None and got != want:
                    return f"acknowledged offset {offset} holds {got!r}, not {want!r}"
        return ""
