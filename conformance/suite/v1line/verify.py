"""The V1 line client of the cases: a command and its args sent as one line, read back as
a :class:`Reply` (the reply line parsed by the codec, an OK payload decoded, the evidence).

Every request carries a correlation id of its own (:func:`next_cid`), so a check can say
which request a reply answers.  A check names the fields it judged by the annotator's
names (``conformance/protocols/v1line/annotate.py``): in a reply ``version``,
``correlation_id``, ``status``, ``code``, ``message`` and each ``key`` of an OK payload's
``key=value`` pairs; in a request ``version``, ``correlation_id``, ``command`` and each
arg by its name in ``commands.py`` (``topic``, ``message``, ``acks``, ``partition``...).
A name the wire-log entry does not hold is left out (the frame stays the evidence).

Every read has the run's deadline (or the one a case gives, for the timing cases).  A
reply that does not come, or a close, is a violation of the requirement the caller names
(it stands only if the target is still there); so is a line the codec cannot read, or an
OK payload without its declared keys.  A success that does not echo the request's
correlation id breaks V1L-ENV-3; an error that does not breaks the caller's requirement
(each of those that needs the echo says so).
"""

from __future__ import annotations

import itertools
import select
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from conformance.client import Connection, PeerClosed, ReplyTimeout, WireLog, judged
from conformance.evidence import Evidence
from conformance.protocols.v1line import codec
from conformance.protocols.v1line.commands import COMMANDS, ErrReply, OkReply, PayloadValue
from conformance.protocols.v1line.errors import BAD_REQUEST, BadReply
from conformance.suite.case import Violation
from conformance.suite.shown import show
from conformance.suite.target import CaseContext

PARSE_CID = "0"
"""The correlation id of every parse error's reply (V1L-ENV-11)."""

_cids = itertools.count(1)


def next_cid() -> str:
    """A correlation id no other request of this process carries."""
    return str(next(_cids))


def doc(ctx: CaseContext) -> bool:
    return ctx.target.revision == "doc"


def real(ctx: CaseContext) -> bool:
    return ctx.target.revision == "real"


def setting(ctx: CaseContext, name: str, default: int) -> int:
    """A run option the target is configured with (``ack_timeout_ms``, ``min_isr``...)."""
    value = ctx.options.get(name)
    return default if value is None else int(value)


@dataclass(frozen=True)
class Reply:
    """One reply line: parsed, its OK payload decoded (``values``), and its evidence."""

    line: bytes
    reply: OkReply | ErrReply
    evidence: Evidence
    log: WireLog | None = None
    values: dict[str, PayloadValue] = field(default_factory=dict)
    command: str = ""
    """The command it answers (empty for a line sent raw)."""

    @property
    def ok(self) -> bool:
        return isinstance(self.reply, OkReply)

    @property
    def code(self) -> str:
        return self.reply.code if isinstance(self.reply, ErrReply) else ""

    @property
    def payload(self) -> str | None:
        """An OK reply's payload as sent (None: none, or an error)."""
        return self.reply.payload if isinstance(self.reply, OkReply) else None

    @property
    def message(self) -> str:
        return self.reply.message if isinstance(self.reply, ErrReply) else ""

    @property
    def cid(self) -> str:
        return self.reply.correlation_id

    def number(self, key: str) -> int:
        value = self.values[key]
        assert isinstance(value, int) and not isinstance(value, bool)
        return value

    def ints(self, key: str) -> tuple[int, ...]:
        value = self.values[key]
        assert isinstance(value, tuple)
        return tuple(int(v) for v in value if isinstance(v, int))

    def messages(self) -> list[tuple[int, str]]:
        value = self.values.get("messages", ())
        assert isinstance(value, tuple)
        return [(int(i[0]), str(i[1])) for i in value if isinstance(i, tuple)]

    def at(self, *fields: str, asked: Sequence[str] = ()) -> Evidence:
        """The evidence with ``fields`` judged in the reply and ``asked`` in the request."""
        return judged(self.log, self.evidence, fields, asked)

    def kind(self) -> Evidence:
        """The evidence with what tells the reply's kind judged: status, and code."""
        return self.at("status", "code")

    def shown(self, limit: int = 100) -> str:
        """The reply line as the wire has it, quoted."""
        return show(self.line.decode("utf-8", "replace"), limit)


