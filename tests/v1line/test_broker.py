"""The V1 line reference broker over TCP (``conformance serve --protocol v1line``), both
revisions, against SPEC.md: the envelope (parse errors, unknown commands, argument errors,
the 64 KiB line limit, pipelining, the doc/real differences), PING (doc's only: real answers
it UNKNOWN_COMMAND), consumer groups (both assignors against their definitions for 1..5
members and 1, 2, 3, 7 partitions, first generation, GENERATION_MISMATCH, session expiry)
and offsets.  Every reply is compared whole.
At the end, each quirk of quirks.py, in-process: each one changes what it says it does."""

from __future__ import annotations

import itertools
import socket
import time
from collections.abc import Iterator

import pytest

from conformance.engine import Engine
from conformance.protocols.v1line.commands import Revision
from conformance.protocols.v1line.handler import V1Config, V1Frontend, V1Session
from conformance.protocols.v1line.quirks import CRASH_EXIT_CODE, QUIRKS, Quirks
from tests.support import v1line_client
from tests.support.v1line_client import (
    Client,
    Served,
    fields,
    int_list,
    messages,
    partition_of,
)

REVISIONS = ("doc", "real")
FIRST_GENERATION = {"doc": 1, "real": 2}  # V1L-GRP-3 (doc), V1L-GRP-2 (real)
ACK_MS = 300
ENVELOPE = "expected format V1|<correlation_id>|<command>|<args>"
UNKNOWN = "ERR|UNKNOWN_COMMAND|unsupported command"  # V1L-ENV-14
IDLE = "idle idle 0"
"""OFFSET's args for a request both revisions answer alike, ``V1|<cid>|OK|offset=0``: OFFSET
needs no membership (V1L-OFF-5) and no test here uses that group.  Not PING, which only
``doc`` has (V1L-PING-3: the real broker answers it UNKNOWN_COMMAND)."""
_names = itertools.count()


def fresh(prefix: str) -> str:
    """A topic or group name no other test of this module uses."""
    return f"{prefix}{next(_names)}"


@pytest.fixture(scope="module", params=REVISIONS)
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    options = ("--ack-timeout-ms", str(ACK_MS), "--session-timeout-ms", "60000")
    with v1line_client.running(*options, revision=request.param) as s:
        yield s


@pytest.fixture
def c(served: Served) -> Iterator[Client]:
    with served.connect() as client:
        yield client


# ------------------------------------------------------------------------ envelope

PARSE_ERRORS = [
    (b"", ENVELOPE),  # V1L-ENV-5: an empty line
    (b"V1|5|PING", ENVELOPE),  # V1L-ENV-9: no trailing |
    (b"V1|5", ENVELOPE),
    (b"V2|7|PING|", "unsupported version"),  # V1L-ENV-6, -11: 7 is readable, 0 answers
    (b"v1|7|PING|", "unsupported version"),
    (b"|7|PING|", "unsupported version"),
    (b"V1||PING|", "correlation id required"),  # V1L-ENV-7
    (b"V1|8||", "command required"),  # V1L-ENV-8
]


def test_parse_errors_answer_correlation_id_0_and_keep_the_connection(c: Client) -> None:
    """V1L-ENV-5..9, -11, -12, -19: each parse error on one connection, an OFFSET after each."""
    for n, (line, message) in enumerate(PARSE_ERRORS):
        assert c.raw(line) == f"V1|0|ERR|BAD_REQUEST|{message}", line
        assert c.call(f"p{n}", "OFFSET", IDLE) == f"V1|p{n}|OK|offset=0", f"after {line!r}"


def test_unknown_command_echoes_the_correlation_id_and_keeps_the_connection(
    served: Served, c: Client
) -> None:
    """V1L-ENV-14; V1L-ENV-3: any correlation id, echoed; PING is served in doc (V1L-PING-1,
    -2) and, as in the real broker, an unknown command in real (V1L-PING-3)."""
    assert c.call("41", "FETCH", "orders 0 0") == f"V1|41|{UNKNOWN}"
    ping = "V1|x-42|OK" if served.revision == "doc" else f"V1|x-42|{UNKNOWN}"
    assert c.call("x-42", "PING") == ping
    assert c.call("x-43", "OFFSET", IDLE) == "V1|x-43|OK|offset=0"


PINGS = [
    # (line, doc's reply, real's reply): real has no PING, whatever its case, spaces or args
    (b"V1|5|PING|", "V1|5|OK", f"V1|5|{UNKNOWN}"),  # V1L-PING-1, -2 / V1L-PING-3
    (b"V1|5|ping|", f"V1|5|{UNKNOWN}", f"V1|5|{UNKNOWN}"),  # V1L-ENV-14 / V1L-ENV-18, PING-3
    (b"V1|5| PING |", f"V1|5|{UNKNOWN}", f"V1|5|{UNKNOWN}"),
    (b"V1|5|PING|\r", "V1|5|ERR|BAD_REQUEST|PING requires: no args", f"V1|5|{UNKNOWN}"),
    (b"V1|5|PING|x", "V1|5|ERR|BAD_REQUEST|PING requires: no args", f"V1|5|{UNKNOWN}"),
    (b"V1|5|PING||", f"V1|0|ERR|BAD_REQUEST|{ENVELOPE}", f"V1|5|{UNKNOWN}"),  # V1L-ENV-10 / 18
]


