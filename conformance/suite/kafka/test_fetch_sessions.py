"""Kafka incremental fetch sessions, KIP-227 (SPEC-fetch-sessions.md, area "fetch-sessions").

Every case speaks Fetch v7+ (the highest both sides know, unless it is about a version)
and short waits: max_wait_ms 100 with min_bytes 1, so an answer with nothing new costs
100 ms.  A case that needs a session opens one with a full fetch at epoch 0; a target that
answers session id 0 there (no session: allowed, KAF-FSESS-2) makes it UNSUPPORTED.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

from conformance.evidence import Evidence, Node
from conformance.suite.case import Unsupported, case, require
from conformance.suite.kafka.steps import Fetched, batch, create_topic, produce, topic_id
from conformance.suite.kafka.verify import KafkaClient, expect_code, usable
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext

NO_SESSION, INITIAL, FINAL = 0, 0, -1


@dataclass
class Topic:
    """A topic as a Fetch names it at one version (its id from v13)."""

    name: str
    ref: str
    version: int


def topic_for(target: CaseContext, k: KafkaClient, base: str, version: int, parts: int) -> Topic:
    name = create_topic(target, k, base, partitions=parts)
    return Topic(name, topic_id(target, k, name) if version >= 13 else name, version)


def fetch_version(target: CaseContext, lowest: int = 7, highest: int | None = None) -> int:
    return usable(target, "Fetch", lowest=lowest, highest=highest)


@dataclass
class Ask:
    """One Fetch of a session: id, epoch, partitions named (index -> offset), forgotten."""

    session_id: int
    epoch: int
    named: dict[int, int] = field(default_factory=dict)
    forgotten: list[int] = field(default_factory=list)
    max_wait_ms: int = 100

    def body(self, t: Topic) -> dict[str, Any]:
        ref = {"topic_id": t.ref} if t.version >= 13 else {"topic": t.ref}
        parts = [
            {"partition": p, "fetch_offset": o, "partition_max_bytes": 1 << 20}
            for p, o in self.named.items()
        ]
        return {
            "replica_id": -1,
            "max_wait_ms": self.max_wait_ms,
            "min_bytes": 1,
            "max_bytes": 0x7FFFFFFF,
            "isolation_level": 0,
            "session_id": self.session_id,
            "session_epoch": self.epoch,
            "topics": [{**ref, "partitions": parts}] if parts else [],
            "forgotten_topics_data": [{**ref, "partitions": self.forgotten}]
            if self.forgotten
            else [],
        }

    def describe(self, t: Topic) -> str:
        named = f", naming {sorted(self.named)}" if self.named else ""
        gone = f", forgetting {self.forgotten}" if self.forgotten else ""
        return f"Fetch v{t.version} session {self.session_id} epoch {self.epoch}{named}{gone}"


def send(k: KafkaClient, t: Topic, ask: Ask, requirement: str, timeout: float = 5) -> Node:
    return k.call("Fetch", t.version, ask.body(t), requirement, ask.describe(t), timeout=timeout)


def answered(reply: Node) -> dict[int, Node]:
    """The partitions of an answer about one topic, by index."""
    return {int(p["partition_index"]): p for r in reply["responses"] for p in r["partitions"]}


def partitions_at(reply: Node) -> Evidence:
    """The answer's topics array (with every partition it holds) as the evidence."""
    out: Evidence = reply["responses"].at()
    return out


def expect_partitions(reply: Node, want: list[int], requirement: str, what: str) -> None:
    got = sorted(answered(reply))
    require(
        got == want,
        requirement,
        f"{what}: partitions {show_all(got)} answered, expected {show_all(want)}",
        partitions_at(reply),
    )


def expect_answered(reply: Node, index: int, requirement: str, what: str) -> None:
    got = sorted(answered(reply))
    require(
        index in got,
        requirement,
        f"{what}: partitions {show_all(got)} answered, expected {index} among them",
        partitions_at(reply),
    )


def expect_session(reply: Node, want: int, requirement: str, what: str) -> None:
    got = int(reply["session_id"])
    require(
        got == want,
        requirement,
        f"{what}: session id {got}, expected {want}",
        reply.at("session_id"),
    )


def expect_refused(reply: Node, error: str, session_id: int, requirement: str, what: str) -> None:
    """A session error: the top-level ``error``, ``session_id`` and no partition."""
    expect_code(reply, "error_code", error, requirement, what)
    expect_session(reply, session_id, requirement, what)
    expect_partitions(reply, [], requirement, what)


