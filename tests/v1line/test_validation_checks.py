"""The V1 client checks, sans-IO: each rule of SPEC.md's client sections on the lines that
break it (and only it) and on lines that do not, in both revisions; what spans requests
(correlation ids in use, generations given, follower partitions); the fault replies and
the rebalance action on a real front-end."""

from __future__ import annotations

import pytest

from conformance.engine import Engine
from conformance.plugin import ServeConfig
from conformance.protocols.v1line.handler import V1Config, V1Frontend
from conformance.protocols.v1line.validation import V1Checker, V1Validation, validation
from conformance.protocols.v1line.validation_lines import read_line

ENV, EXACT, CID, CMD, ARGS, INT, NONNEG, VALUES = (
    "V1L-CLI-1",
    "V1L-CLI-2",
    "V1L-CLI-4",
    "V1L-CLI-6",
    "V1L-CLI-7",
    "V1L-CLI-8",
    "V1L-CLI-9",
    "V1L-CLI-10",
)
BOTH = ("doc", "real")

LINES = [
    # (line, revisions, the requirements it breaks there); real has no PING (V1L-PING-3)
    (b"V1|1|PING|", ("doc",), set()),
    (b"V1|1|PING|", ("real",), {CMD}),
    (b"V1|1|OFFSET|g t 0", BOTH, set()),
    (b"V1|42|PRODUCE|orders user1:created acks=all", BOTH, set()),
    (b"V1|7|COMMIT|g t c 2 0 15", BOTH, set()),
    (b"V1|1|PING", BOTH, {ENV}),
    (b"", BOTH, {ENV}),
    (b"v1|1|PING|", BOTH, {ENV}),
    (b"V1||PING|", BOTH, {ENV}),
    (b"V1|1||", BOTH, {ENV}),
    (b"V1|1|PING|\xff", BOTH, {ENV}),
    (b"V1|1|PING|\r", ("doc",), {EXACT}),
    (b"V1|1|PING|\r", ("real",), {CMD}),
    (b"V1|1|OFFSET|g t 0\r", ("doc",), {EXACT}),
    (b"V1|1|OFFSET|g t 0\r", ("real",), set()),
    (b"V1|1|PRODUCE|t k:a|b", ("doc",), {EXACT}),
    (b"V1|1|PRODUCE|t k:a|b", ("real",), set()),
    (b"V1|0|OFFSET|g t 0", BOTH, {CID}),
    (b"V1|abc|OFFSET|g t 0", BOTH, {CID}),
    (b"V1|0|PING|", ("doc",), {CID}),
    (b"V1|0|PING|", ("real",), {CID, CMD}),
    (b"V1|1|ping|", BOTH, {CMD}),  # doc: not in capitals; real: PING
    (b"V1|1|offset|g t 0", ("doc",), {CMD}),
    (b"V1|1|offset|g t 0", ("real",), set()),
    (b"V1|1|FETCH|t 0 0", BOTH, {CMD}),
    (b"V1|1|PRODUCE|t", BOTH, {ARGS}),
    (b"V1|1|PING|x", ("doc",), {ARGS}),
    (b"V1|1|PING|x", ("real",), {CMD}),
    (b"V1|1|PRODUCE|t  k:v", ("doc",), {ARGS}),
    (b"V1|1|PRODUCE|t  k:v", ("real",), set()),
    (b"V1|1|CONSUME|t x 0", BOTH, {INT}),
    (b"V1|1|SYNC|g t c 1.5", BOTH, {INT}),
    (b"V1|1|CONSUME|t 0 -1", BOTH, {NONNEG}),
    (b"V1|1|COMMIT|g t c 1 -1 0", BOTH, {NONNEG}),
    (b"V1|1|COMMIT|g t c 1 0 -3", BOTH, {NONNEG}),
    (b"V1|1|CONSUME|t x -1", BOTH, {INT, NONNEG}),
    (b"V1|1|PRODUCE|t kv", BOTH, {VALUES}),
    (b"V1|1|PRODUCE|t k:v acks=2", BOTH, {VALUES}),
    (b"V1|1|PRODUCE|t k:v ACKS=ALL", ("doc",), {VALUES}),
    (b"V1|1|PRODUCE|t k:v ACKS=ALL", ("real",), set()),
    (b"V1|1|JOIN|g t c assignor=sticky", BOTH, {VALUES}),
    (b"V1|1|SET_PARTITION_ROLE|t 0 observer", BOTH, {VALUES}),
    (b"V1|1|REPLICA_FETCH|t 0 0 5", BOTH, {"V1L-CLI-15"}),
    (b"V1|1|REPLICA_FETCH|t 0 3 5", BOTH, {"V1L-CLI-15"}),
    (b"V1|1|REPLICA_FETCH|t 0 2 -1", BOTH, set()),
]


