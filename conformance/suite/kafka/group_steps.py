"""Group steps of the Kafka cases: find the coordinator, join, sync, heartbeat, leave
(KAF-GROUP-1/2/3).

A :class:`Member` keeps the JoinGroup answer it was made from, so that a case's check on
its generation, member id or leader names that answer's field; SyncGroup, Heartbeat and
LeaveGroup hand back their answers as :class:`~conformance.evidence.Node` trees.

Timing.  A fresh Apache Kafka has no group coordinator until its first FindCoordinator
makes the offsets topic (``KafkaApis.getCoordinator`` answers COORDINATOR_NOT_AVAILABLE
meanwhile) and loads it (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR): so
:func:`coordinator_ready` finds the coordinator once per run, asking again within
:data:`COORDINATOR_WAIT_S`, before the first group request, and :func:`join_group` sends a
join again that such an error refused.  A join may also wait for the join window
(``group.initial.rebalance.delay.ms``, 3 s by default, on a group's first join)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance.evidence import Evidence, Node
from conformance.protocols.kafka.apis import BY_NAME
from conformance.protocols.kafka.errors import CODES
from conformance.suite.case import Violation
from conformance.suite.kafka.verify import (
    KafkaClient,
    advertised,
    expect_code,
    find_partition,
    first,
    usable,
)
from conformance.suite.target import CaseContext

# ------------------------------------------------------------------ groups


PROTOCOL_TYPE = "consumer"

COORDINATOR_WAIT_S = 20.0
"""How long a coordinator that is not ready yet is asked again (Kafka makes and loads its
offsets topic, 50 partitions by default, on the first FindCoordinator)."""

NOT_READY = ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS", "NOT_COORDINATOR")
"""The retriable answers of a group coordinator that is not ready (KAF-CLI-15)."""


def find_coordinator(
    ctx: CaseContext, k: KafkaClient, group: str, *, requirement: str = "KAF-GROUP-1"
) -> Node:
    """FindCoordinator for ``group`` (v4+: its ``coordinators`` entry), asked again while
    the answer is COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS, for
    :data:`COORDINATOR_WAIT_S` at most; the last answer (the caller judges it)."""
    v = usable(ctx, "FindCoordinator")
    body = {"key": group, "key_type": 0, "coordinator_keys": [group]}
    what = f"FindCoordinator v{v} {group}"
    deadline = time.monotonic() + max(COORDINATOR_WAIT_S, ctx.timeout)
    while True:
        reply = k.call("FindCoordinator", v, body, requirement, what)
        entry = first(reply["coordinators"], "coordinator", requirement, what) if v >= 4 else reply
        busy = entry["error_code"] in [CODES[e] for e in NOT_READY]
        if not busy or time.monotonic() >= deadline:
            return entry
        time.sleep(0.2)


def coordinator_ready(ctx: CaseContext, k: KafkaClient, group: str) -> None:
    """Once per run, before the first group request: the target's group coordinator is up
    (:func:`find_coordinator` answers it).  Nothing to do for a target that serves no
    FindCoordinator, or once it answered."""
    facts = ctx.target.facts
    if facts.get("kafka_coordinator_ready") or BY_NAME["FindCoordinator"].key not in advertised(
        ctx
    ):
        return
    entry = find_coordinator(ctx, k, group)
    expect_code(entry, "error_code", "NONE", "KAF-GROUP-1", f"FindCoordinator {group}")
    facts["kafka_coordinator_ready"] = True


@dataclass
class Member:
    group: str
    member_id: str
    generation: int
    leader: str
    members: list[dict[str, Any]]
    joined: Node | None = None
    """The JoinGroup answer the member was made from (the evidence of its fields)."""

    @classmethod
    def of(cls, group: str, reply: Node) -> Member:
        return cls(
            group,
            str(reply["member_id"]),
            int(reply["generation_id"]),
            str(reply["leader"]),
            list(reply["members"]),
            reply,
        )

    def at(self, key: str) -> Evidence:
        """The field ``key`` of the join this member was made from."""
        return self.joined.at(key) if self.joined is not None else Evidence()


def other_generation(m: Member) -> int:
    """A generation the member's group is not at: the one before (a stale member's), or the
    one after when there is none before it (-1 means "no generation" to OffsetCommit)."""
    return m.generation - 1 if m.generation >= 1 else m.generation + 1


def join_body(
    group: str,
    member_id: str = "",
    *,
    session_ms: int = 10_000,
    protocol: str = "range",
    protocol_type: str = PROTOCOL_TYPE,
    metadata: bytes = b"\x00\x01",
    instance: str | None = None,
) -> dict[str, Any]:
    """A JoinGroup body (``instance``: a static member's group instance id, v5+)."""
    return {
        "group_id": group,
        "session_timeout_ms": session_ms,
        "rebalance_timeout_ms": session_ms,
        "member_id": member_id,
        "group_instance_id": instance,
        "protocol_type": protocol_type,
        "protocols": [{"name": protocol, "metadata": metadata}],
        "reason": None,
    }


def join_group(
    ctx: CaseContext,
    k: KafkaClient,
    group: str,
    *,
    version: int | None = None,
    requirement: str = "KAF-GROUP-2",
    timeout: float | None = None,
    **kw: Any,
) -> Member:
    """Join ``group``: from v4, a MEMBER_ID_REQUIRED answer is followed by a join with the
    id it gives (KIP-394); before v4 that answer breaks KAF-GROUP-16 (never absorbed).  The
    answer may wait for the join window (Kafka's ``group.initial.rebalance.delay.ms``, 3 s
    by default, on a group's first join, up to the rebalance timeout): it is awaited for
    the case timeout plus 5 s."""
    v = version if version is not None else usable(ctx, "JoinGroup")
    wait = timeout if timeout is not None else ctx.timeout + 5
    coordinator_ready(ctx, k, group)
    deadline = time.monotonic() + max(COORDINATOR_WAIT_S, ctx.timeout)
    while True:
        what = f"JoinGroup v{v} {group}"
        reply = k.call("JoinGroup", v, join_body(group, **kw), requirement, what, timeout=wait)
        if reply["error_code"] not in [CODES[e] for e in NOT_READY]:
            break
        if time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    reply = member_id_required(ctx, k, v, reply, join_body(group, **kw), requirement, wait)
    expect_code(reply, "error_code", "NONE", requirement, f"JoinGroup v{v} {group}")
    return Member.of(group, reply)


def member_id_required(
    ctx: CaseContext,
    k: KafkaClient,
    version: int,
    reply: Node,
    body: dict[str, Any],
    requirement: str,
    wait: float | None = None,
) -> Node:
    """The answer to a join once MEMBER_ID_REQUIRED is dealt with: from v4 the join is sent
    again with the member id it gives (KAF-GROUP-7); before v4 that answer is a violation
    of KAF-GROUP-16 (Kafka's ``JoinGroupRequest.requiresKnownMemberId`` is v4+), never a
    step to take.  Any other answer is handed back as it is."""
    if reply["error_code"] != CODES["MEMBER_ID_REQUIRED"]:
        return reply
    what = f"JoinGroup v{version} {body.get('group_id')}"
    if version < 4:
        raise Violation(
            "KAF-GROUP-16",
            f"{what}: MEMBER_ID_REQUIRED (79), which JoinGroup v0-3 never answers (KIP-394 "
            "asks for a known member id from v4); expected the join answered with a member id",
            reply.at("error_code"),
        )
    again = {**body, "member_id": str(reply["member_id"])}
    wait = wait if wait is not None else ctx.timeout + 5
    answer: Node = k.call("JoinGroup", version, again, "KAF-GROUP-7", f"{what} again", timeout=wait)
    return answer


def sync_group(
    ctx: CaseContext,
    k: KafkaClient,
    m: Member,
    assignments: Mapping[str, bytes] | None = None,
    *,
    version: int | None = None,
    requirement: str = "KAF-GROUP-3",
    timeout: float | None = None,
    instance: str | None = None,
) -> Node:
    v = version if version is not None else usable(ctx, "SyncGroup")
    body = {
        "group_id": m.group,
        "generation_id": m.generation,
        "member_id": m.member_id,
        "group_instance_id": instance,
        "protocol_type": PROTOCOL_TYPE,
        "protocol_name": "range",
        "assignments": [
            {"member_id": mid, "assignment": a} for mid, a in (assignments or {}).items()
        ],
    }
    wait = timeout if timeout is not None else ctx.timeout + 5
    return k.call("SyncGroup", v, body, requirement, f"SyncGroup v{v} {m.group}", timeout=wait)


def settle(ctx: CaseContext, k: KafkaClient, group: str, **kw: Any) -> Member:
    """A group of one member, joined and synced (the member assigns itself ``b"a"``)."""
    m = join_group(ctx, k, group, **kw)
    reply = sync_group(ctx, k, m, {m.member_id: b"a"})
    expect_code(reply, "error_code", "NONE", "KAF-GROUP-3", f"SyncGroup {group}")
    return m


def heartbeat(
    ctx: CaseContext,
    k: KafkaClient,
    m: Member,
    *,
    generation: int | None = None,
    member_id: str | None = None,
    version: int | None = None,
    requirement: str = "KAF-GROUP-10",
    instance: str | None = None,
) -> Node:
    """Heartbeat; its answer (judge its ``error_code``)."""
    v = version if version is not None else usable(ctx, "Heartbeat")
    body = {
        "group_id": m.group,
        "generation_id": m.generation if generation is None else generation,
        "member_id": m.member_id if member_id is None else member_id,
        "group_instance_id": instance,
    }
    return k.call("Heartbeat", v, body, requirement, f"Heartbeat v{v} {m.group}")


def leave_group(
    ctx: CaseContext,
    k: KafkaClient,
    group: str,
    member_id: str,
    *,
    version: int | None = None,
    requirement: str = "KAF-GROUP-6",
    instance: str | None = None,
) -> Node:
    v = version if version is not None else usable(ctx, "LeaveGroup")
    body: dict[str, Any] = {"group_id": group}
    if v >= 3:
        body["members"] = [{"member_id": member_id, "group_instance_id": instance, "reason": None}]
    else:
        body["member_id"] = member_id
    return k.call("LeaveGroup", v, body, requirement, f"LeaveGroup v{v} {group}")


def commit_body(
    group: str, topic: str, offset: int, metadata: str, *, member_id: str = "", generation: int = -1
) -> dict[str, Any]:
    """An OffsetCommit of ``offset`` for ``topic``/0 (no member and generation -1 unless
    named: a simple commit)."""
    return {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member_id,
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "commit_timestamp": -1,  # v1 only
                        "committed_metadata": metadata,
                    }
                ],
            }
        ],
    }


def offset_fetch_at(
    k: KafkaClient, v: int, group: str, topic: str, requirement: str, stable: bool = False
) -> Node:
    """OffsetFetch v``v`` of ``topic``/0 for ``group`` (``stable``: require_stable, v7+):
    the partition's entry (committed_offset, metadata, error_code)."""
    wanted = [{"name": topic, "partition_indexes": [0]}]
    body = {
        "group_id": group,
        "topics": wanted,
        "require_stable": stable,
        "groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": wanted}],
    }
    what = f"OffsetFetch v{v} {group}"
    reply = k.call("OffsetFetch", v, body, requirement, what)
    topics = (
        first(reply["groups"], "groups[0]", requirement, what)["topics"]
        if v >= 8
        else reply["topics"]
    )
    return find_partition(topics, topic, 0, requirement, what)
