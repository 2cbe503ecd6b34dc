"""Iggy partitions: CREATE_PARTITIONS and DELETE_PARTITIONS (SPEC.md, area
"partitions")."""

from __future__ import annotations

from conformance.client import Connection
from conformance.suite.case import case, require
from conformance.suite.iggy.steps import (
    create_group,
    get_group,
    ident,
    join,
    members,
    partitions_held,
    stream,
    stream_topic,
)
from conformance.suite.iggy.verify import Reply, classic, expect_empty, expect_found, expect_status
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext

UNKNOWN = 4_000_000_000


def partition_ids(
    ctx: CaseContext, conn: Connection, sid: int, tid: int, req: str
) -> tuple[list[int], Reply]:
    body = {"stream": ident(sid), "topic": ident(tid)}
    got = expect_found(ctx, conn, "get_topic", body, req, f"GET_TOPIC {sid}/{tid}")
    return [int(p["id"]) for p in got.body["partitions"]], got


def change(sid: int, tid: int, count: int) -> dict[str, object]:
    return {"stream": ident(sid), "topic": ident(tid), "partitions_count": count}


@case("iggy/partitions/1", "IGG-PART-1")
def test_create_partitions_adds_them_after_the_existing_ones(target: CaseContext) -> None:
    """CREATE_PARTITIONS of 2 on a 1-partition topic leaves partitions 0, 1 and 2.

    IGG-PART-1: "CREATE_PARTITIONS (402; stream, topic, u32 count) is answered with status 0 and
    an empty payload and adds count partitions numbered after the existing ones (a topic with n
    partitions gets n..n+count-1). In classic a count of 0 or above 1000 is answered 2015."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "addparts", 1)
        expect_empty(
            target,
            conn,
            "create_partitions",
            change(sid, tid, 2),
            "IGG-PART-1",
            "CREATE_PARTITIONS 2",
        )
        parts, got = partition_ids(target, conn, sid, tid, "IGG-PART-1")
        require(
            parts == [0, 1, 2] and got.body["partitions_count"] == 3,
            "IGG-PART-1",
            f"after CREATE_PARTITIONS 2 on 1 partition, GET_TOPIC lists partitions"
            f" {show_all(parts)}"
            f" (partitions_count {got.body['partitions_count']}), expected 0, 1, 2",
            got.at("partitions_count", "partitions"),
        )
        if classic(target):
            for count in (0, 1001):
                expect_status(
                    target, conn, "create_partitions", change(sid, tid, count), 2015, "IGG-PART-1",
                    f"CREATE_PARTITIONS {count}",
                )  # fmt: skip


@case("iggy/partitions/2", "IGG-PART-2")
def test_delete_partitions_removes_the_last_ones(target: CaseContext) -> None:
    """DELETE_PARTITIONS of 2 on 4 partitions leaves 0 and 1; deleting 5 or 1001 is answered
    2019.

    IGG-PART-2: "DELETE_PARTITIONS (403; stream, topic, u32 count) is answered with status 0 and
    an empty payload and removes the count highest-numbered partitions with their messages; a
    count larger than the number of partitions is answered with status 2019
    (InvalidPartitionsCount) and removes nothing, however large (the limit of 1000 is
    CREATE_PARTITIONS', not DELETE_PARTITIONS'). In classic a count of 0 is answered 2015."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "delparts", 4)
        expect_empty(
            target,
            conn,
            "delete_partitions",
            change(sid, tid, 2),
            "IGG-PART-2",
            "DELETE_PARTITIONS 2",
        )
        parts, got = partition_ids(target, conn, sid, tid, "IGG-PART-2")
        require(
            parts == [0, 1],
            "IGG-PART-2",
            f"after DELETE_PARTITIONS 2 of 4, GET_TOPIC lists partitions {show_all(parts)},"
            " expected 0, 1",
            got.at("partitions"),
        )
        for count in (5, 1001):  # no limit of 1000 of its own: 2019, not 2015
            expect_status(
                target, conn, "delete_partitions", change(sid, tid, count), 2019, "IGG-PART-2",
                f"DELETE_PARTITIONS {count} of 2",
            )  # fmt: skip
        if classic(target):
            expect_status(
                target, conn, "delete_partitions", change(sid, tid, 0), 2015, "IGG-PART-2",
                "DELETE_PARTITIONS 0",
            )  # fmt: skip