@pytest.mark.parametrize(("line", "doc", "real"), PINGS)
def test_ping_is_answered_in_doc_and_an_unknown_command_in_real(
    served: Served, line: bytes, doc: str, real: str
) -> None:
    """V1L-PING-1, -2 (doc) against V1L-PING-3 (real: the real broker has no PING, so it is
    answered UNKNOWN_COMMAND with the request's correlation id); the connection stays open."""
    with served.connect() as c:
        assert c.raw(line) == (doc if served.revision == "doc" else real)
        assert c.call(6, "OFFSET", IDLE) == "V1|6|OK|offset=0"


ARG_ERRORS = [
    ("CONSUME", "t 0", "CONSUME requires: <topic> <partition> <offset>"),  # V1L-ENV-15
    ("OFFSET", "g t", "OFFSET requires: <group> <topic> <partition>"),
    ("PING", "x", "PING requires: no args"),  # doc only: real has no PING (V1L-PING-3)
    ("CONSUME", "t 0 1.5", "invalid offset"),  # V1L-ENV-16
    ("CONSUME", "t x1 0", "invalid partition"),
    ("SYNC", "g t c abc", "invalid generation"),
    ("REPLICA_FETCH", "t 0 1 z", "invalid offset"),
    ("PRODUCE", "t novalue", "message must be key:value"),  # V1L-PROD-3
    ("PRODUCE", "t k:v acks=2", "invalid ack mode; expected acks=0|1|all"),  # V1L-PROD-5
    ("PRODUCE", "t k:v ack=1", "invalid ack mode; expected acks=0|1|all"),
    ("PRODUCE", "t k:v w", "invalid ack mode; expected acks=0|1|all"),
    ("PRODUCE", "t k:v w acks=1", "PRODUCE requires: <topic> <key>:<value> [acks=0|1|all]"),
    ("REPLICA_FETCH", "t 0 0 0", "invalid replica id"),  # V1L-REPL-7
    ("REPLICA_FETCH", "t 0 3 0", "invalid replica id"),
    ("REPLICA_FETCH", "t 0 -1 0", "invalid replica id"),
    ("SET_PARTITION_ROLE", "t 0 observer", "invalid role"),  # V1L-REPL-2
    ("SET_PARTITION_ROLE", "t 3 leader", "invalid partition"),  # V1L-CONS-6's rule
    ("REPLICA_FETCH", "t 3 1 0", "invalid partition"),
    ("JOIN", "g t c assignor=sticky", "invalid assignor; expected assignor=round_robin|range"),
    ("JOIN", "g t c strategy=range", "invalid assignor; expected assignor=round_robin|range"),
]


def test_argument_errors_echo_the_correlation_id_and_append_nothing(
    served: Served, c: Client
) -> None:
    """V1L-ENV-15, -16, PROD-3, -5, -7, REPL-2, -7, GRP-7: BAD_REQUEST with the request's id
    (PING with an arg, in real: UNKNOWN_COMMAND, V1L-PING-3)."""
    topic = fresh("args")
    for n, (command, args, message) in enumerate(ARG_ERRORS):
        reply = c.call(f"a{n}", command, args.replace("t ", f"{topic} ", 1))
        expected = f"ERR|BAD_REQUEST|{message}"
        if command == "PING" and served.revision == "real":
            expected = UNKNOWN
        assert reply == f"V1|a{n}|{expected}", (command, args)
    for p in range(3):
        reply = c.call(f"c{p}", "CONSUME", f"{topic} {p} 0")
        assert reply == f"V1|c{p}|OK|messages= hw=-1", "a refused PRODUCE appended"


def _line_of(size: int, topic: str) -> bytes:
    head = f"V1|1|PRODUCE|{topic} k:".encode()
    return head + b"x" * (size - len(head))


def test_a_line_over_64_kib_closes_that_connection_only(served: Served) -> None:
    """V1L-ENV-13: 65536 bytes are served, 65537 close the connection without a reply,
    and the broker goes on serving an open connection and new ones."""
    topic = fresh("big")
    with served.connect() as other, served.connect() as big:
        assert other.call("o1", "OFFSET", IDLE) == "V1|o1|OK|offset=0"
        at_limit = big.raw(_line_of(64 * 1024, topic))
        assert at_limit == f"V1|1|OK|partition={partition_of('k')} offset=0 hw=0"
        big.send(_line_of(64 * 1024 + 1, topic) + b"\n")
        assert big.closed_within(v1line_client.DEADLINE_S), "a 65537-byte line left it open"
        assert big.buf == b"", f"a reply to an oversized line: {big.buf[:80]!r}"
        assert other.call("o2", "OFFSET", IDLE) == "V1|o2|OK|offset=0"
        with served.connect() as new:
            assert new.call("n1", "OFFSET", IDLE) == "V1|n1|OK|offset=0"
            hw = messages(new.call("n2", "CONSUME", f"{topic} {partition_of('k')} 0"))[1]
            assert hw == 0, "the oversized line was applied"
    with served.connect() as endless:  # no newline at all: closed once past the limit
        endless.send(b"V1|2|PRODUCE|" + b"y" * (64 * 1024 + 10))
        assert endless.closed_within(v1line_client.DEADLINE_S), "an endless line left it open"


