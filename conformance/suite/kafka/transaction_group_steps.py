"""Steps of the transaction cases that commit a group's offsets (SPEC-transactions.md:
KAF-TXN-15, -18, -19, -20, -22): AddOffsetsToTxn, TxnOffsetCommit with or without a
member, and a group of one static member to commit for.

A TxnOffsetCommit names a member from v3 (generation, member id, group instance id); the
form with none (generation -1, member id "", no instance id) is what a producer that is
not a group member sends.  Transactions V1 (AddOffsetsToTxn first, TxnOffsetCommit v0-4)
unless a case says otherwise: v5 is the transactions V2 client's (KIP-890 part 2).
"""

from __future__ import annotations

import time
from typing import Any

from conformance.evidence import Node
from conformance.protocols.kafka.errors import CODES
from conformance.suite.case import require
from conformance.suite.kafka.group_steps import (
    COORDINATOR_WAIT_S,
    NOT_READY,
    Member,
    coordinator_ready,
    join_body,
    sync_group,
)
from conformance.suite.kafka.transaction_steps import WAIT_S, Producer, offset_fetch
from conformance.suite.kafka.verify import KafkaClient, expect_code, first, usable
from conformance.suite.target import CaseContext

V1_HIGHEST = 4
"""The last TxnOffsetCommit version of transactions V1."""


def add_offsets(target: CaseContext, k: KafkaClient, p: Producer, group: str, req: str) -> None:
    """AddOffsetsToTxn of ``group``'s offsets, answering error 0 (asked again while
    CONCURRENT_TRANSACTIONS: an earlier end still writing its markers)."""
    v = usable(target, "AddOffsetsToTxn")
    body = {
        "transactional_id": p.tid,
        "producer_id": p.pid,
        "producer_epoch": p.epoch,
        "group_id": group,
    }
    what = f"AddOffsetsToTxn v{v} {group}"
    deadline = time.monotonic() + WAIT_S
    while True:
        added = k.call("AddOffsetsToTxn", v, body, req, what)
        busy = added["error_code"] == CODES["CONCURRENT_TRANSACTIONS"]
        if not busy or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    expect_code(added, "error_code", "NONE", req, what)


def txn_commit(
    k: KafkaClient,
    p: Producer,
    group: str,
    topic: str,
    offset: int,
    req: str,
    *,
    version: int,
    generation: int = -1,
    member_id: str = "",
    instance: str | None = None,
) -> Node:
    """TxnOffsetCommit v``version`` of ``offset`` for ``topic``/0: the partition's entry."""
    body: dict[str, Any] = {
        "transactional_id": p.tid,
        "group_id": group,
        "producer_id": p.pid,
        "producer_epoch": p.epoch,
        "generation_id": generation,
        "member_id": member_id,
        "group_instance_id": instance,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
                     "committed_metadata": ""}
                ],
            }
        ],
    }  # fmt: skip
    named = (
        f"member {member_id!r}, generation {generation}, instance {instance!r}"
        if version >= 3 and (member_id or generation >= 0 or instance is not None)
        else "no member"
    )
    what = f"TxnOffsetCommit v{version} {group} offset {offset} ({named})"
    reply = k.call("TxnOffsetCommit", version, body, req, what)
    t = first(reply["topics"], "a topic", req, what)
    return first(t["partitions"], "a partition", req, what)


def txn_offsets(
    target: CaseContext,
    k: KafkaClient,
    p: Producer,
    group: str,
    topic: str,
    offset: int,
    req: str = "KAF-TXN-15",
) -> None:
    """AddOffsetsToTxn, then a TxnOffsetCommit with no member, each answering error 0."""
    add_offsets(target, k, p, group, req)
    v = usable(target, "TxnOffsetCommit", highest=V1_HIGHEST)
    got = txn_commit(k, p, group, topic, offset, req, version=v)
    expect_code(got, "error_code", "NONE", req, f"TxnOffsetCommit v{v} {group} offset {offset}")


def static_member(
    target: CaseContext, k: KafkaClient, group: str, instance: str, req: str = "KAF-GROUP-2"
) -> Member:
    """A group of one static member (JoinGroup v5+ with the group instance id
    ``instance``), synced: Stable at the generation its join gave."""
    v = usable(target, "JoinGroup", lowest=5)
    coordinator_ready(target, k, group)
    body = {**join_body(group), "group_instance_id": instance}
    what = f"JoinGroup v{v} {group} (group instance id {instance!r})"
    deadline = time.monotonic() + max(COORDINATOR_WAIT_S, target.timeout)
    while True:
        reply = k.call("JoinGroup", v, body, req, what, timeout=target.timeout + 5)
        if reply["error_code"] not in [CODES[e] for e in NOT_READY]:
            break
        if time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    expect_code(reply, "error_code", "NONE", req, what)
    m = Member.of(group, reply)
    synced = sync_group(target, k, m, {m.member_id: b"a"})
    expect_code(synced, "error_code", "NONE", "KAF-GROUP-3", f"SyncGroup {group}")
    return m


def committed_within(
    target: CaseContext, k: KafkaClient, group: str, topic: str, offset: int, req: str
) -> None:
    """OffsetFetch again until ``group``'s offset for ``topic``/0 is ``offset`` (Kafka
    commits transactional offsets when the marker reaches the offsets partition), within
    WAIT_S; then that offset is required."""
    deadline = time.monotonic() + WAIT_S
    while True:
        got = offset_fetch(target, k, group, topic, req)
        if got["committed_offset"] == offset or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    require(
        got["committed_offset"] == offset,
        req,
        f"OffsetFetch gave {got['committed_offset']} {WAIT_S:.0f} s after the commit, "
        f"expected {offset}",
        got.at("committed_offset"),
    )
