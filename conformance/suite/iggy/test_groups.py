"""Iggy consumer groups: create, list, join, leave, delete, and polling as a member
(SPEC.md, area "groups")."""

from __future__ import annotations

import time

from conformance.client import Connection
from conformance.suite.case import case, require
from conformance.suite.iggy.steps import (
    GROUP,
    OFFSET,
    create_group,
    get_group,
    group_body,
    ident,
    join,
    members,
    message,
    partitions_held,
    poll_body,
    send_messages,
    stream_topic,
    to_partition,
)
from conformance.suite.iggy.verify import (
    Reply,
    call,
    classic,
    expect_empty,
    expect_found,
    expect_ok,
    expect_status,
    require_ok,
)
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext

UNKNOWN = 4_000_000_000


@case("iggy/groups/1", "IGG-GROUP-1")
def test_create_group_answers_an_empty_group_and_refuses_a_duplicate(target: CaseContext) -> None:
    """CREATE_CONSUMER_GROUP answers an empty group; its name (doc: id) again is answered 5004.

    IGG-GROUP-1: "CREATE_CONSUMER_GROUP (602) is answered with the new group's record: its id,
    the topic's partitions count, 0 members, its name ... A name in use in the topic (in doc: an
    id in use) is answered with status 5004 (ConsumerGroupNameAlreadyExists)."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "newgroup", 2)
        gid, reply = create_group(target, conn, sid, tid, "newgroup")
        require(
            reply.body is not None
            and reply.body["members_count"] == 0
            and not reply.body["members"],
            "IGG-GROUP-1",
            "CREATE_CONSUMER_GROUP answered a group with members, expected none"
            if reply.body is not None
            else "CREATE_CONSUMER_GROUP answered an empty reply, expected the group",
            reply.at("members_count", "members"),
        )
        want_name = str(reply.body["name"]) if classic(target) else str(gid)
        require(
            (reply.body["id"], reply.body["partitions_count"], reply.body["name"])
            == (gid, 2, want_name),
            "IGG-GROUP-1",
            f"CREATE_CONSUMER_GROUP answered group {reply.body['id']} with partitions_count"
            f" {reply.body['partitions_count']} named '{reply.body['name']}', expected {gid}, 2,"
            f" '{want_name}'",
            reply.at("id", "partitions_count", "name"),
        )
        if classic(target):
            again = {"stream": ident(sid), "topic": ident(tid), "name": str(reply.body["name"])}
        else:
            again = group_body(target, sid, tid, gid)
        expect_status(
            target, conn, "create_consumer_group", again, 5004, "IGG-GROUP-1",
            "CREATE_CONSUMER_GROUP of a group that exists",
        )  # fmt: skip


@case("iggy/groups/2", "IGG-GROUP-2")
def test_get_group_answers_the_group_and_its_members(target: CaseContext) -> None:
    """GET_CONSUMER_GROUP lists the first member as id 0 with both partitions, a second as id 1;
    an unknown group is answered empty.

    IGG-GROUP-2: "GET_CONSUMER_GROUP (600) is answered with the Group record followed by one
    Member record per member (member id, partitions count, its partition ids); a member's id is
    numbered within its group: a joining member gets one more than the highest id among the
    group's members, 0 when the group has none; it is not the client id. For a group that does
    not exist the reply is status 0 with an empty payload."
    """
    with target.connect() as one, target.connect() as two:
        sid, tid = stream_topic(target, one, "getgroup", 2)
        gid, _ = create_group(target, one, sid, tid, "getgroup")
        join(target, one, sid, tid, gid, "IGG-GROUP-2")
        got = get_group(target, one, sid, tid, gid)
        require(
            got.body is not None,
            "IGG-GROUP-2",
            f"GET_CONSUMER_GROUP {gid} answered an empty reply, expected the group",
            got.at("status"),
        )
        listed = members(got)
        require(
            got.body["id"] == gid and listed == [(0, [0, 1])],
            "IGG-GROUP-2",
            f"GET_CONSUMER_GROUP {gid} after one join answered group {got.body['id']} with"
            f" members {show_members(listed)}, expected {gid} with member 0 holding 0, 1",
            got.at("id", "members_count", "members"),
        )
        join(target, two, sid, tid, gid, "IGG-GROUP-2")
        again = get_group(target, one, sid, tid, gid)
        ids = sorted(m for m, _ in members(again))
        require(
            ids == [0, 1],
            "IGG-GROUP-2",
            f"after a second join GET_CONSUMER_GROUP {gid} lists member ids {show_all(ids)},"
            " expected 0, 1",
            again.at("members_count", "members"),
        )
        expect_empty(
            target, one, "get_consumer_group", group_body(target, sid, tid, UNKNOWN),
            "IGG-GROUP-2",
            f"GET_CONSUMER_GROUP {UNKNOWN} (no such group)",
        )  # fmt: skip


@case("iggy/groups/3", "IGG-GROUP-3")
def test_get_groups_lists_the_topics_groups_once_each(target: CaseContext) -> None:
    """GET_CONSUMER_GROUPS lists each of a topic's two groups exactly once.

    IGG-GROUP-3: "GET_CONSUMER_GROUPS (601; stream, topic) is answered with one Group record per
    group of the topic, each exactly once."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "groups")
        a, _ = create_group(target, conn, sid, tid, "groups-a")
        b, _ = create_group(target, conn, sid, tid, "groups-b")
        body = {"stream": ident(sid), "topic": ident(tid)}
        listed = expect_ok(
            target, conn, "get_consumer_groups", body, "IGG-GROUP-3", "GET_CONSUMER_GROUPS"
        )
        ids = sorted(int(g["id"]) for g in listed.body["groups"])
        require(
            ids == sorted([a, b]),
            "IGG-GROUP-3",
            f"GET_CONSUMER_GROUPS lists groups {show_all(ids)},"
            f" expected {show_all(sorted([a, b]))}",
            listed.at("groups"),
        )