def test_a_request_before_an_oversized_line_in_one_write_is_answered(served: Served) -> None:
    """V1L-ENV-1, -13: every complete request is answered, then the long line closes."""
    for attempt in range(3):
        with served.connect() as c:
            first = f"V1|1|OFFSET|{IDLE}\n".encode()
            c.send(first + _line_of(64 * 1024 + 100, fresh("big")) + b"\n")
            assert c.closed_within(v1line_client.DEADLINE_S)
            assert c.buf == b"V1|1|OK|offset=0\n", f"attempt {attempt}: {c.buf!r}"


def test_pipelined_requests_in_one_write_are_answered_in_order(c: Client) -> None:
    """V1L-ENV-1, -2: one write, one reply line each, in order, each ending in \\n; an
    acks=all that waits (no follower: REPLICATION_TIMEOUT) holds back the ones after it."""
    t, p = fresh("pipe"), partition_of("k")
    lines = [
        f"V1|1|OFFSET|{IDLE}".encode(),
        f"V1|2|PRODUCE|{t} k:a".encode(),
        b"V2|3|PING|",
        f"V1|4|PRODUCE|{t} k:b acks=all".encode(),
        b"V1|5|NOPE|",
        f"V1|6|PRODUCE|{t} k:c acks=0".encode(),
        f"V1|7|CONSUME|{t} {p} 0".encode(),
        b"V1|8|OFFSET|nobody t 0",
    ]
    started = time.monotonic()
    c.send(b"".join(line + b"\n" for line in lines))
    replies = [c.line() for _ in lines]
    assert replies == [
        "V1|1|OK|offset=0",
        f"V1|2|OK|partition={p} offset=0 hw=0",
        "V1|0|ERR|BAD_REQUEST|unsupported version",
        "V1|4|ERR|REPLICATION_TIMEOUT|acks=all timeout",
        "V1|5|ERR|UNKNOWN_COMMAND|unsupported command",
        f"V1|6|OK|partition={p} offset=2 hw=2",
        "V1|7|OK|messages=0:a,1:b,2:c hw=2",
        "V1|8|OK|offset=0",
    ]
    assert time.monotonic() - started >= ACK_MS / 1000
    assert c.silent_for(0.05) and c.buf == b"", "more replies than requests"


@pytest.mark.parametrize("acks", ["1", "all"])
def test_requests_written_before_a_half_close_are_all_answered(served: Served, acks: str) -> None:
    """V1L-ENV-1: a client that writes its requests and then shuts its sending side (as
    ``printf ... | nc -N`` does) gets every reply, in order, then the end of the stream."""
    t, p = fresh("half"), partition_of("k")
    with served.connect() as c:
        c.send(
            f"V1|1|OFFSET|{IDLE}\nV1|2|PRODUCE|{t} k:v acks={acks}\nV1|3|OFFSET|{IDLE}\n".encode()
        )
        c.sock.shutdown(socket.SHUT_WR)
        assert c.closed_within(ACK_MS / 1000 + v1line_client.DEADLINE_S)
        second = (
            f"V1|2|OK|partition={p} offset=0 hw=0"
            if acks == "1"
            else "V1|2|ERR|REPLICATION_TIMEOUT|acks=all timeout"
        )
        idle = "OK|offset=0"
        assert c.buf.decode().split("\n") == [f"V1|1|{idle}", second, f"V1|3|{idle}", ""]


DIFFERENCES = [
    # (line, doc's reply, real's reply): V1L-ENV-18 and the MUSTs of doc it relaxes
    (b"  V1|5|OFFSET|{t} {t} 0  ", "V1|0|ERR|BAD_REQUEST|unsupported version",
     "V1|5|OK|offset=0"),
    (b"V1| 5 |OFFSET|{t} {t} 0", "V1| 5 |OK|offset=0", "V1|5|OK|offset=0"),
    (b"V1|5|offset|{t} {t} 0", "V1|5|ERR|UNKNOWN_COMMAND|unsupported command",
     "V1|5|OK|offset=0"),
    (b"V1|5|Offset|{t} {t} 0", "V1|5|ERR|UNKNOWN_COMMAND|unsupported command",
     "V1|5|OK|offset=0"),
    (b"V1|5|OFFSET|{t} {t} 0\r", "V1|5|ERR|BAD_REQUEST|invalid partition",
     "V1|5|OK|offset=0"),  # doc: the \r is a byte of the partition (V1L-ENV-16)
    (b"V1|5|PRODUCE|{t} k:v ACKS=1", "V1|5|ERR|BAD_REQUEST|invalid ack mode; expected "
     "acks=0|1|all", "V1|5|OK|partition={p} offset=0 hw=0"),  # V1L-PROD-6, -10
    (b"V1|5|PRODUCE|{t}  k:v", "V1|5|ERR|BAD_REQUEST|PRODUCE requires: <topic> <key>:<value> "
     "[acks=0|1|all]", "V1|5|OK|partition={p} offset=0 hw=0"),
    (b"V1|5|PRODUCE|{t} k:a\tb", "V1|5|OK|partition={p} offset=0 hw=0", "V1|5|ERR|BAD_REQUEST|"
     "invalid ack mode; expected acks=0|1|all"),  # doc: args split on spaces only
    (b"V1|5|SET_PARTITION_ROLE|{t} 0 LEADER", "V1|5|ERR|BAD_REQUEST|invalid role",
     "V1|5|OK|topic={t} partition=0 role=leader hw=-1"),  # V1L-REPL-3, -16
    (b"V1|5|JOIN|{t} {t} c assignor=RANGE", "V1|5|ERR|BAD_REQUEST|invalid assignor; expected "
     "assignor=round_robin|range", "V1|5|OK|generation=2 assigned=[0 1 2]"),  # V1L-GRP-8, -14
]  # fmt: skip


