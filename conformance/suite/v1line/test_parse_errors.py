"""V1 line envelope: lines that do not parse, answered with correlation id 0, and what becomes
of the connection after one or after a line over 64 KiB (SPEC.md, area "envelope").

In ``doc`` a broker may close a connection after a parse error (keeping it is V1L-ENV-12,
a ``real`` requirement): every other case sends its parse-error line on a connection of its
own and nothing after it (:func:`.verify.lone_parse_error`)."""

from __future__ import annotations

from conformance.client import Connection, PeerClosed, ReplyTimeout
from conformance.evidence import Evidence
from conformance.protocols.v1line import codec
from conformance.protocols.v1line.commands import ErrReply
from conformance.protocols.v1line.errors import (
    BadReply,
)
from conformance.suite.case import Violation, case, require
from conformance.suite.shown import show
from conformance.suite.target import CaseContext
from conformance.suite.v1line.steps import (
    nothing_appended,
    produce,
)
from conformance.suite.v1line.verify import (
    expect_parse_error,
    lone_parse_error,
    read,
    send,
    send_line,
    still_served,
)


@case("v1line/envelope/5", "V1L-ENV-5")
def test_a_line_with_fewer_than_four_sections_is_a_parse_error(target: CaseContext) -> None:
    """An empty line, 'V1' and 'V1|5' are each answered V1|0|ERR|BAD_REQUEST.

    V1L-ENV-5: "a line with fewer than four `|`-separated sections (an empty line included) is
    answered `V1|0|ERR|BAD_REQUEST|<message>`."
    """
    for line in (b"\n", b"V1\n", b"V1|5\n"):  # each alone: a broker may close after one
        shown = show(line[:-1].decode())
        lone_parse_error(target, line, "V1L-ENV-5", f"the line {shown}")


@case("v1line/envelope/6", "V1L-ENV-6")
def test_a_version_other_than_v1_is_a_parse_error(target: CaseContext) -> None:
    """A version section V2, v1 or empty is answered V1|0|ERR|BAD_REQUEST.

    V1L-ENV-6: "a version section other than exactly `V1` (`V2`, `v1`, empty) is answered
    `V1|0|ERR|BAD_REQUEST|<message>`."
    """
    for version in ("V2", "v1", ""):  # each alone: a broker may close after one
        line = f"{version}|6|PING|"
        lone_parse_error(target, f"{line}\n".encode(), "V1L-ENV-6", f"the line {show(line)}")


@case("v1line/envelope/7", "V1L-ENV-7")
def test_an_empty_correlation_id_is_a_parse_error(target: CaseContext) -> None:
    """V1||PING| is answered V1|0|ERR|BAD_REQUEST.

    V1L-ENV-7: "an empty correlation id is answered `V1|0|ERR|BAD_REQUEST|<message>`."
    """
    lone_parse_error(target, b"V1||PING|\n", "V1L-ENV-7", "the line 'V1||PING|'")


@case("v1line/envelope/8", "V1L-ENV-8")
def test_an_empty_command_is_a_parse_error(target: CaseContext) -> None:
    """V1|8|| is answered V1|0|ERR|BAD_REQUEST.

    V1L-ENV-8: "an empty command is answered `V1|0|ERR|BAD_REQUEST|<message>`."
    """
    lone_parse_error(target, b"V1|8||\n", "V1L-ENV-8", "the line 'V1|8||'")


@case("v1line/envelope/9", "V1L-ENV-9")
def test_a_command_without_args_needs_its_trailing_bar(target: CaseContext) -> None:
    """V1|5|PING is a parse error answered with correlation id 0; V1|6|PING| parses.

    V1L-ENV-9: "a command without args still needs the trailing `|`: `V1|5|PING` (three
    sections) is a parse error answered with correlation id 0, while `V1|5|PING|` parses and
    is answered with its own correlation id (served in `doc`; UNKNOWN_COMMAND in `real`,
    V1L-PING-3)."
    """
    lone_parse_error(target, b"V1|5|PING\n", "V1L-ENV-9", "the line 'V1|5|PING'")
    with target.connect() as conn:  # a broker may close after a parse error: a new one
        cid = send(conn, "PING")
        reply = read(target, conn, "V1L-ENV-9", "'V1|<cid>|PING|' (with its trailing '|')")
        require(
            reply.cid == cid,
            "V1L-ENV-9",
            f"'V1|{cid}|PING|' (four sections): answered {reply.shown()}, expected a reply with"
            f" correlation id {show(cid)} (it parses; what PING answers is V1L-PING-1's or -3's)",
            reply.at("correlation_id"),
        )


