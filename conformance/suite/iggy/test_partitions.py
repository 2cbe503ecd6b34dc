"""Iggy partitions: CREATE_PARTITIONS and DELETE_PARTITIONS (SPEC.md, area
"partitions")."""

from __future__ import annotations

from conformance.client import Connection
from conformance.suite.case import case, require
from conformance.suite.iggy.steps import ident, stream, stream_topic
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
    """DELETE_PARTITIONS of 2 on 4 partitions leaves 0 and 1; deleting 5 is answered 2019.

    IGG-PART-2: "DELETE_PARTITIONS (403; stream, topic, u32 count) is answered with status 0 and
    an empty payload and removes the count highest-numbered partitions with their messages; a
    count larger than the number of partitions is answered with status 2019
    (InvalidPartitionsCount) and removes nothing. In classic a count of 0 is answered 2015."
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
        expect_status(
            target, conn, "delete_partitions", change(sid, tid, 5), 2019, "IGG-PART-2",
            "DELETE_PARTITIONS 5 of 2",
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
