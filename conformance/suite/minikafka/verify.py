"""The mini-Kafka client of the cases: a request framed and sent, the next reply frame read
back as a :class:`Reply` (its payload, the codec's reading of it, the evidence).

Frames are ``[int32 length counting its own 4 bytes][payload]`` both ways; the wire log
keeps a reply's payload (the length field is the deframer's), so a reason that speaks of
a whole reply frame rebuilds it (:func:`frame_hex`).  A check names the fields it judged
by the annotator's names (``conformance/protocols/minikafka/annotate.py``): in a reply
``type``, ``success``, ``offset``, ``next_offset``, ``messages count``,
``messages[i].offset``, ``messages[i].data``, ``error``; in a request ``type``, ``topic``,
``offset``, ``batch_size``, ``data``, ``trailing bytes``.  A name the wire-log entry does
not hold is left out (the frame stays the evidence).

Every read has the run's deadline.  A reply that does not come, a close, or the error path
where success was asked is a violation of the requirement the caller names (a silence or
a close stands only if the target is still there).  What a reply frame holds is judged by
the requirement that defines it, whoever reads it, so a target that breaks one rule fails
that rule only: bytes our deframer refuses break MK-FRAME-1 (so does a reply that does not
read as one when the bytes after it do not frame: its length did not say where it ends);
a type byte other than the reply's, or a success byte other than 1 or 0, MK-FRAME-4; a
reply that does not read whole as its type's MK-PROD-1, MK-CONS-1 or MK-FLUSH-1
(:data:`LAYOUT`); an error reply's shape MK-ERR-1 (its own case, ``test_errors.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from conformance.client import BadFraming, Connection, PeerClosed, ReplyTimeout, WireLog, judged
from conformance.evidence import Evidence
from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.suite.case import Violation
from conformance.suite.shown import show
from conformance.suite.target import CaseContext

FLUSH_FRAME = bytes.fromhex("0000000505")
"""FLUSH: length 5 (its own 4 bytes and the type byte), type 0x05."""
FLUSH_OK = bytes.fromhex("0601")
"""The payload of FLUSH's success reply: type 0x06, success 1 (frame ``000000060601``)."""
LAYOUT: dict[int, str] = {
    m.PRODUCE_REQUEST: "MK-PROD-1",
    m.CONSUME_REQUEST: "MK-CONS-1",
    m.FLUSH_REQUEST: "MK-FLUSH-1",
}
"""The requirement that defines the reply to each request type, whatever step reads it."""
FRAMING_GRACE_S = 0.1
"""How long a reply that is wrong waits for the bytes after it, to tell a length that did
not end it (MK-FRAME-1) from a frame that holds the wrong bytes."""


def doc(ctx: CaseContext) -> bool:
    return ctx.target.revision == "doc"


def real(ctx: CaseContext) -> bool:
    return ctx.target.revision == "real"


def frame_hex(payload: bytes, limit: int = 40) -> str:
    """A reply frame as the wire carried it, in hex: its length field (counting itself, as
    our deframer read it) and its payload, cut after ``limit`` payload bytes."""
    shown = payload[:limit].hex()
    more = f"... ({len(payload)} payload bytes)" if len(payload) > limit else ""
    return f"{len(payload) + 4:08x} {shown}{more}"


@dataclass(frozen=True)
class Reply:
    """One reply frame: its payload, the codec's reading (None when it does not decode,
    and ``problem`` says why), and the evidence (the request sent before it, its entry)."""

    payload: bytes
    reply: codec.Reply | None
    problem: str
    evidence: Evidence
    log: WireLog | None = None
    conn: Connection | None = field(default=None, compare=False, repr=False)
    """The connection it came on (to see whether the bytes after it frame)."""

    @property
    def type(self) -> int | None:
        return self.payload[0] if self.payload else None

    @property
    def success(self) -> int | None:
        return self.payload[1] if len(self.payload) > 1 else None

    @property
    def failure(self) -> bool:
        """The error path: a success byte 0."""
        return self.success == m.FAILURE

    def at(self, *fields: str, asked: Sequence[str] = ()) -> Evidence:
        """The evidence with ``fields`` judged in the reply and ``asked`` in the request."""
        return judged(self.log, self.evidence, fields, asked)

    def shown(self) -> str:
        """The reply in the wire's terms: what the codec reads, or its bytes."""
        if self.reply is not None:
            return codec.describe(self.reply)
        return f"{frame_hex(self.payload)} ({self.problem})"