def open_session(
    target: CaseContext, k: KafkaClient, t: Topic, offsets: dict[int, int], requirement: str
) -> int:
    """A new session of ``offsets`` by a full fetch at epoch 0 (checked as KAF-FSESS-2
    checks it); UNSUPPORTED when the target makes none."""
    ask = Ask(NO_SESSION, INITIAL, offsets)
    reply = send(k, t, ask, requirement)
    expect_code(reply, "error_code", "NONE", requirement, ask.describe(t))
    sid = int(reply["session_id"])
    if sid == NO_SESSION:
        raise Unsupported(
            "the target made no fetch session (session id 0 for a full fetch at epoch 0)",
            "KAF-FSESS-3",
            reply.at("session_id"),
        )
    return sid


def values(part: Node, requirement: str) -> list[bytes | None]:
    return [v for _, v in Fetched(part).values(requirement)]


def expect_values(reply: Node, index: int, want: bytes, requirement: str, what: str) -> None:
    """Partition ``index`` (answered) carries the one record ``want``."""
    got = values(answered(reply)[index], requirement)
    require(
        got == [want],
        requirement,
        f"{what}: partition {index} answered values {show_all(got)}, expected '{want.decode()}'",
        answered(reply)[index].at("records"),
    )


# ------------------------------------------------------------------ full fetches


@case("kafka/fetch-sessions/1", "KAF-FSESS-1")
def test_a_fetch_at_epoch_minus_1_has_no_session(target: CaseContext) -> None:
    """Session id 0 and epoch -1: a full fetch answered without a session.

    KAF-FSESS-1: "a Fetch (v7+) with session id 0 and epoch -1 is a full fetch without a
    session: every partition named is answered, and the answer's session id is 0."
    """
    v = fetch_version(target)
    with KafkaClient(target) as k:
        t = topic_for(target, k, "sessionless", v, 2)
        ask = Ask(NO_SESSION, FINAL, {0: 0, 1: 0})
        reply = send(k, t, ask, "KAF-FSESS-1")
    expect_partitions(reply, [0, 1], "KAF-FSESS-1", ask.describe(t))
    expect_session(reply, NO_SESSION, "KAF-FSESS-1", ask.describe(t))


@case("kafka/fetch-sessions/2", "KAF-FSESS-2", "KAF-FSESS-3")
def test_a_fetch_at_epoch_0_creates_a_session(target: CaseContext) -> None:
    """Session id 0 and epoch 0: a full fetch, answered with a new session's id.

    KAF-FSESS-2: "a Fetch (v7+) with session id 0 and epoch 0 is a full fetch: every partition
    named is answered, with error 0 at the top level, and the answer's session id is either a
    new session's id (greater than 0) or 0 when the broker made no session."

    KAF-FSESS-3: "a full fetch at epoch 0 to a broker whose session cache has room creates a
    session: the answer's session id is greater than 0."
    """
    v = fetch_version(target)
    with KafkaClient(target) as k:
        t = topic_for(target, k, "initial", v, 2)
        ask = Ask(NO_SESSION, INITIAL, {0: 0, 1: 0})
        reply = send(k, t, ask, "KAF-FSESS-2")
    what = ask.describe(t)
    expect_code(reply, "error_code", "NONE", "KAF-FSESS-2", what)
    expect_partitions(reply, [0, 1], "KAF-FSESS-2", what)
    sid = int(reply["session_id"])
    require(
        sid >= 0,
        "KAF-FSESS-2",
        f"{what}: session id {sid}, expected 0 or more",
        reply.at("session_id"),
    )
    require(
        sid > 0,
        "KAF-FSESS-3",
        f"{what}: session id 0, expected a new session's id",
        reply.at("session_id"),
    )


# ------------------------------------------------------------------ incremental fetches


@case("kafka/fetch-sessions/3", "KAF-FSESS-4")
def test_an_incremental_fetch_leaves_out_what_did_not_change(target: CaseContext) -> None:
    """An incremental fetch with nothing new answers no partition, with the session's id.

    KAF-FSESS-4: "an incremental fetch (the session's id and its next epoch: 1 after the full
    fetch that created it, one more after each incremental fetch) is answered with error 0 and
    the session's id, and leaves out every partition of the session with nothing new"
    """
    v = fetch_version(target)
    with KafkaClient(target) as k:
        t = topic_for(target, k, "quiet", v, 2)
        produce(target, k, t.name, batch([b"old"]), requirement="KAF-FSESS-4")
        sid = open_session(target, k, t, {0: 1, 1: 0}, "KAF-FSESS-4")
        for epoch in (1, 2):
            ask = Ask(sid, epoch)
            reply = send(k, t, ask, "KAF-FSESS-4")
            expect_code(reply, "error_code", "NONE", "KAF-FSESS-4", ask.describe(t))
            expect_session(reply, sid, "KAF-FSESS-4", ask.describe(t))
            expect_partitions(reply, [], "KAF-FSESS-4", ask.describe(t))