def two_listed(got: Reply) -> list[tuple[int, list[int]]]:
    """The members GET_CONSUMER_GROUP lists after two connections joined: two (IGG-GROUP-4)."""
    listed = members(got)
    require(
        len(listed) == 2,
        "IGG-GROUP-4",
        f"after two joins the group lists {len(listed)} member(s), expected 2",
        got.at("members_count", "members"),
    )
    return listed


@case("iggy/groups/4", "IGG-GROUP-4")
def test_joined_members_share_the_partitions_disjointly(target: CaseContext) -> None:
    """Two members on 4 partitions hold disjoint lists that together cover each partition once.

    IGG-GROUP-4: "JOIN_CONSUMER_GROUP (604) is answered with status 0 and an empty payload and
    makes the connection a member (listed by GET_CONSUMER_GROUP); at every point while the group
    has members, each partition of the topic is in the list of exactly one member, so no
    partition is in two members' lists."
    """
    with target.connect() as one, target.connect() as two:
        sid, tid = stream_topic(target, one, "deal", 4)
        gid, _ = create_group(target, one, sid, tid, "deal")
        join(target, one, sid, tid, gid)
        join(target, two, sid, tid, gid)
        got = expect_found(
            target, one, "get_consumer_group", group_body(target, sid, tid, gid), "IGG-GROUP-4",
            f"GET_CONSUMER_GROUP {gid} after two joins",
        )  # fmt: skip
        two_listed(got)
        dealt = partitions_held(got)
        require(
            dealt == [0, 1, 2, 3],
            "IGG-GROUP-4",
            f"the members hold partitions {show_all(dealt)}, expected 0, 1, 2, 3 once each",
            got.at("members"),
        )


@case("iggy/groups/5", "IGG-GROUP-5")
def test_leave_hands_the_partitions_to_the_others(target: CaseContext) -> None:
    """After one of two members leaves, one member is listed, holding partitions 0..3; a
    non-member's leave is answered 5006.

    IGG-GROUP-5: "LEAVE_CONSUMER_GROUP (605) by a member is answered with status 0 and an empty
    payload and removes it; its partitions are dealt to the remaining members (each partition
    again in exactly one list); a connection that is not a member is answered with status 5006
    (ConsumerGroupMemberNotFound)."
    """
    with target.connect() as one, target.connect() as two:
        sid, tid = stream_topic(target, one, "leave", 4)
        gid, _ = create_group(target, one, sid, tid, "leave")
        join(target, one, sid, tid, gid, "IGG-GROUP-5")
        join(target, two, sid, tid, gid, "IGG-GROUP-5")
        body = group_body(target, sid, tid, gid)
        expect_empty(
            target, two, "leave_consumer_group", body, "IGG-GROUP-5", "LEAVE_CONSUMER_GROUP"
        )
        got = expect_found(
            target, one, "get_consumer_group", body, "IGG-GROUP-5", "GET_CONSUMER_GROUP after it"
        )
        listed = members(got)
        require(
            len(listed) == 1 and partitions_held(got) == [0, 1, 2, 3],
            "IGG-GROUP-5",
            f"after one of two members left the group lists {show_members(listed)},"
            " expected one member holding 0, 1, 2, 3",
            got.at("members_count", "members"),
        )
        expect_status(
            target,
            two,
            "leave_consumer_group",
            body,
            5006,
            "IGG-GROUP-5",
            "LEAVE_CONSUMER_GROUP again",
        )


