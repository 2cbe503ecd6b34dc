"""Steps of the KIP-848 consumer group cases (SPEC-consumer-groups.md): join, heartbeat
as a consumer does (its epoch and the partitions it owns), leave, and heartbeat a set of
members again until a condition holds or a deadline passes.

A :class:`CMember` keeps what the broker last told it: its member id and epoch, and the
partitions it owns (the last assignment answered, applied at once, as a consumer that
revokes at once does).  Kafka promises no number of heartbeats for an assignment to
arrive, so :func:`until` heartbeats every member again, a few times a second, up to a
deadline; a condition still false then is the violation, shown on the last answers."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.evidence import Evidence, Node, combined
from conformance.suite.case import Violation, require
from conformance.suite.kafka.verify import KafkaClient, expect_code, usable
from conformance.suite.target import CaseContext

HEARTBEAT = "ConsumerGroupHeartbeat"
ROUND_PAUSE_S = 0.2
SETTLE_S = 20.0
"""How long the members heartbeat for an assignment to settle (Kafka computes it at the
heartbeat that changed the group; a broker may batch it)."""


@dataclass
class CMember:
    group: str
    member_id: str
    epoch: int
    version: int
    owned: dict[str, set[int]] = field(default_factory=dict)
    instance_id: str | None = None
    previous: int = 0
    """The epoch the member had before its current one (as the answers showed it)."""
    last: Node | None = None
    """The last heartbeat answer (the evidence of the fields above)."""

    def partitions(self) -> set[tuple[str, int]]:
        return {(t, p) for t, ps in self.owned.items() for p in ps}

    def wire(self) -> list[dict[str, Any]]:
        return [{"topic_id": t, "partitions": sorted(ps)} for t, ps in sorted(self.owned.items())]

    def at(self, key: str) -> Evidence:
        return self.last.at(key) if self.last is not None else Evidence()


def version_of(ctx: CaseContext) -> int:
    return usable(ctx, HEARTBEAT)


def join_body(
    group: str,
    topics: Sequence[str],
    version: int,
    *,
    member_id: str | None = None,
    instance_id: str | None = None,
    assignor: str | None = None,
) -> dict[str, Any]:
    if member_id is None:
        member_id = str(uuid.uuid4()) if version >= 1 else ""
    return {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": 0,
        "instance_id": instance_id,
        "rebalance_timeout_ms": 30_000,
        "subscribed_topic_names": list(topics),
        "server_assignor": assignor,
        "topic_partitions": [],
    }


def call(k: KafkaClient, version: int, body: dict[str, Any], requirement: str, what: str) -> Node:
    return k.call(
        HEARTBEAT, version, body, requirement, f"{what} (ConsumerGroupHeartbeat v{version})"
    )


def join(
    ctx: CaseContext,
    k: KafkaClient,
    group: str,
    topics: Sequence[str],
    requirement: str,
    what: str = "join",
    **kw: Any,
) -> CMember:
    """A member joined (error 0 checked, blamed on ``requirement``)."""
    version = version_of(ctx)
    body = join_body(group, topics, version, **kw)
    r = call(k, version, body, requirement, what)
    expect_code(r, "error_code", "NONE", requirement, what)
    m = CMember(group, str(r["member_id"] or body["member_id"]), int(r["member_epoch"]), version)
    m.instance_id = body["instance_id"]
    _apply(m, r)
    return m


def _apply(m: CMember, r: Node) -> None:
    m.last = r
    if r["error_code"] != 0:
        return
    if int(r["member_epoch"]) != m.epoch:
        m.previous, m.epoch = m.epoch, int(r["member_epoch"])
    if r["assignment"] is not None:
        m.owned = {
            str(tp["topic_id"]): set(tp["partitions"])
            for tp in r["assignment"]["topic_partitions"]
            if tp["partitions"]
        }


def beat(k: KafkaClient, m: CMember, requirement: str, what: str = "heartbeat") -> Node:
    """One heartbeat with the member's epoch and owned partitions; error 0 is required."""
    body = {
        "group_id": m.group,
        "member_id": m.member_id,
        "member_epoch": m.epoch,
        "instance_id": m.instance_id,
        "topic_partitions": m.wire(),
    }
    r = call(k, m.version, body, requirement, what)
    expect_code(r, "error_code", "NONE", requirement, f"{what} of member {m.member_id}")
    _apply(m, r)
    return r


def leave(
    k: KafkaClient, m: CMember, requirement: str, epoch: int = -1, what: str = "leave"
) -> Node:
    body = {
        "group_id": m.group,
        "member_id": m.member_id,
        "member_epoch": epoch,
        "instance_id": m.instance_id,
    }
    return call(k, m.version, body, requirement, what)


Check = Callable[[Sequence[CMember]], bool]


def all_of(topic: str, count: int) -> set[tuple[str, int]]:
    """Partitions 0..count-1 of the topic (its id), as :meth:`CMember.partitions` names them."""
    return {(topic, p) for p in range(count)}


def owns_all(topic: str, count: int) -> Check:
    """A :data:`Check` for :func:`until`: the first member owns every partition of the topic."""
    return lambda ms: ms[0].partitions() == all_of(topic, count)


def until(
    members: Sequence[tuple[KafkaClient, CMember]],
    done: Check,
    requirement: str,
    expected: str,
    *,
    deadline_s: float = SETTLE_S,
    each: Callable[[Sequence[CMember]], None] | None = None,
) -> None:
    """Heartbeat every member, round after round, until ``done``; ``each`` checks every
    round's state (an invariant).  Not done by the deadline: a violation, shown on each
    member's last answer."""
    ms = [m for _, m in members]
    end = time.monotonic() + deadline_s
    while True:
        for k, m in members:
            beat(k, m, requirement)
            if each is not None:
                each(ms)
        if done(ms):
            return
        if time.monotonic() > end:
            state = "; ".join(f"{m.member_id}: epoch {m.epoch}, owns {_show(m)}" for m in ms)
            raise Violation(
                requirement,
                f"after {deadline_s:.0f} s of heartbeats: {state}; expected {expected}",
                combined(m.at("assignment") for m in ms),
            )
        time.sleep(ROUND_PAUSE_S)


def _show(m: CMember) -> str:
    parts = sorted(p for _, p in m.partitions())
    return "[" + " ".join(str(p) for p in parts) + "]"


def no_overlap(requirement: str) -> Callable[[Sequence[CMember]], None]:
    """An invariant for :func:`until`: no partition is owned by two members at once."""

    def check(ms: Sequence[CMember]) -> None:
        for i, a in enumerate(ms):
            for b in ms[i + 1 :]:
                both = a.partitions() & b.partitions()
                require(
                    not both,
                    requirement,
                    f"partition(s) {sorted(p for _, p in both)} assigned to {a.member_id} and "
                    f"{b.member_id} at once; expected one owner at a time",
                    combined([a.at("assignment"), b.at("assignment")]),
                )

    return check