@case("kafka/fetch-sessions/4", "KAF-FSESS-5")
def test_new_records_of_a_partition_not_named_are_answered(target: CaseContext) -> None:
    """An incremental fetch answers a session partition's new records, from its cached offset.

    KAF-FSESS-5: "in an incremental fetch, a partition of the session that is not named but has
    new records is answered with them, read from the fetch offset the session last received for
    it."
    """
    v = fetch_version(target)
    with KafkaClient(target) as k:
        t = topic_for(target, k, "news", v, 2)
        sid = open_session(target, k, t, {0: 0, 1: 0}, "KAF-FSESS-5")
        produce(target, k, t.name, batch([b"new"]), partition=1, requirement="KAF-FSESS-5")
        ask = Ask(sid, 1)
        reply = send(k, t, ask, "KAF-FSESS-5")
    what = ask.describe(t)
    expect_code(reply, "error_code", "NONE", "KAF-FSESS-5", what)
    expect_answered(reply, 1, "KAF-FSESS-5", what)
    expect_values(reply, 1, b"new", "KAF-FSESS-5", what)


@case("kafka/fetch-sessions/5", "KAF-FSESS-6")
def test_a_named_partition_joins_and_a_forgotten_one_leaves(target: CaseContext) -> None:
    """An incremental fetch adds the partitions it names and removes the forgotten ones.

    KAF-FSESS-6: "a partition an incremental fetch names is added to the session (or its fetch
    offset replaced), and a partition listed in forgotten_topics_data is removed from it"
    """
    v = fetch_version(target)
    with KafkaClient(target) as k:
        t = topic_for(target, k, "swap", v, 2)
        sid = open_session(target, k, t, {0: 0}, "KAF-FSESS-6")
        swap = Ask(sid, 1, {1: 0}, forgotten=[0])
        reply = send(k, t, swap, "KAF-FSESS-6")
        expect_code(reply, "error_code", "NONE", "KAF-FSESS-6", swap.describe(t))
        for p in (0, 1):
            produce(target, k, t.name, batch([b"p%d" % p]), partition=p, requirement="KAF-FSESS-6")
        ask = Ask(sid, 2)
        reply = send(k, t, ask, "KAF-FSESS-6")
    what = f"{ask.describe(t)} (after {swap.describe(t)})"
    expect_code(reply, "error_code", "NONE", "KAF-FSESS-6", what)
    expect_answered(reply, 1, "KAF-FSESS-6", what)
    require(
        0 not in answered(reply),
        "KAF-FSESS-6",
        f"{what}: the forgotten partition 0 was answered, expected it gone from the session",
        answered(reply)[0].at() if 0 in answered(reply) else partitions_at(reply),
    )
    expect_values(reply, 1, b"p1", "KAF-FSESS-6", what)


@case("kafka/fetch-sessions/6", "KAF-FSESS-7")
def test_a_partition_with_an_error_is_answered_every_time(target: CaseContext) -> None:
    """A session partition with an error is in every incremental answer.

    KAF-FSESS-7: "a partition of the session with an error is answered in every incremental
    fetch, with its error, whether or not anything else changed."
    """
    v = fetch_version(target)
    with KafkaClient(target) as k:
        t = topic_for(target, k, "errs", v, 1)
        sid = open_session(target, k, t, {0: 50}, "KAF-FSESS-7")  # past the end: an error
        for epoch in (1, 2):
            ask = Ask(sid, epoch)
            reply = send(k, t, ask, "KAF-FSESS-7")
            expect_partitions(reply, [0], "KAF-FSESS-7", ask.describe(t))
            part = answered(reply)[0]
            require(
                part["error_code"] != 0,
                "KAF-FSESS-7",
                f"{ask.describe(t)}: partition 0 (offset 50 of an empty log) answered error 0, "
                "expected its error",
                part.at("error_code"),
            )


# ------------------------------------------------------------------ session errors