def evidence_of(*replies: Reply, fields: Iterable[str] = ()) -> Evidence:
    """The evidence of several replies a check compared, ``fields`` judged in each."""
    names = tuple(fields)
    out = Evidence()
    for r in replies:
        out = out + r.at(*names)
    return out


# ---------------------------------------------------------------- sending


def send(conn: Connection, command: str, args: str = "", cid: str | None = None) -> str:
    """``V1|<cid>|<command>|<args>\\n`` as one write; the correlation id it carries."""
    cid = cid or next_cid()
    conn.send(codec.encode_request(cid, command, args))
    return cid


def send_line(conn: Connection, line: bytes, summary: str = "") -> int:
    """Bytes as given (a line the codec would not write); its wire-log entry."""
    return conn.send(line, summary)


def readable(conn: Connection, wait: float) -> bool:
    """Whether a reply has (begun to) come on ``conn`` within ``wait`` seconds, without
    reading it (nothing is logged)."""
    ready, _, _ = select.select([conn.sock], [], [], max(0.0, wait))
    return bool(ready)


def read(
    ctx: CaseContext,
    conn: Connection,
    requirement: str,
    what: str,
    *,
    command: str = "",
    timeout: float | None = None,
) -> Reply:
    """The next reply line on ``conn``; an OK reply to ``command`` has its payload decoded."""
    try:
        line = conn.recv_frame(timeout)
    except ReplyTimeout as exc:
        ctx.silence(requirement, what, exc.evidence, exc.waited)
    except PeerClosed as exc:
        raise Violation(
            requirement, f"{what}: the target closed the connection instead", exc.evidence
        ) from None
    evidence = conn.exchange()
    text = show(line.decode("utf-8", "replace"), 100)
    try:
        parsed = codec.parse_reply(line)
    except BadReply:
        raise Violation(
            requirement,
            f"{what}: answered {text}, which is none of V1|<cid>|OK, V1|<cid>|OK|<payload>"
            " and V1|<cid>|ERR|<code>|<message>",
            evidence,
        ) from None
    values: dict[str, PayloadValue] = {}
    if isinstance(parsed, OkReply) and command and COMMANDS[command].reply:
        try:
            values = codec.decode_payload(command, parsed.payload or "")
        except BadReply as exc:
            raise Violation(
                requirement,
                f"{what}: the {command} payload of {text} does not read as SPEC's"
                f" {_keys(command)} ({exc})",
                Reply(line, parsed, evidence, conn.log).at("status"),
            ) from None
    return Reply(line, parsed, evidence, conn.log, values, command)


def _keys(command: str) -> str:
    return " ".join(f"{f.name}=..." for f in COMMANDS[command].reply)


def call(
    ctx: CaseContext,
    conn: Connection,
    command: str,
    args: str,
    requirement: str,
    what: str,
    *,
    timeout: float | None = None,
) -> Reply:
    """Send ``command`` with ``args`` and read its reply; a success must echo the request's
    correlation id (V1L-ENV-3)."""
    cid = send(conn, command, args)
    reply = read(ctx, conn, requirement, what, command=command, timeout=timeout)
    if reply.ok and reply.cid != cid:
        raise Violation(
            "V1L-ENV-3",
            f"{what}: answered {reply.shown()}, correlation id {show(reply.cid)}, expected"
            f" {show(cid)} (the request's)",
            reply.at("correlation_id", asked=("correlation_id",)),
        )
    return reply