def _params() -> list[object]:
    return [
        pytest.param(line, rev, broken, id=f"{rev}-{line!r}")
        for line, revisions, broken in LINES
        for rev in revisions
    ]


@pytest.mark.parametrize(("line", "revision", "broken"), _params())
def test_each_line_breaks_exactly_its_requirements(
    line: bytes, revision: str, broken: set[str]
) -> None:
    read = read_line(line, "real" if revision == "real" else "doc", 3)
    assert {v.requirement for v in read.violations} == broken, read.violations
    assert {v.requirement for v in read.violations} <= set(read.checked)


@pytest.mark.parametrize("line", [b"V1|1|PING|", b"V1|1|ping|", b"V1|1|PING|x"])
def test_a_ping_in_real_is_told_the_real_broker_has_none(line: bytes) -> None:
    (violation,) = read_line(line, "real", 3).violations
    assert violation.requirement == CMD and violation.fields == ("command",)
    assert "command of the document only" in violation.message, violation.message
    assert "the real broker answers it UNKNOWN_COMMAND" in violation.message, violation.message


def _checker(session_timeout_s: float = 10.0) -> tuple[V1Validation, V1Checker]:
    v = V1Validation("doc", 3, session_timeout_s)
    return v, v.connection(1)


def _broken(checker: V1Checker, line: bytes, now: float = 0.0) -> set[str]:
    return {x.requirement for x in checker.request(line, now).violations}


def test_a_correlation_id_in_use_by_a_waiting_request_is_reused() -> None:
    _, c = _checker()
    assert _broken(c, b"V1|1|PING|") == set()
    assert _broken(c, b"V1|1|PING|") == {"V1L-CLI-5"}
    c.reply(b"V1|1|OK", b"V1|1|PING|")
    c.reply(b"V1|1|OK", b"V1|1|PING|")
    assert _broken(c, b"V1|1|PING|") == set()


def _answered(c: V1Checker, line: bytes, reply: bytes, now: float = 0.0) -> set[str]:
    found = _broken(c, line, now)
    c.reply(reply, line)
    return found


def test_a_member_is_held_to_what_the_broker_told_it() -> None:
    _, c = _checker()
    assert _broken(c, b"V1|1|HEARTBEAT|g t alice 1") == {"V1L-CLI-11"}  # never joined
    c.reply(b"V1|1|ERR|GENERATION_MISMATCH|group not found", b"V1|1|HEARTBEAT|g t alice 1")
    join = b"V1|2|JOIN|g t alice"
    assert _answered(c, join, b"V1|2|OK|generation=3 assigned=[0 2]") == set()
    assert _broken(c, b"V1|3|COMMIT|g t alice 3 1 5") == {"V1L-CLI-12"}
    assert _broken(c, b"V1|4|COMMIT|g t alice 3 2 5") == set()
    assert _broken(c, b"V1|5|HEARTBEAT|g t alice 2") == {"V1L-CLI-11"}  # stale
    assert _broken(c, b"V1|6|HEARTBEAT|g t alice 9") == {"V1L-CLI-11"}  # never given
    beat = b"V1|7|HEARTBEAT|g t alice 3"
    refused = b"V1|7|ERR|GENERATION_MISMATCH|stale generation"
    assert _answered(c, beat, refused) == set()  # a rebalance it was not told about
    assert _broken(c, b"V1|8|SYNC|g t alice 3") == {"V1L-CLI-14"}
    assert _answered(c, b"V1|9|JOIN|g t alice", b"V1|9|OK|generation=5 assigned=[1]") == set()
    assert _broken(c, b"V1|10|COMMIT|g t alice 5 1 0") == set()
    leave = b"V1|11|LEAVE|g t alice 5"
    assert _answered(c, leave, b"V1|11|OK|left=true") == set()
    assert _broken(c, b"V1|12|HEARTBEAT|g t alice 5") == {"V1L-CLI-11"}


def test_a_member_silent_past_the_session_timeout_is_late() -> None:
    _, c = _checker(session_timeout_s=10.0)
    assert _answered(c, b"V1|1|JOIN|g t a", b"V1|1|OK|generation=1 assigned=[0]", 0.0) == set()
    assert _broken(c, b"V1|2|HEARTBEAT|g t a 1", 9.0) == set()
    assert _broken(c, b"V1|3|COMMIT|g t a 1 0 1", 18.0) == set()  # a commit keeps nothing alive
    assert _broken(c, b"V1|4|HEARTBEAT|g t a 1", 19.5) == {"V1L-CLI-13"}
    assert _broken(c, b"V1|5|JOIN|g t a", 60.0) == set()  # a new start, never late