@case("kafka/fetch-sessions/7", "KAF-FSESS-8")
def test_an_unknown_session_id_is_error_70(target: CaseContext) -> None:
    """An incremental fetch of a session the broker does not have: FETCH_SESSION_ID_NOT_FOUND.

    KAF-FSESS-8: "an incremental fetch (an epoch other than 0 and -1) naming a session id the
    broker does not know is answered FETCH_SESSION_ID_NOT_FOUND (70) at the top level, with
    session id 0 and no partition."
    """
    v = fetch_version(target)
    with KafkaClient(target) as k:
        t = topic_for(target, k, "nosuch", v, 1)
        ask = Ask(random.randrange(1 << 20, 1 << 30), 1, {0: 0})
        reply = send(k, t, ask, "KAF-FSESS-8")
    expect_refused(reply, "FETCH_SESSION_ID_NOT_FOUND", NO_SESSION, "KAF-FSESS-8", ask.describe(t))


@case("kafka/fetch-sessions/8", "KAF-FSESS-9")
def test_a_wrong_epoch_is_error_71_and_the_session_stays(target: CaseContext) -> None:
    """An incremental fetch at the wrong epoch: INVALID_FETCH_SESSION_EPOCH, the session kept.

    KAF-FSESS-9: "an incremental fetch of a known session with an epoch other than the
    session's next one is answered INVALID_FETCH_SESSION_EPOCH (71) at the top level, with
    session id 0 and no partition, and leaves the session as it was: the right epoch still
    works."
    """
    v = fetch_version(target)
    with KafkaClient(target) as k:
        t = topic_for(target, k, "epoch", v, 1)
        sid = open_session(target, k, t, {0: 0}, "KAF-FSESS-9")
        for wrong in (5, 0x7FFFFFFF):
            ask = Ask(sid, wrong)
            reply = send(k, t, ask, "KAF-FSESS-9")
            expect_refused(
                reply, "INVALID_FETCH_SESSION_EPOCH", NO_SESSION, "KAF-FSESS-9", ask.describe(t)
            )
        ask = Ask(sid, 1)
        reply = send(k, t, ask, "KAF-FSESS-9")
    what = f"{ask.describe(t)} after two at wrong epochs"
    expect_code(reply, "error_code", "NONE", "KAF-FSESS-9", what)
    expect_session(reply, sid, "KAF-FSESS-9", what)


@case("kafka/fetch-sessions/9", "KAF-FSESS-10")
def test_crossing_version_13_in_a_session_is_error_106(target: CaseContext) -> None:
    """A session made by names used by topic id, or the other way: FETCH_SESSION_TOPIC_ID_ERROR.

    KAF-FSESS-10: "an incremental fetch at v13 or later of a session created at v7-12 (topics by
    name), or at v7-12 of a session created at v13 or later (topics by id), is answered
    FETCH_SESSION_TOPIC_ID_ERROR (106) at the top level, with session id 0 and no partition."
    """
    by_name, by_id = fetch_version(target, 7, 12), fetch_version(target, 13)
    with KafkaClient(target) as k:
        name = create_topic(target, k, "cross")
        tid = topic_id(target, k, name)
        for made, used in ((by_name, by_id), (by_id, by_name)):
            first = Topic(name, tid if made >= 13 else name, made)
            sid = open_session(target, k, first, {0: 0}, "KAF-FSESS-10")
            then = Topic(name, tid if used >= 13 else name, used)
            ask = Ask(sid, 1)
            reply = send(k, then, ask, "KAF-FSESS-10")
            what = f"{ask.describe(then)} of a session made at v{made}"
            expect_refused(reply, "FETCH_SESSION_TOPIC_ID_ERROR", NO_SESSION, "KAF-FSESS-10", what)


# ------------------------------------------------------------------ closing, sharing, racing


@case("kafka/fetch-sessions/10", "KAF-FSESS-11")
def test_a_full_fetch_naming_a_session_closes_it(target: CaseContext) -> None:
    """A full fetch with a session's id closes the session (epoch -1: answered without one).

    KAF-FSESS-11: "a full fetch (epoch -1 or 0) naming a session id closes that session: a later
    incremental fetch of that id is FETCH_SESSION_ID_NOT_FOUND (70); at epoch -1 the full fetch
    is answered for every partition named, with session id 0."
    """
    v = fetch_version(target)
    with KafkaClient(target) as k:
        t = topic_for(target, k, "close", v, 2)
        for epoch in (FINAL, INITIAL):
            sid = open_session(target, k, t, {0: 0, 1: 0}, "KAF-FSESS-11")
            full = Ask(sid, epoch, {0: 0})
            reply = send(k, t, full, "KAF-FSESS-11")
            if epoch == FINAL:
                expect_partitions(reply, [0], "KAF-FSESS-11", full.describe(t))
                expect_session(reply, NO_SESSION, "KAF-FSESS-11", full.describe(t))
            elif int(reply["session_id"]) == sid:  # the same id again, by chance: a new session
                continue
            ask = Ask(sid, 1)
            after = send(k, t, ask, "KAF-FSESS-11")
            what = f"{ask.describe(t)} after {full.describe(t)}"
            expect_refused(after, "FETCH_SESSION_ID_NOT_FOUND", NO_SESSION, "KAF-FSESS-11", what)