@pytest.mark.parametrize(("line", "doc", "real"), DIFFERENCES)
def test_doc_and_real_differ_as_spec_says(served: Served, line: bytes, doc: str, real: str) -> None:
    """V1L-ENV-18 (real: trimmed sections, any-case command, whitespace runs, \\r ignored)
    against doc's exact matching (V1L-ENV-6, PROD-6, REPL-3, GRP-8)."""
    values = {"t": fresh("diff"), "p": str(partition_of("k"))}
    expected = doc if served.revision == "doc" else real
    with served.connect() as c:
        assert c.raw(line.decode().format(**values).encode()) == expected.format(**values)


def test_a_bar_in_the_args_is_a_parse_error_in_doc_and_kept_in_real(served: Served) -> None:
    """V1L-ENV-10 (doc: five sections, nothing applied) and V1L-ENV-18 (real: the fourth
    section runs to the end of the line)."""
    t, p = fresh("bar"), partition_of("k")
    with served.connect() as c:
        reply = c.raw(f"V1|6|PRODUCE|{t} k:a|b".encode())
        if served.revision == "doc":
            assert reply == f"V1|0|ERR|BAD_REQUEST|{ENVELOPE}"
            assert c.call("7", "CONSUME", f"{t} {p} 0") == "V1|7|OK|messages= hw=-1"
        else:
            assert reply == f"V1|6|OK|partition={p} offset=0 hw=0"
            assert c.call("7", "CONSUME", f"{t} {p} 0") == "V1|7|OK|messages=0:a|b hw=0"


def test_a_carriage_return_ends_the_value_in_real_only(served: Served) -> None:
    """V1L-ENV-17, -18: ``\\n`` ends a request; real drops a ``\\r`` before it, doc keeps it
    as a byte of the last arg (a value byte for byte, V1L-CONS-4; not an integer, V1L-ENV-16);
    a value may hold ``:`` (V1L-PROD-4)."""
    t, p = fresh("crlf"), partition_of("k")
    with served.connect() as c:
        c.send(f"V1|1|PRODUCE|{t} k:a:b\r\nV1|2|CONSUME|{t} {p} 0\r\n".encode())
        assert c.line() == f"V1|1|OK|partition={p} offset=0 hw=0"
        if served.revision == "doc":
            assert c.line() == "V1|2|ERR|BAD_REQUEST|invalid offset"
            assert c.call(3, "CONSUME", f"{t} {p} 0") == "V1|3|OK|messages=0:a:b\r hw=0"
        else:
            assert c.line() == "V1|2|OK|messages=0:a:b hw=0"


def test_consume_reads_from_an_offset_up_to_hw(c: Client) -> None:
    """V1L-CONS-1, -3, -5, -6, PROD-1, -2, -8, -9: consecutive offsets; from an offset on; past
    hw and on an empty partition ``messages= hw=<n>``; a negative offset or a partition
    outside the topic refused, the connection still served."""
    t, p = fresh("cons"), partition_of("k")
    empty = (p + 1) % 3
    for n, value in enumerate(("a", "b:c", "d")):
        acks = ("", " acks=0", " acks=1")[n]
        assert c.call(n, "PRODUCE", f"{t} k:{value}{acks}") == (
            f"V1|{n}|OK|partition={p} offset={n} hw={n}"
        )
    assert c.call("r0", "CONSUME", f"{t} {p} 0") == "V1|r0|OK|messages=0:a,1:b:c,2:d hw=2"
    assert c.call("r1", "CONSUME", f"{t} {p} 1") == "V1|r1|OK|messages=1:b:c,2:d hw=2"
    assert c.call("r3", "CONSUME", f"{t} {p} 3") == "V1|r3|OK|messages= hw=2"
    assert c.call("r4", "CONSUME", f"{t} {empty} 0") == "V1|r4|OK|messages= hw=-1"
    assert c.call("r5", "CONSUME", f"{t} {p} -1") == "V1|r5|ERR|BAD_REQUEST|invalid offset"
    assert c.call("r6", "CONSUME", f"{t} 3 0") == "V1|r6|ERR|BAD_REQUEST|invalid partition"
    assert c.call("r7", "CONSUME", f"{t} {p} +2") == "V1|r7|OK|messages=2:d hw=2"