def test_replica_fetch_goes_to_a_leader_and_never_goes_back() -> None:
    _, c = _checker()
    role = b"V1|1|SET_PARTITION_ROLE|t 1 follower"
    assert _answered(c, role, b"V1|1|OK|topic=t partition=1 role=follower hw=-1") == set()
    assert _broken(c, b"V1|2|REPLICA_FETCH|t 1 1 0") == {"V1L-CLI-16"}
    assert _broken(c, b"V1|3|REPLICA_FETCH|t 0 1 5") == set()
    assert _broken(c, b"V1|4|REPLICA_FETCH|t 0 2 1") == set()  # another replica
    assert _broken(c, b"V1|5|REPLICA_FETCH|t 0 1 3") == {"V1L-CLI-17"}
    back = b"V1|6|SET_PARTITION_ROLE|t 1 leader"
    assert _answered(c, back, b"V1|6|OK|topic=t partition=1 role=leader hw=-1") == set()
    assert _broken(c, b"V1|7|REPLICA_FETCH|t 1 1 0") == set()


def test_an_overlong_line_breaks_the_line_limit() -> None:
    _, c = _checker()
    assert c.framing("line of 70000 bytes over 65536").requirement == "V1L-CLI-3"


def test_fault_errors_are_the_real_brokers_lines_on_the_commands_that_carry_them() -> None:
    v, _ = _checker()
    produce = b"V1|7|PRODUCE|t k:v"
    assert v.error_reply(produce, "NOT_LEADER") == (
        b"V1|7|ERR|NOT_LEADER|partition leader unavailable on this broker"
    )
    assert v.error_reply(produce, "REPLICATION_TIMEOUT") is None  # only acks=all times out
    assert v.error_reply(produce + b" acks=all", "REPLICATION_TIMEOUT") == (
        b"V1|7|ERR|REPLICATION_TIMEOUT|acks=all timeout"
    )
    assert v.error_reply(b"V1|8|CONSUME|t 0 0", "NOT_LEADER") is None
    assert v.error_reply(b"V1|9|COMMIT|g t c 1 0 0", "GENERATION_MISMATCH") == (
        b"V1|9|ERR|GENERATION_MISMATCH|stale generation"
    )
    assert v.error_reply(b"V1|9|COMMIT|g t c x 0 0", "GENERATION_MISMATCH") is None
    assert v.error_reply(b"garbage", "NOT_LEADER") is None
    assert not v.actions  # no front-end: no rebalance


def test_rebalance_raises_the_generation_and_keeps_the_members() -> None:
    engine = Engine()
    frontend = V1Frontend(engine, V1Config())
    v = validation(frontend, ServeConfig("doc"))
    assert set(v.actions) == {"rebalance"}
    session = frontend.new_session("test")
    session.handle(b"V1|1|JOIN|g t alice")
    session.handle(b"V1|2|JOIN|g t bob")
    before = engine.group_info("g")
    v.act("rebalance", b"V1|3|HEARTBEAT|g t alice 2")
    after = engine.group_info("g")
    assert after.generation == before.generation + 2
    assert [m.member_id for m in after.members] == ["alice", "bob"]
    assert after.members == before.members
    reply = session.handle(b"V1|3|HEARTBEAT|g t alice 2").replies
    assert reply == [b"V1|3|ERR|GENERATION_MISMATCH|stale generation\n"]
    v.act("rebalance", b"V1|4|PRODUCE|t k:v")  # names no group: nothing happens
    assert engine.group_info("g").generation == after.generation


def test_a_member_from_before_the_session_is_taken_at_the_brokers_generation() -> None:
    engine = Engine()
    frontend = V1Frontend(engine, V1Config())
    session = frontend.new_session("test")
    session.handle(b"V1|1|JOIN|g t alice")  # joined before anything was checked
    v = validation(frontend, ServeConfig("doc"))
    c = v.connection(1)
    assert _broken(c, b"V1|2|HEARTBEAT|g t alice 1") == set()
    assert _broken(c, b"V1|3|HEARTBEAT|g t alice 0") == {"V1L-CLI-11"}
    assert _broken(c, b"V1|4|HEARTBEAT|g t bob 1") == {"V1L-CLI-11"}
    assert _broken(c, b"V1|5|HEARTBEAT|nogroup t alice 1") == {"V1L-CLI-11"}