@case("kafka/fetch-sessions/11", "KAF-FSESS-12")
def test_forgetting_every_partition_closes_the_session(target: CaseContext) -> None:
    """An incremental fetch that forgets the session's last partitions closes it.

    KAF-FSESS-12: "an incremental fetch that forgets the last partitions of its session closes
    the session: it is answered with error 0 and session id 0, and a later incremental fetch of
    that id is FETCH_SESSION_ID_NOT_FOUND (70)."
    """
    v = fetch_version(target)
    with KafkaClient(target) as k:
        t = topic_for(target, k, "empty", v, 2)
        sid = open_session(target, k, t, {0: 0, 1: 0}, "KAF-FSESS-12")
        gone = Ask(sid, 1, forgotten=[0, 1])
        reply = send(k, t, gone, "KAF-FSESS-12")
        expect_code(reply, "error_code", "NONE", "KAF-FSESS-12", gone.describe(t))
        expect_session(reply, NO_SESSION, "KAF-FSESS-12", gone.describe(t))
        ask = Ask(sid, 2)
        after = send(k, t, ask, "KAF-FSESS-12")
    what = f"{ask.describe(t)} after {gone.describe(t)}"
    expect_refused(after, "FETCH_SESSION_ID_NOT_FOUND", NO_SESSION, "KAF-FSESS-12", what)


@case("kafka/fetch-sessions/12", "KAF-FSESS-13")
def test_a_session_continues_on_another_connection(target: CaseContext) -> None:
    """A session made on one connection is continued on another.

    KAF-FSESS-13: "fetch sessions belong to the broker, not to a connection: an incremental
    fetch on another connection continues a session created on the first one."
    """
    v = fetch_version(target)
    with KafkaClient(target) as k:
        t = topic_for(target, k, "moved", v, 1)
        sid = open_session(target, k, t, {0: 0}, "KAF-FSESS-13")
    with KafkaClient(target) as other:
        produce(target, other, t.name, batch([b"later"]), requirement="KAF-FSESS-13")
        ask = Ask(sid, 1)
        reply = send(other, t, ask, "KAF-FSESS-13")
    what = f"{ask.describe(t)} on a second connection"
    expect_code(reply, "error_code", "NONE", "KAF-FSESS-13", what)
    expect_session(reply, sid, "KAF-FSESS-13", what)
    expect_partitions(reply, [0], "KAF-FSESS-13", what)


@case("kafka/fetch-sessions/13", "KAF-FSESS-14")
def test_an_overtaken_incremental_fetch_is_error_71_with_the_session_id(
    target: CaseContext,
) -> None:
    """A waiting incremental fetch overtaken by the session's next one: error 71, the id.

    KAF-FSESS-14: "an incremental fetch still waiting (long poll) when another incremental fetch
    of the same session, at the next epoch, has been served is answered
    INVALID_FETCH_SESSION_EPOCH (71), with the session's id and no partition."
    """
    v = fetch_version(target)
    with KafkaClient(target) as k, KafkaClient(target) as other:
        t = topic_for(target, k, "race", v, 1)
        sid = open_session(target, k, t, {0: 0}, "KAF-FSESS-14")
        slow = Ask(sid, 1, max_wait_ms=1500)
        corr = k.send("Fetch", v, slow.body(t))
        time.sleep(0.3)  # the slow fetch is read and waiting before the fast one comes
        fast = Ask(sid, 2, max_wait_ms=0)
        reply = send(other, t, fast, "KAF-FSESS-14")
        expect_code(reply, "error_code", "NONE", "KAF-FSESS-14", fast.describe(t))
        late = k.answer("Fetch", v, corr, "KAF-FSESS-14", slow.describe(t), timeout=5)
    what = f"{slow.describe(t)} (waiting) after {fast.describe(t)} was served"
    expect_refused(late, "INVALID_FETCH_SESSION_EPOCH", sid, "KAF-FSESS-14", what)