def test_values_come_back_byte_for_byte(c: Client) -> None:
    """V1L-PROD-4, CONS-4: an empty key, an empty value, ``:`` and ``=`` in a value, UTF-8."""
    t = fresh("vals")
    produced: dict[int, list[str]] = {}
    for n, (key, value) in enumerate(
        [("", "v"), ("k", ""), ("k", "a:b:c"), ("k", "x=y"), ("k", "\u00e9\u4e2d"), ("", "")]
    ):
        p = partition_of(key)
        offset = len(produced.setdefault(p, []))
        assert c.call(n, "PRODUCE", f"{t} {key}:{value}") == (
            f"V1|{n}|OK|partition={p} offset={offset} hw={offset}"
        )
        produced[p].append(value)
    for p, values in produced.items():
        listed = ",".join(f"{o}:{v}" for o, v in enumerate(values))
        reply = c.call("r", "CONSUME", f"{t} {p} 0")
        assert reply == f"V1|r|OK|messages={listed} hw={len(values) - 1}"


def test_replica_fetch_on_a_follower_partition(served: Served) -> None:
    """V1L-REPL-16: real refuses it (``partition is not leader``); doc records it (SPEC's
    replication model: the document sets no condition)."""
    t = fresh("role")
    with served.connect() as c:
        role = c.call(1, "SET_PARTITION_ROLE", f"{t} 0 follower")
        assert role == f"V1|1|OK|topic={t} partition=0 role=follower hw=-1"
        reply = c.call(2, "REPLICA_FETCH", f"{t} 0 1 0")
        if served.revision == "real":
            assert reply == "V1|2|ERR|BAD_REQUEST|partition is not leader"
        else:
            recorded = "replica=1 acked_offset=0 hw=-1 isr=[0 1] under_replicated=false"
            assert reply == f"V1|2|OK|{recorded}"


# -------------------------------------------------------------------------- groups


def round_robin(members: list[str], partitions: int) -> dict[str, list[int]]:
    """V1L-GRP-5: members sorted by id; partition p to member p mod n."""
    order = sorted(members)
    shares: dict[str, list[int]] = {m: [] for m in order}
    for p in range(partitions):
        shares[order[p % len(order)]].append(p)
    return shares


def range_shares(members: list[str], partitions: int) -> dict[str, list[int]]:
    """V1L-GRP-6: contiguous runs from 0, P div n long, the first P mod n one longer."""
    order, shares, start = sorted(members), {}, 0
    for i, m in enumerate(order):
        size = partitions // len(order) + (1 if i < partitions % len(order) else 0)
        shares[m] = list(range(start, start + size))
        start += size
    return shares


JOIN_ORDER = ["m-c", "m-a", "m-e", "m-b", "m-d"]
"""Consumer ids joined in an order that is not their sorted order."""


def _listed(parts: list[int]) -> str:
    return "[" + " ".join(map(str, parts)) + "]"


@pytest.fixture(
    scope="module",
    params=[(r, n) for r in REVISIONS for n in (1, 2, 3, 7)],
    ids=lambda rn: f"{rn[0]}-{rn[1]}p",
)
def sized(request: pytest.FixtureRequest) -> Iterator[tuple[Served, int]]:
    revision, partitions = request.param
    options = ("--partitions", str(partitions), "--session-timeout-ms", "60000")
    with v1line_client.running(*options, revision=revision) as s:
        yield s, partitions


@pytest.mark.parametrize("assignor", [None, "round_robin", "range"])
def test_assignors_follow_their_definitions(
    sized: tuple[Served, int], assignor: str | None
) -> None:
    """V1L-GRP-1..6: for 1..5 members, each JOIN raises the generation from the first (doc 1,
    real 2); SYNC at the last generation gives each member its share by the assignor's
    definition (round_robin by default), disjoint and covering every partition."""
    served, partitions = sized
    first = FIRST_GENERATION[served.revision]
    definition = range_shares if assignor == "range" else round_robin
    arg = "" if assignor is None else f" assignor={assignor}"
    with served.connect() as c:
        for n in range(1, 6):
            group, topic, members = fresh("grp"), fresh("top"), JOIN_ORDER[:n]
            expected = definition(members, partitions)
            for i, m in enumerate(members):
                reply = c.call(f"j{i}", "JOIN", f"{group} {topic} {m}{arg}")
                assert fields(reply)["generation"] == str(first + i), (n, m, reply)
            generation = first + n - 1
            assert reply == f"V1|j{n - 1}|OK|generation={generation} assigned=" + _listed(
                expected[members[-1]]
            )
            got = {}
            for m in members:
                reply = c.call("s", "SYNC", f"{group} {topic} {m} {generation}")
                assert reply == f"V1|s|OK|generation={generation} assigned={_listed(expected[m])}"
                got[m] = int_list(fields(reply)["assigned"])
            every = sorted(p for parts in got.values() for p in parts)
            assert every == list(range(partitions)), f"{n} members: shares {got} overlap or miss"


