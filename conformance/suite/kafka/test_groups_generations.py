"""Kafka consumer groups (SPEC.md, area "groups"): what a group answers a request that names a
generation or a member it does not have, at every version (SyncGroup, OffsetCommit), and the
JoinGroup versions that never ask for a member id (v0-3).

Every group here is settled first by the group steps at the highest version both sides speak
(:func:`~.group_steps.settle`); the request under test then goes at the version of the case."""

from __future__ import annotations

import dataclasses

from conformance.evidence import Node
from conformance.suite.case import case, require
from conformance.suite.kafka.group_steps import (
    commit_body,
    coordinator_ready,
    join_body,
    member_id_required,
    offset_fetch_at,
    other_generation,
    settle,
    sync_group,
)
from conformance.suite.kafka.steps import create_topic
from conformance.suite.kafka.verify import (
    KafkaClient,
    at_every_version,
    expect_code,
    find_partition,
    need,
    usable,
)
from conformance.suite.shown import show
from conformance.suite.target import CaseContext


@case("kafka/groups/15", "KAF-GROUP-14")
@at_every_version("SyncGroup")
def test_a_sync_with_a_stale_generation_or_an_unknown_member_is_refused(
    target: CaseContext, version: int
) -> None:
    """A SyncGroup with a generation other than the group's is ILLEGAL_GENERATION (22); one
    from a member the group does not have is UNKNOWN_MEMBER_ID (25).

    KAF-GROUP-14: "a SyncGroup, at every version, from a member the group does not have (of a group
    that does not exist, or has no members, too) is answered UNKNOWN_MEMBER_ID (25) at once; from a
    member of the group with a generation other than the group's, ILLEGAL_GENERATION (22)."
    """
    need(target, "SyncGroup", version)
    group = target.name("g")
    with KafkaClient(target) as k:
        m = settle(target, k, group)
        stale = dataclasses.replace(m, generation=other_generation(m))
        what = f"SyncGroup v{version} with generation {stale.generation} (the group's is "
        what += f"{m.generation})"
        got = sync_group(target, k, stale, version=version, requirement="KAF-GROUP-14")
        expect_code(got, "error_code", "ILLEGAL_GENERATION", "KAF-GROUP-14", what)
        stranger = dataclasses.replace(m, member_id="nobody")
        what = f"SyncGroup v{version} from member 'nobody'"
        got = sync_group(target, k, stranger, version=version, requirement="KAF-GROUP-14")
        expect_code(got, "error_code", "UNKNOWN_MEMBER_ID", "KAF-GROUP-14", what)


def _commit(
    target: CaseContext,
    k: KafkaClient,
    version: int,
    group: str,
    topic: str,
    member_id: str,
    generation: int,
) -> Node:
    """OffsetCommit of offset 1 of ``topic``/0 by ``member_id`` at ``generation``: the
    partition's answer."""
    body = commit_body(group, topic, 1, "", member_id=member_id, generation=generation)
    what = f"OffsetCommit v{version} {group} by {show(member_id)} at generation {generation}"
    reply = k.call("OffsetCommit", version, body, "KAF-GROUP-15", what)
    return find_partition(reply["topics"], topic, 0, "KAF-GROUP-15", what)


@case("kafka/groups/16", "KAF-GROUP-15")
@at_every_version("OffsetCommit", since=1)
def test_a_commit_with_a_stale_generation_or_an_unknown_member_is_refused(
    target: CaseContext, version: int
) -> None:
    """An OffsetCommit from a stale generation, an unknown member or to a group never made is
    refused, and nothing of it is stored.

    KAF-GROUP-15: "an OffsetCommit (v1 or later) that names a member id or a generation of 0 or
    more is checked against the group before anything is stored: a member the group does not have
    is UNKNOWN_MEMBER_ID (25) for every partition, a member with a generation other than the
    group's ILLEGAL_GENERATION (22); a group that does not exist, with a generation of 0 or more,
    ILLEGAL_GENERATION (22) (from v9 GROUP_ID_NOT_FOUND (69) is also Kafka's answer)."
    """
    need(target, "OffsetCommit", version)
    group, ghost = target.name("g"), target.name("ghost")
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "commits")
        m = settle(target, k, group)
        stale = other_generation(m)
        got = _commit(target, k, version, group, topic, m.member_id, stale)
        what = f"OffsetCommit v{version} at generation {stale} (the group's is "
        expect_code(
            got, "error_code", "ILLEGAL_GENERATION", "KAF-GROUP-15", what + f"{m.generation})"
        )
        got = _commit(target, k, version, group, topic, "nobody", m.generation)
        what = f"OffsetCommit v{version} from member 'nobody'"
        expect_code(got, "error_code", "UNKNOWN_MEMBER_ID", "KAF-GROUP-15", what)
        got = _commit(target, k, version, ghost, topic, "nobody", 1)
        want = ["ILLEGAL_GENERATION"] + (["GROUP_ID_NOT_FOUND"] if version >= 9 else [])
        what = f"OffsetCommit v{version} at generation 1 to group {ghost}, never made"
        expect_code(got, "error_code", want, "KAF-GROUP-15", what)
        stored = _committed(target, k, group, topic)
    require(
        stored["committed_offset"] == -1,
        "KAF-GROUP-15",
        f"OffsetFetch of {group} after the refused commits: offset {stored['committed_offset']}, "
        "expected -1 (nothing committed)",
        stored.at("committed_offset"),
    )


def _committed(target: CaseContext, k: KafkaClient, group: str, topic: str) -> Node:
    """OffsetFetch of ``topic``/0 for ``group``: the partition's entry."""
    return offset_fetch_at(k, usable(target, "OffsetFetch"), group, topic, "KAF-GROUP-15")


@case("kafka/groups/17", "KAF-GROUP-16")
@at_every_version("JoinGroup", until=3)
def test_join_group_before_v4_never_asks_for_a_member_id(target: CaseContext, version: int) -> None:
    """JoinGroup v0-3 with an empty member id is answered with the member's id, never
    MEMBER_ID_REQUIRED (79).

    KAF-GROUP-16: "JoinGroup v0-3 is never answered MEMBER_ID_REQUIRED (79): a new member joining
    with an empty member id is given its member id in the answer that ends its join."
    """
    need(target, "JoinGroup", version)
    group = target.name("g")
    body = join_body(group)
    what = f"JoinGroup v{version} {group} with an empty member id"
    with KafkaClient(target) as k:
        coordinator_ready(target, k, group)
        reply = k.call("JoinGroup", version, body, "KAF-GROUP-16", what, timeout=target.timeout + 5)
        reply = member_id_required(target, k, version, reply, body, "KAF-GROUP-16")
    expect_code(reply, "error_code", "NONE", "KAF-GROUP-16", what)
    require(
        reply["member_id"],
        "KAF-GROUP-16",
        f"{what}: answered error 0 with an empty member id, expected the id it was given",
        reply.at("member_id"),
    )
