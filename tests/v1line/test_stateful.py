"""The V1 line front-end, sans-IO, against a small model, by a Hypothesis state machine.

``V1Frontend(Engine(), V1Config(...))`` is driven through ``session.handle(line)`` with a
fake clock (the engine's, in seconds, and the front-end's ``clock``, in ms), one rule per
command: PRODUCE (every ack mode), CONSUME, SET_PARTITION_ROLE, REPLICA_FETCH, JOIN, SYNC,
HEARTBEAT, LEAVE, COMMIT, OFFSET, and the passing of time.  The model knows the log, the
roles, the groups (generation, assignor, members and when each was last seen) and the
commits, so group replies are predicted exactly, sessions included (V1L-GRP-1..14,
OFF-1..6); replication is checked by its invariants: offsets consecutive per partition
(V1L-PROD-2), CONSUME never past hw (V1L-CONS-2), hw never above the leader's last offset and
never back while leader (V1L-REPL-14), in ``real`` always the leader's last offset
(V1L-REPL-16), the isr list and under_replicated (V1L-REPL-10, -12), acks=all answered with
hw at its offset or REPLICATION_TIMEOUT, never before the ack timeout (V1L-REPL-8, -9).

The clock: the server polls a waiting acks=all with its own clock (``time.monotonic()``
seconds, against the wait's ``deadline``), the replication rules read the front-end's, so each
wait's ``deadline`` is moved onto the fake clock before it is polled
(:func:`test_acks_all_waits_on_the_injected_clock` checks that nothing else reads the real one).
Times move in
steps of 100 ms and the timeouts are not multiples of 100, so no check sits on a boundary.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from conformance.engine import Engine
from conformance.protocols.v1line.handler import AcksAllWait, V1Config, V1Frontend
from tests.support.v1line_client import fields, int_list, messages, partition_of

PARTITIONS, RF, MIN_ISR = 3, 3, 2
ACK_MS, LAG_MS, SESSION_MS = 1050, 1550, 2950
TOPIC = "t"
GROUPS = {"g1": "t", "g2": "u"}
CONSUMERS = ("c", "a", "b")
KEYS = ("k0", "k1", "k2", "k3", "k4")
VALUES = st.text("abcxyz019", min_size=0, max_size=4)
NOT_LEADER = "ERR|NOT_LEADER|partition leader unavailable on this broker"
MISMATCH = "ERR|GENERATION_MISMATCH|"


def shares(assignor: str, members: list[str]) -> dict[str, list[int]]:
    """V1L-GRP-5, -6: the assignor's definition over the members sorted by id."""
    order = sorted(members)
    out: dict[str, list[int]] = {m: [] for m in order}
    if assignor == "range":
        start = 0
        for i, m in enumerate(order):
            size = PARTITIONS // len(order) + (1 if i < PARTITIONS % len(order) else 0)
            out[m] = list(range(start, start + size))
            start += size
    else:
        for p in range(PARTITIONS):
            out[order[p % len(order)]].append(p)
    return out


def listed(parts: list[int]) -> str:
    return "[" + " ".join(map(str, parts)) + "]"


@dataclass
class GroupModel:
    generation: int
    assignor: str
    members: dict[str, int] = field(default_factory=dict)
    """Consumer id -> when (model ms) it last joined, synced or heartbeat."""

    def shares(self) -> dict[str, list[int]]:
        return shares(self.assignor, list(self.members)) if self.members else {}


@dataclass
class Follower:
    progress: int = -1
    reported_at: int | None = None
    caught_up_at: int | None = None