def test_stale_generation_or_unknown_member_is_generation_mismatch(served: Served) -> None:
    """V1L-GRP-9, -10, -12, -13, -14, OFF-1..6: every refusal is GENERATION_MISMATCH and
    changes nothing; COMMIT only on an owned partition; OFFSET needs no membership."""
    g, t, first = fresh("g"), fresh("t"), FIRST_GENERATION[served.revision]
    gen = first + 1
    with served.connect() as c, served.connect() as reader:
        assert c.call(1, "JOIN", f"{g} {t} a") == f"V1|1|OK|generation={first} assigned=[0 1 2]"
        assert c.call(2, "JOIN", f"{g} {t} b") == f"V1|2|OK|generation={gen} assigned=[1]"
        assert c.call(3, "JOIN", f"{g} {t} a") == f"V1|3|OK|generation={gen} assigned=[0 2]"
        mismatch = "ERR|GENERATION_MISMATCH"
        for cmd, extra in (("SYNC", ""), ("HEARTBEAT", ""), ("LEAVE", ""), ("COMMIT", " 0 5")):
            for who, generation, why in (
                ("a", gen - 1, "stale generation"),
                ("a", gen + 1, "stale generation"),
                ("z", gen, "unknown member"),
            ):
                reply = c.call("x", cmd, f"{g} {t} {who} {generation}{extra}")
                assert reply == f"V1|x|{mismatch}|{why}", (cmd, who, generation)
            reply = c.call("y", cmd, f"{fresh('nogroup')} {t} a {gen}{extra}")
            assert reply == f"V1|y|{mismatch}|group not found", cmd
        assert c.call(4, "SYNC", f"{g} {t} a {gen}") == f"V1|4|OK|generation={gen} assigned=[0 2]"
        assert c.call(5, "HEARTBEAT", f"{g} {t} b {gen}") == "V1|5|OK|heartbeat=ok"
        for p, why in ((1, "partition not assigned to member"), (3, "partition not assigned to "
                                                                  "member")):  # fmt: skip
            assert c.call(6, "COMMIT", f"{g} {t} a {gen} {p} 7") == f"V1|6|{mismatch}|{why}"
        assert reader.call(7, "OFFSET", f"{g} {t} 1") == "V1|7|OK|offset=0"
        assert c.call(8, "COMMIT", f"{g} {t} a {gen} 2 9") == "V1|8|OK|committed=true"
        assert c.call(9, "COMMIT", f"{g} {t} b {gen} 1 4") == "V1|9|OK|committed=true"
        assert reader.call(10, "OFFSET", f"{g} {t} 2") == "V1|10|OK|offset=9"
        assert c.call(11, "COMMIT", f"{g} {t} a {gen} 2 3") == "V1|11|OK|committed=true"
        assert reader.call(12, "OFFSET", f"{g} {t} 2") == "V1|12|OK|offset=3"  # V1L-OFF-6
        assert reader.call(13, "OFFSET", f"{g} {t} 1") == "V1|13|OK|offset=4"

        assert c.call(14, "LEAVE", f"{g} {t} b {gen}") == "V1|14|OK|left=true"
        assert c.call(15, "SYNC", f"{g} {t} a {gen}") == f"V1|15|{mismatch}|stale generation"
        assert c.call(16, "COMMIT", f"{g} {t} a {gen} 2 8") == f"V1|16|{mismatch}|stale generation"
        assert reader.call(17, "OFFSET", f"{g} {t} 2") == "V1|17|OK|offset=3"  # V1L-OFF-2
        assert c.call(18, "JOIN", f"{g} {t} a") == f"V1|18|OK|generation={gen + 1} assigned=[0 1 2]"
        assert c.call(19, "SYNC", f"{g} {t} b {gen + 1}") == f"V1|19|{mismatch}|unknown member"
        assert c.call(20, "COMMIT", f"{g} {t} a {gen + 1} 1 11") == "V1|20|OK|committed=true"
        assert reader.call(21, "OFFSET", f"{g} {t} 1") == "V1|21|OK|offset=11"
        assert reader.call(22, "OFFSET", f"{fresh('none')} {t} 0") == "V1|22|OK|offset=0"


SESSION_MS = 800