@case("iggy/groups/6", "IGG-GROUP-6")
def test_delete_group_removes_it(target: CaseContext) -> None:
    """DELETE_CONSUMER_GROUP removes the group; deleting it again is answered 5000.

    IGG-GROUP-6: "DELETE_CONSUMER_GROUP (603) is answered with status 0 and an empty payload and
    removes the group (GET_CONSUMER_GROUP then answers empty); a group that does not exist is
    answered with status 5000 (ConsumerGroupIdNotFound)."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "delgroup")
        gid, _ = create_group(target, conn, sid, tid, "delgroup")
        body = group_body(target, sid, tid, gid)
        expect_empty(
            target, conn, "delete_consumer_group", body, "IGG-GROUP-6", "DELETE_CONSUMER_GROUP"
        )
        expect_empty(
            target, conn, "get_consumer_group", body, "IGG-GROUP-6", "GET_CONSUMER_GROUP after it"
        )
        expect_status(
            target,
            conn,
            "delete_consumer_group",
            body,
            5000,
            "IGG-GROUP-6",
            "DELETE_CONSUMER_GROUP again",
        )


@case("iggy/groups/7", "IGG-GROUP-7")
def test_joining_an_unknown_group_is_answered_5000(target: CaseContext) -> None:
    """JOIN_CONSUMER_GROUP of a group that does not exist is answered 5000.

    IGG-GROUP-7: "JOIN_CONSUMER_GROUP naming a group that does not exist is answered with status
    5000 (an unknown topic 2010, an unknown stream 1009)."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "nojoin")
        expect_status(
            target, conn, "join_consumer_group", group_body(target, sid, tid, UNKNOWN), 5000,
            "IGG-GROUP-7", f"JOIN_CONSUMER_GROUP {UNKNOWN}",
        )  # fmt: skip
        for body, status, what in (
            (group_body(target, sid, UNKNOWN, 0), 2010, f"JOIN_CONSUMER_GROUP in topic {UNKNOWN}"),
            (group_body(target, UNKNOWN, tid, 0), 1009, f"JOIN_CONSUMER_GROUP in stream {UNKNOWN}"),
        ):
            expect_status(target, conn, "join_consumer_group", body, status, "IGG-GROUP-7", what)


def polled_partitions(
    ctx: CaseContext, conn: Connection, sid: int, tid: int, gid: int, who: str
) -> set[int]:
    """The partitions of two group polls without a partition that returned messages."""
    seen: set[int] = set()
    for _ in range(2):
        body = poll_body(ctx, sid, tid, None, OFFSET, 0, 10, cid=gid, kind=GROUP)
        what = f"{who}'s poll as group {gid} without a partition"
        reply = call(ctx, conn, "poll_messages", body, "IGG-GROUP-8", what, require_ok)
        if reply.body is not None and reply.body["messages"]:
            seen.add(int(reply.body["partition_id"]))
    return seen


@case("iggy/groups/8", "IGG-GROUP-8")
def test_a_member_polls_only_its_partitions(target: CaseContext) -> None:
    """Two members polling with no partition each read only the partitions of one listed
    member, not the same one; a non-member gets 5006.

    IGG-GROUP-8: "a member polling as the group (Consumer kind 2 with the group's id) without
    naming a partition receives only messages of partitions in its own list; a connection that
    is not a member of the group is answered with status 5006 ..."
    """
    with target.connect() as one, target.connect() as two, target.connect() as outsider:
        sid, tid = stream_topic(target, one, "memberpoll", 2)
        for pid in range(2):
            send_messages(
                target, one, sid, tid, to_partition(pid), [message(target, f"p{pid}".encode())]
            )
        gid, _ = create_group(target, one, sid, tid, "memberpoll")
        join(target, one, sid, tid, gid, "IGG-GROUP-8")
        join(target, two, sid, tid, gid, "IGG-GROUP-8")
        got = get_group(target, one, sid, tid, gid, "IGG-GROUP-8")
        listed = two_listed(got)
        seen = [polled_partitions(target, c, sid, tid, gid, w) for c, w in ((one, "A"), (two, "B"))]
        # a connection's member is a listed member whose list holds every partition it polled;
        # the two connections must be two different members
        fits = [[i for i, (_, parts) in enumerate(listed) if s <= set(parts)] for s in seen]
        paired = any(a != b for a in fits[0] for b in fits[1])
        require(
            paired,
            "IGG-GROUP-8",
            f"connection A polled partitions {show_all(sorted(seen[0]))} and B"
            f" {show_all(sorted(seen[1]))}, but the group lists {show_members(listed)}: no two"
            " different members hold them",
            got.at("members"),
        )
        body = poll_body(target, sid, tid, 0, OFFSET, 0, 10, cid=gid, kind=GROUP)
        expect_status(
            target, outsider, "poll_messages", body, 5006, "IGG-GROUP-8", "a non-member's poll"
        )