def expect_ok(
    ctx: CaseContext,
    conn: Connection,
    command: str,
    args: str,
    requirement: str,
    what: str,
    *,
    timeout: float | None = None,
) -> Reply:
    """A success reply (``OK``) to ``command``, its payload decoded."""
    reply = call(ctx, conn, command, args, requirement, what, timeout=timeout)
    if not reply.ok:
        raise Violation(
            requirement,
            f"{what}: answered {reply.shown()}, expected OK",
            reply.at("status", "code", "message"),
        )
    return reply


def still_served(ctx: CaseContext, conn: Connection, requirement: str, what: str) -> Reply:
    """A request every V1 broker answers, to see that ``conn`` is still served: OFFSET of
    a group nobody uses (it needs no membership, V1L-OFF-5).  Any well-formed reply, OK or
    ERR, that carries the request's correlation id proves it: whether OFFSET of an unknown
    group succeeds, and its payload, are not the caller's business (only the envelope is
    read).  Not PING, which is the subject of its own area (the real broker has none)."""
    args = f"{ctx.name('probe')} {ctx.name('probe')} 0"
    cid = send(conn, "OFFSET", args)
    reply = read(ctx, conn, requirement, what)
    if reply.cid != cid:
        raise Violation(
            requirement,
            f"{what}: answered {reply.shown()}, correlation id"
            f" {show(reply.cid)}, expected {show(cid)} (the request's: the connection is"
            " still served)",
            reply.at("correlation_id", asked=("correlation_id",)),
        )
    return reply


def require_error(reply: Reply, code: str | None, requirement: str, what: str) -> None:
    """``reply`` is an error (of ``code``, when given)."""
    want = f"ERR {code}" if code else "an error"
    if reply.ok:
        raise Violation(
            requirement, f"{what}: answered {reply.shown()}, expected {want}", reply.at("status")
        )
    if code is not None and reply.code != code:
        raise Violation(
            requirement,
            f"{what}: answered {reply.shown()}, error code {reply.code}, expected {code}",
            reply.at("code"),
        )


def expect_error(
    ctx: CaseContext,
    conn: Connection,
    command: str,
    args: str,
    code: str | None,
    requirement: str,
    what: str,
    *,
    timeout: float | None = None,
) -> Reply:
    """An error reply of ``code`` to ``command``, with the request's correlation id."""
    cid = send(conn, command, args)
    reply = read(ctx, conn, requirement, what, command=command, timeout=timeout)
    require_error(reply, code, requirement, what)
    if reply.cid != cid:
        raise Violation(
            requirement,
            f"{what}: answered {reply.shown()}, correlation id {show(reply.cid)}, expected"
            f" {show(cid)} (the request's)",
            reply.at("correlation_id", asked=("correlation_id",)),
        )
    return reply


def expect_parse_error(
    ctx: CaseContext, conn: Connection, line: bytes, requirement: str, what: str
) -> Reply:
    """``V1|0|ERR|BAD_REQUEST|<message>`` for a line that does not parse (V1L-ENV-11)."""
    send_line(conn, line)
    reply = read(ctx, conn, requirement, what)
    require_error(reply, BAD_REQUEST, requirement, what)
    if reply.cid != PARSE_CID:
        raise Violation(
            requirement,
            f"{what}: answered {reply.shown()}, correlation id {show(reply.cid)}, expected"
            " '0' (a parse error)",
            reply.at("correlation_id", asked=("correlation_id",)),
        )
    return reply


def lone_parse_error(ctx: CaseContext, line: bytes, requirement: str, what: str) -> Reply:
    """:func:`expect_parse_error` on a connection of its own, which ends with the reply:
    in ``doc`` a broker may close a connection after a parse error (keeping it open is
    V1L-ENV-12, a ``real`` requirement), so nothing is sent after one."""
    with ctx.connect() as conn:
        return expect_parse_error(ctx, conn, line, requirement, what)


def listed(items: Sequence[tuple[int, str]]) -> str:
    """CONSUME's messages as the wire has them (``'0:a,1:b'``), ``none`` when empty."""
    return show(",".join(f"{o}:{v}" for o, v in items)) if items else "none"
