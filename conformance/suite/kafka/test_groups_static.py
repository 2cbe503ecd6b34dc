"""Kafka consumer groups (SPEC.md, area "groups"): static members (KIP-345), members that
name a group instance id.  A static member that restarts takes its old place without a
rebalance; a request naming a group instance id with a member id other than the one that
holds it is fenced.

Every static member here is the only member of its group, so it leads: what a replaced
leader is told depends on the JoinGroup version (v9 added ``skip_assignment``)."""

from __future__ import annotations

from conformance.evidence import Node
from conformance.suite.case import case, require
from conformance.suite.kafka.group_steps import (
    Member,
    commit_body,
    heartbeat,
    join_body,
    join_group,
    leave_group,
    sync_group,
)
from conformance.suite.kafka.steps import create_topic
from conformance.suite.kafka.verify import (
    KafkaClient,
    at_every_version,
    expect_code,
    find,
    find_partition,
    first,
    need,
    usable,
)
from conformance.suite.shown import show, show_all
from conformance.suite.target import CaseContext

REPLACED = "KAF-GROUP-17"
FENCED = "KAF-GROUP-18"


def _static_member(
    target: CaseContext, k: KafkaClient, group: str, instance: str, version: int, req: str
) -> Member:
    """``group`` settled with one static member (``instance``), joined at JoinGroup
    v``version`` and assigned ``b"a"`` by itself."""
    m = join_group(target, k, group, version=version, requirement=req, instance=instance)
    sv = usable(target, "SyncGroup", lowest=3)
    got = sync_group(
        target, k, m, {m.member_id: b"a"}, version=sv, requirement=req, instance=instance
    )
    expect_code(got, "error_code", "NONE", req, f"SyncGroup v{sv} of static member {instance}")
    return m


def _described(target: CaseContext, k: KafkaClient, group: str, req: str) -> Node:
    dv = usable(target, "DescribeGroups")
    what = f"DescribeGroups v{dv} {group}"
    groups = k.call("DescribeGroups", dv, {"groups": [group]}, req, what)["groups"]
    return find(groups, "group_id", group, f"group {group}", req, what)


@case("kafka/groups/18", REPLACED)
@at_every_version("JoinGroup", since=5)
def test_a_restarted_static_member_takes_its_old_place_without_a_rebalance(
    target: CaseContext, version: int
) -> None:
    """A static member joining again with an empty member id gets a new member id at the
    same generation and keeps its assignment; nothing rebalances.

    KAF-GROUP-17: "a static member (a JoinGroup, v5 or later, with a group instance id) that joins
    again with an empty member id while its group is Stable, with the same protocols, takes its old
    place without a rebalance: the join is answered at once with error 0, the group's current
    generation and a new member id; the group stays Stable at that generation with the new member
    id in place of the old one, and a SyncGroup from the new member id at that generation is
    answered with the assignment the old one had. A replaced leader is told from JoinGroup v9 that
    it leads (the leader is its new member id, every member is listed, skip_assignment is true);
    before v9 the leader named is its old member id and no member is listed."
    """
    need(target, "JoinGroup", version)
    group, instance = target.name("g"), target.name("static")
    what = f"JoinGroup v{version} of static member {instance} again, member id ''"
    with KafkaClient(target) as k:
        old = _static_member(target, k, group, instance, version, REPLACED)
        body = join_body(group, instance=instance)
        r = k.call("JoinGroup", version, body, REPLACED, what, timeout=target.timeout + 5)
        expect_code(r, "error_code", "NONE", REPLACED, what)
        new = Member.of(group, r)
        require(
            new.generation == old.generation,
            REPLACED,
            f"{what}: generation {new.generation}, expected {old.generation} (no rebalance)",
            new.at("generation_id"),
        )
        require(
            new.member_id not in ("", old.member_id),
            REPLACED,
            f"{what}: member id {show(new.member_id)}, expected a new one (not "
            f"{show(old.member_id)})",
            new.at("member_id"),
        )
        _check_leader(r, version, old, new, what)
        sv = usable(target, "SyncGroup", lowest=3)
        synced = sync_group(target, k, new, {}, version=sv, requirement=REPLACED, instance=instance)
        swhat = f"SyncGroup v{sv} of the new member id at generation {new.generation}"
        expect_code(synced, "error_code", "NONE", REPLACED, swhat)
        require(
            synced["assignment"] == b"a",
            REPLACED,
            f"{swhat}: assignment {show(synced['assignment'])}, expected b'a' (the old one's)",
            synced.at("assignment"),
        )
        hv = usable(target, "Heartbeat", lowest=3)
        beat = heartbeat(target, k, new, version=hv, requirement=REPLACED, instance=instance)
        hwhat = f"Heartbeat v{hv} of the new member id at generation {new.generation}"
        expect_code(beat, "error_code", "NONE", REPLACED, hwhat + " (no rebalance under way)")
        described = _described(target, k, group, REPLACED)
    # the state itself is KAF-GROUP-12's to judge: the members are this one's
    ids = [m["member_id"] for m in described["members"]]
    require(
        ids == [new.member_id],
        REPLACED,
        f"DescribeGroups after the join: members {show_all(ids)}; expected "
        f"{show(new.member_id)} alone, in place of {show(old.member_id)}",
        described["members"].at(),
    )