@case("iggy/groups/9", "IGG-GROUP-9")
def test_a_member_whose_connection_ends_leaves(target: CaseContext) -> None:
    """When one of two members' connection closes, the group lists one member, holding both
    partitions.

    IGG-GROUP-9: "when a member's connection ends, it leaves the group: GET_CONSUMER_GROUP no
    longer lists it and its partitions are dealt to the remaining members."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "closed", 2)
        gid, _ = create_group(target, conn, sid, tid, "closed")
        join(target, conn, sid, tid, gid, "IGG-GROUP-9")
        gone = target.connect()
        join(target, gone, sid, tid, gid, "IGG-GROUP-9")
        gone.close()
        deadline = time.monotonic() + target.timeout
        while True:
            got = get_group(target, conn, sid, tid, gid, "IGG-GROUP-9")
            listed = members(got)
            if len(listed) == 1 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        require(
            len(listed) == 1,
            "IGG-GROUP-9",
            f"{target.timeout:g}s after one of two members' connection closed the group lists"
            f" {show_members(listed)}, expected one member",
            got.at("members_count", "members"),
        )
        require(
            partitions_held(got) == [0, 1],
            "IGG-GROUP-9",
            f"the remaining member holds partitions {show_all(partitions_held(got))},"
            " expected 0, 1",
            got.at("members"),
        )


def dealt_round_robin(ctx: CaseContext, conn: Connection, sid: int, tid: int, gid: int) -> None:
    """GET_CONSUMER_GROUP lists its members in ascending id, partition i in the list of the
    (i mod m)-th of them (IGG-GROUP-10)."""
    got = get_group(ctx, conn, sid, tid, gid, "IGG-GROUP-4")
    listed = members(got)
    ids = [m for m, _ in listed]
    want = [[p for p in range(PARTITIONS) if p % len(listed) == i] for i in range(len(listed))]
    require(
        ids == sorted(ids) and [parts for _, parts in listed] == want,
        "IGG-GROUP-10",
        f"the group lists {show_members(listed)}, expected ids ascending and holding "
        + "; ".join(show_all(w) for w in want),
        got.at("members"),
    )


PARTITIONS = 5


@case("iggy/groups/10", "IGG-GROUP-10")
def test_partitions_are_dealt_round_robin_in_listed_order(target: CaseContext) -> None:
    """Members are listed in ascending id and hold partitions dealt round-robin in that order,
    after each of three joins and after a leave (5 partitions).

    IGG-GROUP-10: "GET_CONSUMER_GROUP lists the members in ascending member id, and partitions
    are dealt round-robin over them in that order (partition i to the (i mod m)-th listed
    member), again after every join and every leave."
    """
    with target.connect() as one, target.connect() as two, target.connect() as three:
        sid, tid = stream_topic(target, one, "roundrobin", PARTITIONS)
        gid, _ = create_group(target, one, sid, tid, "roundrobin")
        for conn in (one, two, three):
            join(target, conn, sid, tid, gid, "IGG-GROUP-4")
            dealt_round_robin(target, one, sid, tid, gid)
        expect_empty(
            target, two, "leave_consumer_group", group_body(target, sid, tid, gid),
            "IGG-GROUP-5", "LEAVE_CONSUMER_GROUP of the second member",
        )  # fmt: skip
        dealt_round_robin(target, one, sid, tid, gid)


def show_members(listed: list[tuple[int, list[int]]]) -> str:
    """``member 0: 0, 2; member 1: 1`` (or ``no member``)."""
    if not listed:
        return "no member"
    return "; ".join(f"member {m}: {show_all(parts) if parts else 'none'}" for m, parts in listed)