def evidence_of(*replies: Reply, fields: Sequence[str] = ()) -> Evidence:
    """The evidence of several replies a check compared, ``fields`` judged in each."""
    out = Evidence()
    for r in replies:
        out = out + r.at(*fields)
    return out


# ---------------------------------------------------------------- sending


def send(
    conn: Connection, request: codec.Request, *, trailing: bytes = b"", summary: str = ""
) -> int:
    """``request`` framed (its length counting its own 4 bytes), ``trailing`` bytes inside
    the frame after its last field; its wire-log entry."""
    payload = codec.encode_request(request) + trailing
    return conn.send(codec.frame(payload), summary)


def send_raw(conn: Connection, data: bytes, summary: str = "") -> int:
    """Bytes as given (a frame the codec would not write); its wire-log entry."""
    return conn.send(data, summary)


def read(
    ctx: CaseContext,
    conn: Connection,
    requirement: str,
    what: str,
    *,
    timeout: float | None = None,
) -> Reply:
    """The next reply frame on ``conn``, decoded when it decodes."""
    try:
        payload = conn.recv_frame(timeout)
    except ReplyTimeout as exc:
        ctx.silence(requirement, what, exc.evidence, exc.waited)
    except PeerClosed as exc:
        raise Violation(
            requirement, f"{what}: the target closed the connection instead", exc.evidence
        ) from None
    except BadFraming as exc:
        # the last frame of the evidence is where the bytes that do not frame begin (the
        # reply before them, whose length ended there, or those bytes): its type is judged
        raise Violation(
            "MK-FRAME-1",
            f"{what}: a reply frame our deframer refuses ({exc}); a reply's length counts its"
            " own 4 bytes, so it is 5 or more",
            judged(conn.log, exc.evidence, ("type",)),
        ) from None
    evidence = conn.exchange()
    try:
        decoded: codec.Reply | None = codec.decode_reply(payload)
        problem = ""
    except codec.MiniKafkaError as exc:
        decoded, problem = None, exc.message
    return Reply(payload, decoded, problem, evidence, conn.log, conn)


def call(
    ctx: CaseContext,
    conn: Connection,
    request: codec.Request,
    requirement: str,
    what: str | None = None,
) -> Reply:
    """Send ``request`` and read its reply (whatever it is)."""
    send(conn, request)
    return read(ctx, conn, requirement, what or codec.describe(request))


def require_framed(reply: Reply, what: str) -> None:
    """``reply``, which is wrong, is followed by bytes that frame (or by nothing within
    :data:`FRAMING_GRACE_S`); bytes our deframer refuses right after it mean its length did
    not say where the reply ends (MK-FRAME-1), which explains whatever else is wrong in it.
    Called only on the way to a violation: a frame that follows is read and dropped."""
    if reply.conn is None:
        return
    try:
        reply.conn.recv_frame(FRAMING_GRACE_S)
    except BadFraming as exc:
        raise Violation(
            "MK-FRAME-1",
            f"{what}: answered {frame_hex(reply.payload)}, and the bytes after that frame do"
            f" not frame ({exc}): the reply's length does not say where it ends (a length"
            " counts its own 4 bytes)",
            reply.at("type", "success") + exc.evidence,
        ) from None
    except (ReplyTimeout, PeerClosed):
        return