def _check_leader(r: Node, version: int, old: Member, new: Member, what: str) -> None:
    """What the replaced leader is told (KAF-GROUP-17's last sentence)."""
    listed = [m["member_id"] for m in r["members"]]
    if version >= 9:
        require(
            r["leader"] == new.member_id and bool(r["skip_assignment"]),
            REPLACED,
            f"{what}: leader {show(r['leader'])}, skip_assignment {r['skip_assignment']}; "
            f"expected {show(new.member_id)} (its new id) and true",
            r.at("leader") + r.at("skip_assignment"),
        )
        require(
            listed == [new.member_id],
            REPLACED,
            f"{what}: members {show_all(listed)}, expected {show(new.member_id)} (every member)",
            r["members"].at(),
        )
        return
    require(
        r["leader"] == old.member_id and not listed,
        REPLACED,
        f"{what}: leader {show(r['leader'])}, members {show_all(listed)}; expected "
        f"{show(old.member_id)} (the leader before the replacement) and none, as before v9",
        r.at("leader") + r["members"].at(),
    )


@case("kafka/groups/19", FENCED)
def test_a_stale_member_id_of_a_static_member_is_fenced(target: CaseContext) -> None:
    """JoinGroup, SyncGroup, Heartbeat, OffsetCommit and LeaveGroup naming a static member's
    group instance id with another member id are FENCED_INSTANCE_ID (82); the static member
    stays.

    KAF-GROUP-18: "a JoinGroup (v5 or later), SyncGroup (v3 or later), Heartbeat (v3 or later),
    OffsetCommit (v7 or later) or LeaveGroup member (v3 or later) that names a group instance id
    held in the group by another member id is answered FENCED_INSTANCE_ID (82) (per partition in
    OffsetCommit, per member in LeaveGroup) and changes nothing: the member that holds the
    instance id stays, and its heartbeat is still answered with error 0."
    """
    jv = usable(target, "JoinGroup", lowest=5)
    sv, hv = usable(target, "SyncGroup", lowest=3), usable(target, "Heartbeat", lowest=3)
    lv = usable(target, "LeaveGroup", lowest=3)
    cv = usable(target, "OffsetCommit", lowest=7)
    group, instance = target.name("g"), target.name("static")
    stale = f"{instance}-stale"
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "fenced")
        m = _static_member(target, k, group, instance, jv, FENCED)
        ghost = Member(group, stale, m.generation, m.leader, [])
        body = join_body(group, stale, instance=instance)
        what = f"JoinGroup v{jv} as {instance} with member id {show(stale)}"
        got = k.call("JoinGroup", jv, body, FENCED, what, timeout=target.timeout + 5)
        expect_code(got, "error_code", "FENCED_INSTANCE_ID", FENCED, what)
        got = sync_group(target, k, ghost, {}, version=sv, requirement=FENCED, instance=instance)
        what = f"SyncGroup v{sv} as {instance} with member id {show(stale)}"
        expect_code(got, "error_code", "FENCED_INSTANCE_ID", FENCED, what)
        got = heartbeat(target, k, ghost, version=hv, requirement=FENCED, instance=instance)
        what = f"Heartbeat v{hv} as {instance} with member id {show(stale)}"
        expect_code(got, "error_code", "FENCED_INSTANCE_ID", FENCED, what)
        body = commit_body(group, topic, 0, "", member_id=stale, generation=m.generation)
        body["group_instance_id"] = instance
        what = f"OffsetCommit v{cv} as {instance} with member id {show(stale)}"
        got = k.call("OffsetCommit", cv, body, FENCED, what)
        part = find_partition(got["topics"], topic, 0, FENCED, what)
        expect_code(part, "error_code", "FENCED_INSTANCE_ID", FENCED, what)
        got = leave_group(
            target, k, group, stale, version=lv, requirement=FENCED, instance=instance
        )
        what = f"LeaveGroup v{lv} of {instance} with member id {show(stale)}"
        entry = first(got["members"], "member", FENCED, what)
        expect_code(entry, "error_code", "FENCED_INSTANCE_ID", FENCED, what)
        got = heartbeat(target, k, m, version=hv, requirement=FENCED, instance=instance)
        what = f"Heartbeat v{hv} of static member {instance} after the fenced requests"
        expect_code(got, "error_code", "NONE", FENCED, what)
