"""The Iggy client of the cases: a command by name with a body dict, read back as its
status and decoded reply, with the evidence of the exchange.

A reply is a :class:`Reply`: the status, the body decoded by the codec of the run's
revision (a tree of :class:`~conformance.evidence.Node` that knows where each value
sits), the raw payload, and the evidence (the request sent before it and the reply's
entry).  A check names the fields it judged by the frame annotator's names: ``status``,
then the decoded paths (``topics[0].name``, ``messages[3].payload``); in the request,
``code`` and the request body's paths (``reply.at("name", asked=("name",))``).  A name the
wire-log entry does not hold is left out (the frame stays the evidence).

Every read has the run's deadline.  A reply that does not come, or a close, is a
violation of the requirement the caller names (it stands only if the target is still
there); a status-0 reply that does not decode is a violation of the same requirement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from conformance.client import Connection, PeerClosed, ReplyTimeout, WireLog, judged
from conformance.evidence import Evidence, decoded
from conformance.protocols.iggy import codec
from conformance.protocols.iggy.errors import NAMES as STATUS_NAMES
from conformance.protocols.iggy.errors import IggyError
from conformance.protocols.iggy.messages import CODES
from conformance.suite.case import Violation
from conformance.suite.target import CaseContext


def status_name(status: int) -> str:
    """``3 (INVALID_COMMAND)``: a status with its name from the 0.8 server."""
    name = STATUS_NAMES.get(status)
    return f"{status} ({name})" if name else str(status)


@dataclass(frozen=True)
class Reply:
    """One reply: its status, its body (None when empty or an error), the evidence."""

    name: str
    status: int
    body: Any
    evidence: Evidence
    payload: bytes
    log: WireLog | None = None

    @property
    def ok(self) -> bool:
        return self.status == 0

    def at(self, *fields: str, asked: Sequence[str] = ()) -> Evidence:
        """The evidence with ``fields`` judged in the reply and ``asked`` in the request."""
        return judged(self.log, self.evidence, fields, asked)

    def shown(self) -> str:
        """The reply in the wire's terms: its status, and its size when it has a payload."""
        size = f", {len(self.payload)} payload byte(s)" if self.payload else ", no payload"
        return f"status {status_name(self.status)}{size}"


def revision(ctx: CaseContext) -> str:
    return ctx.target.revision


def classic(ctx: CaseContext) -> bool:
    return ctx.target.revision == "classic"


# ---------------------------------------------------------------- sending


def send(ctx: CaseContext, conn: Connection, name: str, body: Mapping[str, Any]) -> int:
    """Encode ``name`` with ``body`` in the run's revision and send it as one frame."""
    payload = codec.encode_request(name, body, revision(ctx))
    return conn.send(codec.frame_request(CODES[name], payload))


def send_raw(conn: Connection, code: int, payload: bytes, summary: str = "") -> int:
    """A frame of ``code`` and ``payload`` (bytes a codec would not build)."""
    return conn.send(codec.frame_request(code, payload), summary)


def read(
    ctx: CaseContext,
    conn: Connection,
    name: str,
    requirement: str,
    what: str,
    timeout: float | None = None,
) -> Reply:
    """The next reply, decoded as ``name``'s when its status is 0."""
    try:
        frame = conn.recv_frame(timeout)
    except ReplyTimeout as exc:
        ctx.silence(requirement, what, exc.evidence, exc.waited)
    except PeerClosed as exc:
        raise Violation(
            requirement, f"{what}: the target closed the connection instead", exc.evidence
        ) from None
    evidence = conn.exchange()
    status, payload = codec.split_reply(frame)
    body = None
    if status == 0:
        try:
            value = codec.decode_reply(name, payload, revision(ctx))
        except IggyError as exc:
            raise Violation(
                requirement, f"{what}: the {name} reply does not decode ({exc})", evidence
            ) from None
        body = decoded(value, evidence) if value is not None else None
    return Reply(name, status, body, evidence, payload, conn.log)


Check = Callable[[Reply, str, str], None]
"""A check of a reply: it raises a Violation of the requirement, naming ``what``."""


def call(
    ctx: CaseContext,
    conn: Connection,
    name: str,
    body: Mapping[str, Any],
    requirement: str,
    what: str,
    check: Check | None = None,
) -> Reply:
    """Send ``name`` with ``body`` and read its reply, held to ``check`` when given."""
    send(ctx, conn, name, body)
    reply = read(ctx, conn, name, requirement, what)
    if check is not None:
        check(reply, requirement, what)
    return reply


def require_ok(reply: Reply, requirement: str, what: str) -> None:
    if not reply.ok:
        raise Violation(
            requirement, f"{what}: {reply.shown()}, expected status 0 (OK)", reply.at("status")
        )


def require_status(reply: Reply, want: int | Iterable[int], requirement: str, what: str) -> None:
    wanted = (want,) if isinstance(want, int) else tuple(want)
    if reply.status not in wanted:
        expected = " or ".join(status_name(w) for w in wanted)
        raise Violation(
            requirement, f"{what}: {reply.shown()}, expected status {expected}", reply.at("status")
        )


def require_empty(reply: Reply, requirement: str, what: str) -> None:
    require_ok(reply, requirement, what)
    if reply.payload:
        raise Violation(
            requirement,
            f"{what}: status 0 with {len(reply.payload)} payload byte(s), expected an empty reply",
            reply.at(),
        )


def require_found(reply: Reply, requirement: str, what: str) -> None:
    require_ok(reply, requirement, what)
    if reply.body is None:
        raise Violation(
            requirement,
            f"{what}: an empty reply (status 0, no payload), expected it found",
            reply.at("status"),
        )


expect_ok = partial(call, check=require_ok)
"""A reply with status 0."""
expect_empty = partial(call, check=require_empty)
"""A reply with status 0 and no payload (a thing not found, or a command that answers
nothing)."""
expect_found = partial(call, check=require_found)
"""A reply with status 0 and a body (not the empty reply of a thing not found)."""


def expect_status(
    ctx: CaseContext,
    conn: Connection,
    name: str,
    body: Mapping[str, Any],
    want: int | Iterable[int],
    requirement: str,
    what: str,
) -> Reply:
    """A reply with status ``want`` (or one of them)."""

    def check(reply: Reply, req: str, text: str) -> None:
        require_status(reply, want, req, text)

    return call(ctx, conn, name, body, requirement, what, check)


def both(*replies: Reply) -> Evidence:
    """The evidence of several replies a check compared."""
    out = Evidence()
    for r in replies:
        out = out + r.at()
    return out