def require_type(reply: Reply, request_type: int, what: str, *, success_byte: bool = False) -> None:
    """``reply`` opens with the type byte of the reply to ``request_type`` and, when it has
    one (always, with ``success_byte``), a success byte 1 or 0 (MK-FRAME-4).  A reply with
    no success byte is otherwise cut short: its type's layout's business (:data:`LAYOUT`)."""
    want = m.REPLY_TYPE[request_type]
    if reply.type != want:
        require_framed(reply, what)
        raise Violation(
            "MK-FRAME-4",
            f"{what}: answered {frame_hex(reply.payload)}, first payload byte"
            f" 0x{reply.type or 0:02x}, expected 0x{want:02x} ({m.NAMES[want]})",
            reply.at("type"),
        )
    if reply.success not in (m.SUCCESS, m.FAILURE) and (success_byte or reply.success is not None):
        require_framed(reply, what)
        raise Violation(
            "MK-FRAME-4",
            f"{what}: answered {frame_hex(reply.payload)}, "
            + (
                f"success byte 0x{reply.success:02x}"
                if reply.success is not None
                else "with no success byte after the type"
            )
            + ", expected a success byte 1 or 0",
            reply.at("type", "success"),
        )


def require_layout(reply: Reply, request_type: int, what: str) -> None:
    """``reply`` reads whole as the reply to ``request_type`` (:data:`LAYOUT` names the
    requirement), unless the bytes after it show its length was wrong (MK-FRAME-1)."""
    if reply.reply is None:
        require_framed(reply, what)
        want = m.REPLY_TYPE[request_type]
        raise Violation(
            LAYOUT[request_type],
            f"{what}: answered {frame_hex(reply.payload)}, which does not read as a"
            f" {m.NAMES[want]} ({reply.problem})",
            reply.at("type", "success"),
        )


def require_success(reply: Reply, request_type: int, requirement: str, what: str) -> None:
    """``reply`` is the success path of the reply to ``request_type``, read whole: the error
    path breaks ``requirement``; a wrong type or success byte, or a reply that does not read
    as its type's, breaks the requirement that defines it (see the module's notes)."""
    require_type(reply, request_type, what)
    if reply.failure:
        got = (
            f"success 0 with error {show(reply.reply.error, 120)}"
            if isinstance(reply.reply, codec.Failure)
            else f"the error path {frame_hex(reply.payload)}"
        )
        raise Violation(
            requirement,
            f"{what}: answered {got}, expected success 1",
            reply.at("success", "error"),
        )
    require_layout(reply, request_type, what)


def require_failure(reply: Reply, request_type: int, requirement: str, what: str) -> None:
    """``reply`` is the error path of the reply to ``request_type``: its type and success
    byte 0 (how the rest of it reads is MK-ERR-1's business); a wrong type or success byte
    is MK-FRAME-4's, a reply with no success byte its type's layout's."""
    require_type(reply, request_type, what)
    if reply.success is None:
        require_layout(reply, request_type, what)
    if reply.success != m.FAILURE:
        want = m.REPLY_TYPE[request_type]
        raise Violation(
            requirement,
            f"{what}: answered {reply.shown()}, expected the error path"
            f" [0x{want:02x}][0x00][int32 error length][error]",
            reply.at("type", "success"),
        )


def expect_success(
    ctx: CaseContext,
    conn: Connection,
    request: codec.Request,
    requirement: str,
    what: str | None = None,
) -> Reply:
    """Send ``request``; its reply is its type's success path, decoded whole."""
    text = what or codec.describe(request)
    reply = call(ctx, conn, request, requirement, text)
    require_success(reply, request.type, requirement, text)
    return reply


def answered(
    ctx: CaseContext, conn: Connection, requirement: str, what: str, timeout: float | None = None
) -> Reply:
    """A FLUSH on ``conn`` gets a reply frame, whatever it holds: the connection is served
    (how FLUSH is answered is MK-FLUSH-1's business, not the caller's)."""
    send_raw(conn, FLUSH_FRAME, "FLUSH (is the connection served?)")
    return read(ctx, conn, requirement, what, timeout=timeout)