@dataclass
class Partition:
    """SPEC's replication model of one partition (preamble, high watermark; V1L-REPL-15,
    -16): a follower's progress never goes back nor passes the leader's last offset; doc's
    ISR is the followers caught up to the last offset within the lag timeout, real's those
    that reported within it and are at the last offset; hw the ISR's smallest offset."""

    revision: str
    values: list[str] = field(default_factory=list)
    followers: dict[int, Follower] = field(
        default_factory=lambda: {r: Follower() for r in range(1, RF)}
    )

    @property
    def last(self) -> int:
        return len(self.values) - 1

    def report(self, replica: int, offset: int, t: int) -> None:
        f = self.followers[replica]
        f.progress = max(f.progress, min(offset, self.last))
        f.reported_at = t
        if f.progress >= self.last:
            f.caught_up_at = t

    def in_sync(self, replica: int, t: int) -> bool:
        f = self.followers[replica]
        if self.revision == "real":
            fresh = f.reported_at is not None and t - f.reported_at <= LAG_MS
            return fresh and f.progress >= self.last
        return f.caught_up_at is not None and t - f.caught_up_at <= LAG_MS

    def isr(self, t: int) -> list[int]:
        return [0, *(r for r in sorted(self.followers) if self.in_sync(r, t))]

    def hw(self, t: int) -> int:
        return min([self.last, *(self.followers[r].progress for r in self.isr(t)[1:])])

    def acks_all_ready(self, offset: int, t: int) -> bool:
        return self.hw(t) >= offset and len(self.isr(t)) >= MIN_ISR


@dataclass
class Wait:
    pending: AcksAllWait
    partition: int
    offset: int
    started: int
    cid: str