@case("v1line/envelope/10", "V1L-ENV-10")
def test_a_bar_inside_the_args_is_a_parse_error_and_applies_nothing(target: CaseContext) -> None:
    """A PRODUCE whose value holds '|' is answered V1|0|ERR|BAD_REQUEST and appends nothing.

    V1L-ENV-10: "a line with more than four `|`-separated sections (a `|` inside the args) is a
    parse error answered `V1|0|ERR|BAD_REQUEST|<message>`; nothing of it is applied."
    """
    with target.connect() as conn:
        topic = target.name("bar")
        before = produce(target, conn, topic, "k", "first", "V1L-ENV-10")
        line = f"V1|10|PRODUCE|{topic} k:a|b"
        # on a connection of its own: a broker may close after a parse error
        lone_parse_error(target, f"{line}\n".encode(), "V1L-ENV-10", "a value with '|'")
        nothing_appended(target, conn, topic, "k", before, "V1L-ENV-10", "the refused line")


@case("v1line/envelope/11", "V1L-ENV-11")
def test_a_parse_error_uses_correlation_id_0_even_when_one_was_readable(
    target: CaseContext,
) -> None:
    """V2|7|PING| and V1|7|PING are answered with correlation id 0, not 7.

    V1L-ENV-11: "a parse error uses correlation id 0 even when the line's correlation id could be
    read (`V2|7|PING|` is answered with `V1|0|ERR|BAD_REQUEST|...`)."
    """
    for line in ("V2|7|PING|", "V1|7|PING"):  # each alone: a broker may close after one
        lone_parse_error(target, f"{line}\n".encode(), "V1L-ENV-11", f"the line {show(line)}")


@case("v1line/envelope/12", "V1L-ENV-12")
def test_the_connection_stays_open_after_a_parse_error(target: CaseContext) -> None:
    """After each kind of parse error the next request on that connection is answered.

    V1L-ENV-12: "after a parse error the connection stays open and the next valid request on it
    is answered normally."
    """
    with target.connect() as conn:
        for line in (b"garbage\n", b"V2|1|PING|\n", b"V1||PING|\n", b"\n"):
            shown = show(line[:-1].decode())
            expect_parse_error(target, conn, line, "V1L-ENV-12", f"the line {shown}")
            still_served(target, conn, "V1L-ENV-12", f"OFFSET after the line {shown}")


LONG_LINE = 70_000
"""A line clearly over 64 KiB (V1L-ENV-13).  The real broker's bufio.Scanner already
closes on a line of exactly 65536 bytes (its 64 KiB buffer must hold the line and its
newline), so no case relies on how a line near 64 KiB is treated."""


def closed_after(ctx: CaseContext, conn: Connection, what: str) -> bytes | None:
    """What ``conn`` reads before its close: None when it closes at once, the one line
    before it otherwise (a violation when it stays open)."""
    try:
        return conn.recv_frame(min(ctx.timeout, 3.0))
    except PeerClosed:
        return None
    except ReplyTimeout as exc:
        raise Violation(
            "V1L-ENV-13",
            f"{what}: the connection stayed open, expected the target to close it",
            Evidence(exc.evidence.frames),
        ) from None


@case("v1line/envelope/13", "V1L-ENV-13")
def test_a_line_over_64_kib_closes_only_its_connection(target: CaseContext) -> None:
    """A line longer than 64 KiB closes its connection (at most one error line before the
    close); an open and a new connection are served.

    V1L-ENV-13: "a line longer than 64 KiB closes that connection; the broker keeps serving
    other connections and new ones."
    """
    with target.connect() as other, target.connect() as conn:
        still_served(target, other, "V1L-ENV-13", "OFFSET before the long line")
        head = f"V1|13|PRODUCE|{target.name('long')} k:".encode()
        line = head + b"x" * (LONG_LINE - len(head)) + b"\n"
        what = f"a line of {len(line) - 1} bytes (over 64 KiB)"
        try:
            send_line(conn, line, f"a line of {len(line) - 1} bytes")
            frame = closed_after(target, conn, what)
        except PeerClosed:  # closed while the line was still being sent
            frame = None
        if frame is not None:  # an error line may come before the close
            shown = show(frame.decode("utf-8", "replace"), 80)
            try:
                err = isinstance(codec.parse_reply(frame), ErrReply)
            except BadReply:
                err = False
            if not err:
                raise Violation(
                    "V1L-ENV-13",
                    f"{what}: answered {shown}, expected the connection closed (an error line"
                    " at most before it)",
                    conn.exchange(),
                )
            more = closed_after(target, conn, f"{what}, answered {shown}")
            if more is not None:
                raise Violation(
                    "V1L-ENV-13",
                    f"{what}: answered {shown}, then"
                    f" {show(more.decode('utf-8', 'replace'), 80)}, expected the connection"
                    " closed after one error line at most",
                    conn.exchange(),
                )
        still_served(target, other, "V1L-ENV-13", "OFFSET on another connection after")
        with target.connect() as fresh:
            still_served(target, fresh, "V1L-ENV-13", "OFFSET on a new connection after")