@pytest.mark.parametrize("revision", REVISIONS)
def test_a_silent_member_is_removed_after_the_session_timeout(revision: str) -> None:
    """V1L-GRP-11: b stays silent while a heartbeats; b is removed once the session timeout
    has passed (not before), the generation rises and a covers b's partitions."""
    first = FIRST_GENERATION[revision]
    gen = first + 1
    options = ("--session-timeout-ms", str(SESSION_MS))
    with v1line_client.running(*options, revision=revision) as served, served.connect() as c:
        assert c.call(1, "JOIN", "g t a") == f"V1|1|OK|generation={first} assigned=[0 1 2]"
        assert c.call(2, "JOIN", "g t b") == f"V1|2|OK|generation={gen} assigned=[1]"
        b_last = time.monotonic()
        assert c.call(3, "SYNC", f"g t b {gen}") == f"V1|3|OK|generation={gen} assigned=[1]"
        end, beats = b_last + SESSION_MS / 1000 + 2.0, 0
        while True:
            reply = c.call("h", "HEARTBEAT", f"g t a {gen}")
            if reply != "V1|h|OK|heartbeat=ok":
                break
            beats += 1
            assert time.monotonic() < end, "b is still a member long after its session ended"
            time.sleep(0.1)
        gone = time.monotonic()
        assert reply == "V1|h|ERR|GENERATION_MISMATCH|stale generation"
        assert gone - b_last >= SESSION_MS / 1000, f"b removed after {gone - b_last:.3f} s"
        assert beats >= 3, f"b removed after {beats} heartbeats of a"
        assert c.call(4, "JOIN", "g t a") == f"V1|4|OK|generation={gen + 1} assigned=[0 1 2]"
        assert c.call(5, "SYNC", f"g t b {gen}") == "V1|5|ERR|GENERATION_MISMATCH|unknown member"
        assert c.call(6, "COMMIT", f"g t a {gen + 1} 1 3") == "V1|6|OK|committed=true"


# -------------------------------------------------------------------------- quirks


CLOCK_MS = 1e12
"""The fake clock (ms): above time.monotonic()'s, which AcksAllWait also reads (see
tests/v1line/test_stateful.py)."""


def _session(
    quirks: tuple[str, ...], partitions: int = 1, revision: Revision = "doc"
) -> tuple[V1Frontend, V1Session]:
    config = V1Config(revision=revision, partitions=partitions, quirks=Quirks.of(quirks))
    fe = V1Frontend(Engine(), config)
    fe.clock = lambda: CLOCK_MS
    return fe, fe.new_session("127.0.0.1:1")


def _reply(s: V1Session, line: str) -> str:
    outcome = s.handle(line.encode())
    if outcome.pending is not None:
        return "pending"
    if outcome.stall:
        return "stall"
    assert len(outcome.replies) == 1, f"{line!r}: {outcome}"
    return outcome.replies[0].decode().removesuffix("\n")


def _parse_error(q: tuple[str, ...]) -> str:
    return _reply(_session(q)[1], "V2|7|PING|")


def _ping_in_real(q: tuple[str, ...]) -> str:
    s = _session(q, revision="real")[1]
    return _reply(s, "V1|3|PING|") + " / " + _reply(s, "V1|4|ping|")


def _unknown_command(q: tuple[str, ...]) -> str:
    return _reply(_session(q)[1], "V1|4|FETCH|x")


def _acks_all(q: tuple[str, ...]) -> str:
    return _reply(_session(q)[1], "V1|1|PRODUCE|t k:a acks=all")


def _past_hw(q: tuple[str, ...]) -> str:
    s = _session(q)[1]
    _reply(s, "V1|1|PRODUCE|t k:a")
    _reply(s, "V1|2|REPLICA_FETCH|t 0 1 0")
    _reply(s, "V1|3|REPLICA_FETCH|t 0 2 0")
    assert _reply(s, "V1|4|PRODUCE|t k:b") == "V1|4|OK|partition=0 offset=1 hw=0"
    return _reply(s, "V1|5|CONSUME|t 0 0")


def _follower_produce(q: tuple[str, ...]) -> str:
    s = _session(q)[1]
    _reply(s, "V1|1|SET_PARTITION_ROLE|t 0 follower")
    return _reply(s, "V1|2|PRODUCE|t k:a") + " / " + _reply(s, "V1|3|CONSUME|t 0 0")


def _commit_other(q: tuple[str, ...]) -> str:
    s = _session(q, partitions=3)[1]
    _reply(s, "V1|1|JOIN|g t a")
    _reply(s, "V1|2|JOIN|g t b")
    return _reply(s, "V1|3|COMMIT|g t a 2 1 7") + " / " + _reply(s, "V1|4|OFFSET|g t 1")


def _range(q: tuple[str, ...]) -> str:
    s = _session(q, partitions=3)[1]
    _reply(s, "V1|1|JOIN|g t a assignor=range")
    _reply(s, "V1|2|JOIN|g t b assignor=range")
    return _reply(s, "V1|3|SYNC|g t a 2")


def _isr_after_lag(q: tuple[str, ...]) -> str:
    fe, s = _session(q)
    _reply(s, "V1|1|REPLICA_FETCH|t 0 1 -1")
    _reply(s, "V1|2|REPLICA_FETCH|t 0 2 -1")
    fe.clock = lambda: CLOCK_MS + 10_001  # past the default replica lag timeout, 10000 ms
    return _reply(s, "V1|3|REPLICA_FETCH|t 0 1 -1")