class V1Machine(RuleBasedStateMachine):
    revision = "doc"

    def __init__(self) -> None:
        super().__init__()
        self.t = 0
        self.base = int(time.monotonic() * 1000) + 10**9
        config = V1Config(
            revision="real" if self.revision == "real" else "doc",
            replication_factor=RF,
            min_isr=MIN_ISR,
            ack_timeout_ms=ACK_MS,
            replica_lag_timeout_ms=LAG_MS,
            session_timeout_ms=SESSION_MS,
            partitions=PARTITIONS,
        )
        self.fe = V1Frontend(Engine(clock=lambda: self.t / 1000), config)
        self.fe.clock = lambda: float(self.base + self.t)
        self.session = self.fe.new_session("model")
        self.first = 2 if self.revision == "real" else 1
        self.n = 0
        self.parts = {p: Partition(self.revision) for p in range(PARTITIONS)}
        self.role = dict.fromkeys(range(PARTITIONS), "leader")
        self.hw_floor = dict.fromkeys(range(PARTITIONS), -1)
        self.waits: list[Wait] = []
        self.groups: dict[str, GroupModel] = {}
        self.seen_generation: dict[str, int] = {}
        self.commits: dict[tuple[str, int], int] = {}

    # ---------------------------------------------------------------- helpers

    def send(self, command: str, args: str) -> tuple[str, list[bytes], AcksAllWait | None]:
        self.n += 1
        cid = str(self.n)
        outcome = self.session.handle(f"V1|{cid}|{command}|{args}".encode())
        pending = outcome.pending
        assert pending is None or isinstance(pending, AcksAllWait), pending
        return cid, outcome.replies, pending

    def call(self, command: str, args: str) -> tuple[str, str]:
        cid, replies, pending = self.send(command, args)
        assert pending is None and len(replies) == 1, (command, args, replies)
        reply = replies[0].decode()
        assert reply.endswith("\n") and reply.count("\n") == 1, reply
        return cid, reply[:-1]

    def saw_hw(self, p: int, hw: int, what: str) -> None:
        last = self.parts[p].last
        assert -1 <= hw <= last, f"{what}: hw {hw} above partition {p}'s last offset {last}"
        if self.role[p] == "leader":
            assert hw >= self.hw_floor[p], f"{what}: hw {hw} went back from {self.hw_floor[p]}"
            self.hw_floor[p] = hw
            if self.revision == "real":
                assert hw == last, f"{what}: real's hw {hw} is not the last offset {last}"
        expected = self.parts[p].hw(self.t)
        assert hw == expected, f"{what}: hw {hw}, the model's {expected}"

    def poll_waits(self) -> None:
        now = (self.base + self.t) / 1000
        for w in list(self.waits):
            replies = w.pending.poll(now)
            elapsed = self.t - w.started
            ready = self.parts[w.partition].acks_all_ready(w.offset, self.t)
            if replies is None:
                assert not ready, f"acks=all of {w.offset} still waits with min ISR and hw"
                assert elapsed < ACK_MS, f"acks=all unanswered {elapsed} ms after its append"
                continue
            self.waits.remove(w)
            reply = replies[0].decode().removesuffix("\n")
            if reply == f"V1|{w.cid}|ERR|REPLICATION_TIMEOUT|acks=all timeout":
                assert not ready, f"acks=all of {w.offset} timed out while ready"
                assert elapsed >= ACK_MS, f"REPLICATION_TIMEOUT after {elapsed} ms"
                continue
            assert ready, f"{reply}: answered before hw and min ISR allowed it"
            got = fields(reply)
            assert (got["partition"], got["offset"]) == (str(w.partition), str(w.offset)), reply
            hw = int(got["hw"])
            assert hw >= w.offset, f"acks=all answered with hw {hw} below {w.offset}"
            self.saw_hw(w.partition, hw, reply)

    def expire(self) -> None:
        """What every group command does first: drop members silent past the session."""
        for name, g in self.groups.items():
            gone = [m for m, seen in g.members.items() if self.t - seen > SESSION_MS]
            if gone:
                for m in gone:
                    del g.members[m]
                g.generation += 1
                self.seen(name, g.generation)

    def seen(self, group: str, generation: int) -> None:
        before = self.seen_generation.get(group, 0)
        assert generation >= before, f"{group}: generation {generation} went back from {before}"
        self.seen_generation[group] = generation

    def refusal(self, group: str, consumer: str, generation: int) -> str | None:
        g = self.groups.get(group)
        if g is None:
            return "group not found"
        if consumer not in g.members:
            return "unknown member"
        if generation != g.generation:
            return "stale generation"
        return None

    # ------------------------------------------------------------ replication

    @rule(key=st.sampled_from(KEYS), value=VALUES, acks=st.sampled_from([None, "0", "1", "all"]))
    def produce(self, key: str, value: str, acks: str | None) -> None:
        p = partition_of(key, PARTITIONS)
        args = f"{TOPIC} {key}:{value}" + ("" if acks is None else f" acks={acks}")
        cid, replies, pending = self.send("PRODUCE", args)
        if self.role[p] == "follower":
            assert replies == [f"V1|{cid}|{NOT_LEADER}\n".encode()], replies
            return
        offset = self.parts[p].last + 1
        self.parts[p].values.append(value)
        if acks == "all":  # the followers cannot have the new record yet (V1L-REPL-9)
            assert pending is not None and not replies, f"acks=all answered at once: {replies}"
            pending.deadline = (pending.started_ms + ACK_MS) / 1000  # onto the fake clock
            self.waits.append(Wait(pending, p, offset, self.t, cid))
            return
        assert pending is None and len(replies) == 1, (acks, replies)
        reply = replies[0].decode().removesuffix("\n")
        prefix = f"V1|{cid}|OK|partition={p} offset={offset} hw="
        assert reply.startswith(prefix), f"expected {prefix}..., got {reply}"
        self.saw_hw(p, int(reply[len(prefix) :]), reply)

    @rule(p=st.integers(0, PARTITIONS - 1), offset=st.integers(0, 6))
    def consume(self, p: int, offset: int) -> None:
        reply = self.call("CONSUME", f"{TOPIC} {p} {offset}")[1]
        items, hw = messages(reply)
        self.saw_hw(p, hw, reply)
        expected = [(o, self.parts[p].values[o]) for o in range(offset, hw + 1)]
        assert items == expected, f"{reply}: expected {expected}"

    @rule(p=st.integers(0, PARTITIONS - 1), role=st.sampled_from(["leader", "follower"]))
    def set_role(self, p: int, role: str) -> None:
        cid, reply = self.call("SET_PARTITION_ROLE", f"{TOPIC} {p} {role}")
        prefix = f"V1|{cid}|OK|topic={TOPIC} partition={p} role={role} hw="
        assert reply.startswith(prefix), reply
        if self.role[p] != role:
            self.hw_floor[p] = -1  # V1L-REPL-14 holds while the partition stays leader
        self.role[p] = role
        self.saw_hw(p, int(reply[len(prefix) :]), reply)

    @rule(
        p=st.integers(0, PARTITIONS - 1), replica=st.integers(1, RF - 1), ahead=st.integers(-2, 1)
    )
    def replica_fetch(self, p: int, replica: int, ahead: int) -> None:
        part = self.parts[p]
        last = part.last
        offset = max(-1, last + ahead)
        cid, reply = self.call("REPLICA_FETCH", f"{TOPIC} {p} {replica} {offset}")
        if self.revision == "real" and self.role[p] == "follower":
            assert reply == f"V1|{cid}|ERR|BAD_REQUEST|partition is not leader"
            return
        part.report(replica, offset, self.t)
        got = fields(reply)
        assert (got["replica"], got["acked_offset"]) == (str(replica), str(offset)), reply
        isr = int_list(got["isr"])
        assert isr[0] == 0 and isr == sorted(set(isr)) and set(isr) <= set(range(RF)), reply
        if offset >= last:
            assert replica in isr, f"{reply}: replica {replica} reported the last offset {last}"
        assert got["under_replicated"] == ("true" if len(isr) < MIN_ISR else "false"), reply
        for other, f in part.followers.items():  # V1L-REPL-11
            if f.reported_at is None or self.t - f.reported_at > LAG_MS:
                assert other not in isr, f"{reply}: replica {other} silent, still in the ISR"
        assert isr == part.isr(self.t), f"{reply}: the model's ISR is {part.isr(self.t)}"
        self.saw_hw(p, int(got["hw"]), reply)
        self.poll_waits()

    @rule(ms=st.sampled_from([100, 300, 700, 1600]))
    def advance(self, ms: int) -> None:
        self.t += ms
        self.poll_waits()

    # ----------------------------------------------------------------- groups

    @rule(
        group=st.sampled_from(sorted(GROUPS)),
        consumer=st.sampled_from(CONSUMERS),
        assignor=st.sampled_from([None, "round_robin", "range"]),
    )
    def join(self, group: str, consumer: str, assignor: str | None) -> None:
        self.expire()
        g = self.groups.get(group)
        if g is not None and consumer in g.members and assignor not in (None, g.assignor):
            assignor = None  # a member switching the assignor: left out of the model
        arg = "" if assignor is None else f" assignor={assignor}"
        cid, reply = self.call("JOIN", f"{group} {GROUPS[group]} {consumer}{arg}")
        if g is None:
            g = self.groups[group] = GroupModel(self.first, assignor or "round_robin")
        elif consumer not in g.members or (assignor or g.assignor) != g.assignor:
            g.generation = max(g.generation + 1, self.first)
            g.assignor = assignor or g.assignor
        g.members[consumer] = self.t
        assigned = listed(g.shares()[consumer])
        assert reply == f"V1|{cid}|OK|generation={g.generation} assigned={assigned}"
        self.seen(group, g.generation)

    def _member_call(
        self, command: str, group: str, consumer: str, delta: int, extra: str = ""
    ) -> tuple[str, str, str | None]:
        self.expire()
        g = self.groups.get(group)
        generation = (g.generation if g else self.first) + delta
        cid, reply = self.call(command, f"{group} {GROUPS[group]} {consumer} {generation}{extra}")
        why = self.refusal(group, consumer, generation)
        if why is not None:
            assert reply == f"V1|{cid}|{MISMATCH}{why}", (command, group, consumer, generation)
        return cid, reply, why

    @rule(
        group=st.sampled_from(sorted(GROUPS)),
        consumer=st.sampled_from(CONSUMERS),
        delta=st.sampled_from([0, 0, -1, 1]),
        command=st.sampled_from(["SYNC", "HEARTBEAT", "LEAVE"]),
    )
    def member_command(self, group: str, consumer: str, delta: int, command: str) -> None:
        cid, reply, why = self._member_call(command, group, consumer, delta)
        if why is not None:
            return
        g = self.groups[group]
        if command == "SYNC":
            assigned = listed(g.shares()[consumer])
            assert reply == f"V1|{cid}|OK|generation={g.generation} assigned={assigned}"
            g.members[consumer] = self.t
        elif command == "HEARTBEAT":
            assert reply == f"V1|{cid}|OK|heartbeat=ok"
            g.members[consumer] = self.t
        else:
            assert reply == f"V1|{cid}|OK|left=true"
            del g.members[consumer]
            g.generation += 1
            self.seen(group, g.generation)

    @rule(
        group=st.sampled_from(sorted(GROUPS)),
        consumer=st.sampled_from(CONSUMERS),
        delta=st.sampled_from([0, 0, 0, -1]),
        p=st.integers(0, PARTITIONS),
        offset=st.integers(0, 30),
    )
    def commit(self, group: str, consumer: str, delta: int, p: int, offset: int) -> None:
        cid, reply, why = self._member_call("COMMIT", group, consumer, delta, f" {p} {offset}")
        if why is not None:
            return
        if p not in self.groups[group].shares()[consumer]:
            assert reply == f"V1|{cid}|{MISMATCH}partition not assigned to member", reply
            return
        assert reply == f"V1|{cid}|OK|committed=true", reply
        self.commits[(group, p)] = offset

    @rule(group=st.sampled_from(sorted(GROUPS)), p=st.integers(0, PARTITIONS - 1))
    def offset(self, group: str, p: int) -> None:
        cid, reply = self.call("OFFSET", f"{group} {GROUPS[group]} {p}")
        assert reply == f"V1|{cid}|OK|offset={self.commits.get((group, p), 0)}"

    @rule(group=st.sampled_from(sorted(GROUPS)))
    def sync_everyone(self, group: str) -> None:
        """Every member's share at the current generation: disjoint, covering (V1L-GRP-4)."""
        self.expire()
        g = self.groups.get(group)
        if g is None or not g.members:
            return
        got: list[int] = []
        for m in sorted(g.members):
            reply = self.call("SYNC", f"{group} {GROUPS[group]} {m} {g.generation}")[1]
            assert fields(reply)["generation"] == str(g.generation), reply
            got += int_list(fields(reply)["assigned"])
            g.members[m] = self.t
        assert sorted(got) == list(range(PARTITIONS)), f"{group}: shares {got}"

    @invariant()
    def offsets_are_consecutive(self) -> None:
        for p, part in self.parts.items():
            if part.values:
                reply = self.call("CONSUME", f"{TOPIC} {p} 0")[1]
                items, hw = messages(reply)
                assert [o for o, _ in items] == list(range(hw + 1)), reply


class V1RealMachine(V1Machine):
    revision = "real"


BOUNDED = settings(max_examples=100, stateful_step_count=50, deadline=None)
TestV1Doc = V1Machine.TestCase
TestV1Doc.settings = BOUNDED
TestV1Real = V1RealMachine.TestCase
TestV1Real.settings = BOUNDED


def test_acks_all_waits_on_the_injected_clock() -> None:
    """V1L-REPL-8 on the sans-IO front-end: no follower has reported and no time has passed
    on its clock, so acks=all waits (a pending reply), whatever time.monotonic() says."""
    fe = V1Frontend(Engine(), V1Config(partitions=1))
    fe.clock = lambda: 0.0
    outcome = fe.new_session("x").handle(b"V1|1|PRODUCE|t k:v acks=all")
    assert outcome.replies == [] and outcome.pending is not None, outcome.replies