@case("iggy/partitions/3", "IGG-PART-3")
def test_partitions_of_an_unknown_topic_or_stream_are_refused(target: CaseContext) -> None:
    """CREATE/DELETE_PARTITIONS on an unknown topic are answered 2010, on an unknown stream 1009.

    IGG-PART-3: "CREATE_PARTITIONS or DELETE_PARTITIONS on a topic that does not exist is
    answered with status 2010, and on a stream that does not exist with 1009."
    """
    with target.connect() as conn:
        sid = stream(target, conn, "noparts")
        for name in ("create_partitions", "delete_partitions"):
            expect_status(
                target, conn, name, change(sid, UNKNOWN, 1), 2010, "IGG-PART-3",
                f"{name.upper()} on topic {UNKNOWN}",
            )  # fmt: skip
            expect_status(
                target, conn, name, change(UNKNOWN, 0, 1), 1009, "IGG-PART-3",
                f"{name.upper()} on stream {UNKNOWN}",
            )  # fmt: skip


def dealt(
    ctx: CaseContext, conn: Connection, sid: int, tid: int, gid: int, n: int, when: str
) -> None:
    """The group lists every partition 0..n-1 once, and its partitions count is n."""
    got = get_group(ctx, conn, sid, tid, gid, "IGG-PART-4")
    held = partitions_held(got)
    lists = "; ".join(show_all(parts) if parts else "none" for _, parts in members(got))
    require(  # a partition in two lists is IGG-GROUP-4's rule broken, whatever the change
        len(held) == len(set(held)),
        "IGG-GROUP-4",
        f"{when}, the group's two members hold {lists}: a partition in two lists",
        got.at("members"),
    )
    require(
        held == list(range(n)) and got.body["partitions_count"] == n,
        "IGG-PART-4",
        f"{when}, the group's two members hold {lists} (partitions_count"
        f" {got.body['partitions_count']}), expected partitions {show_all(list(range(n)))} each"
        f" in exactly one list, and {n}",
        got.at("partitions_count", "members"),
    )


@case("iggy/partitions/4", "IGG-PART-4")
def test_a_partitions_change_deals_the_groups_again(target: CaseContext) -> None:
    """A group of two members on 1 partition holds 0, 1, 2 once each after CREATE_PARTITIONS
    2, and 0 alone after DELETE_PARTITIONS 2.

    IGG-PART-4: "CREATE_PARTITIONS and DELETE_PARTITIONS deal the partitions of every group of
    the topic again: afterwards, while the topic has partitions and the group has members, each
    partition of the topic is in exactly one member's list, no list holds a partition the topic
    no longer has, and the Group record's partitions count is the topic's."
    """
    with target.connect() as one, target.connect() as two:
        sid, tid = stream_topic(target, one, "redeal", 1)
        gid, _ = create_group(target, one, sid, tid, "redeal")
        join(target, one, sid, tid, gid, "IGG-PART-4")
        join(target, two, sid, tid, gid, "IGG-PART-4")
        dealt(target, one, sid, tid, gid, 1, "with 1 partition")
        expect_empty(
            target, one, "create_partitions", change(sid, tid, 2), "IGG-PART-1",
            "CREATE_PARTITIONS 2",
        )  # fmt: skip
        dealt(target, one, sid, tid, gid, 3, "after CREATE_PARTITIONS 2 on 1 partition")
        expect_empty(
            target, one, "delete_partitions", change(sid, tid, 2), "IGG-PART-2",
            "DELETE_PARTITIONS 2",
        )  # fmt: skip
        dealt(target, one, sid, tid, gid, 1, "after DELETE_PARTITIONS 2 of 3")