NOT_OWNED = "V1|3|ERR|GENERATION_MISMATCH|partition not assigned to member"
QUIRK_CASES = {
    # name: (scenario, conformant answer, the quirk's answer)
    "parse-error-echoes-cid": (
        _parse_error,
        "V1|0|ERR|BAD_REQUEST|unsupported version",
        "V1|7|ERR|BAD_REQUEST|unsupported version",
    ),
    "answers-ping": (
        _ping_in_real,
        f"V1|3|{UNKNOWN} / V1|4|{UNKNOWN}",
        "V1|3|OK / V1|4|OK",
    ),
    "unknown-command-bad-request": (
        _unknown_command,
        "V1|4|ERR|UNKNOWN_COMMAND|unsupported command",
        "V1|4|ERR|BAD_REQUEST|invalid command",
    ),
    "acks-all-no-wait": (_acks_all, "pending", "V1|1|OK|partition=0 offset=0 hw=0"),
    "consume-past-hw": (
        _past_hw,
        "V1|5|OK|messages=0:a hw=0",
        "V1|5|OK|messages=0:a,1:b hw=0",
    ),
    "follower-accepts-produce": (
        _follower_produce,
        "V1|2|ERR|NOT_LEADER|partition leader unavailable on this broker / V1|3|OK|messages= hw=-1",
        "V1|2|OK|partition=0 offset=0 hw=0 / V1|3|OK|messages=0:a hw=0",
    ),
    "commit-any-partition": (
        _commit_other,
        f"{NOT_OWNED} / V1|4|OK|offset=0",
        "V1|3|OK|committed=true / V1|4|OK|offset=7",
    ),
    "range-deals-round-robin": (
        _range,
        "V1|3|OK|generation=2 assigned=[0 1]",
        "V1|3|OK|generation=2 assigned=[0 2]",
    ),
    "isr-never-shrinks": (
        _isr_after_lag,
        "V1|3|OK|replica=1 acked_offset=-1 hw=-1 isr=[0 1] under_replicated=false",
        "V1|3|OK|replica=1 acked_offset=-1 hw=-1 isr=[0 1 2] under_replicated=false",
    ),
}
FAULT_QUIRKS = ("crash-on-negative-offset", "stop-on-empty-key")


def test_every_quirk_has_a_case_here() -> None:
    """A quirk added to quirks.py without a case below would go unchecked."""
    assert sorted(QUIRKS) == sorted([*QUIRK_CASES, *FAULT_QUIRKS])
    assert all(QUIRKS[name].kind == "spec" for name in QUIRK_CASES)


@pytest.mark.parametrize("name", sorted(QUIRK_CASES))
def test_a_spec_quirk_changes_what_it_says(name: str) -> None:
    """The scenario answers conformantly without the quirk and as described with it."""
    scenario, conformant, quirked = QUIRK_CASES[name]
    assert scenario(()) == conformant
    assert scenario((name,)) == quirked


def test_answers_ping_changes_nothing_in_doc() -> None:
    """``answers-ping`` only gives real the PING doc has (quirks.py: a no-op in doc)."""
    for quirks in ((), ("answers-ping",)):
        s = _session(quirks)[1]
        assert _reply(s, "V1|3|PING|") == "V1|3|OK"
        assert _reply(s, "V1|5|PING|x") == "V1|5|ERR|BAD_REQUEST|PING requires: no args"


def test_answers_ping_leaves_a_lower_case_ping_unknown_in_doc() -> None:
    """doc matches commands exactly (V1L-ENV-14, -18): ``ping`` stays UNKNOWN_COMMAND."""
    for quirks in ((), ("answers-ping",)):
        assert _reply(_session(quirks)[1], "V1|4|ping|") == f"V1|4|{UNKNOWN}", quirks


def test_crash_on_negative_offset_ends_the_broker() -> None:
    """Fault quirk: CONSUME with a negative offset ends the process (exit 70)."""
    with v1line_client.running("--quirk", "crash-on-negative-offset") as served:
        with served.connect() as c:
            assert c.call(1, "CONSUME", "t 0 0") == "V1|1|OK|messages= hw=-1"
            c.send(b"V1|2|CONSUME|t 0 -1\n")
            assert c.closed_within(v1line_client.DEADLINE_S) and c.buf == b""
        assert served.proc.wait(v1line_client.DEADLINE_S) == CRASH_EXIT_CODE
        assert "crash-on-negative-offset" in served.log()


def test_stop_on_empty_key_stops_serving_everyone_while_accepting() -> None:
    """Fault quirk: after PRODUCE ``:value`` no line is answered, on that connection, on
    another open one or on a new one, and new connections are still accepted (without the
    quirk an empty key is a valid PRODUCE: FACTS.md, PRODUCE)."""
    assert _reply(_session(())[1], "V1|1|PRODUCE|t :v") == "V1|1|OK|partition=0 offset=0 hw=0"
    served = v1line_client.start("--quirk", "stop-on-empty-key")
    try:
        with served.connect() as stalled, served.connect() as other:
            assert other.call(1, "PING") == "V1|1|OK"
            stalled.send(b"V1|2|PRODUCE|t :v\nV1|3|PING|\n")
            assert stalled.silent_for(0.3), f"answered: {stalled.sock.recv(100)!r}"
            other.send(b"V1|4|PING|\n")
            assert other.silent_for(0.3), "an open connection was still served"
            with served.connect() as new:  # accepted, never answered
                new.send(b"V1|5|PING|\n")
                assert new.silent_for(0.3), "a new connection was served"
            assert not stalled.closed_within(0.1), "the stalled connection was closed"
        assert served.alive()
    finally:
        served.stop()
