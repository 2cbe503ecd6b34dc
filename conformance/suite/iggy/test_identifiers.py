"""Iggy identifiers: numeric and string identifiers, ids the server assigns (SPEC.md,
area "identifiers").  Only the IGG-ID-1 and IGG-ID-4 cases use string identifiers."""

from __future__ import annotations

from conformance.protocols.iggy.messages import CODES
from conformance.suite.case import case, require
from conformance.suite.iggy.steps import (
    FIRST,
    create_group,
    create_stream,
    create_topic,
    ident,
    message,
    payloads,
    poll_body,
    stream,
    to_partition,
)
from conformance.suite.iggy.verify import (
    expect_found,
    expect_ok,
    read,
    require_status,
    send_raw,
)
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext


@case("iggy/identifiers/1", "IGG-ID-1")
def test_a_stream_and_topic_are_found_by_name_as_by_number(target: CaseContext) -> None:
    """GET_STREAM and GET_TOPIC by string identifiers answer what the numeric ones answer.

    IGG-ID-1: "wherever a request carries an Identifier, a stream or topic is found alike by a
    numeric Identifier (kind 1, length 4, u32 value) and by a string one (kind 2, length
    1..255, its UTF-8 name)."
    """
    with target.connect() as conn:
        sid, created = create_stream(target, conn, "named")
        sname = str(created.body["name"])
        tid, topic = create_topic(target, conn, sid, "named", 2)
        tname = str(topic.body["name"])
        for key, what in ((ident(sid), f"stream {sid}"), (ident(sname), f"stream '{sname}'")):
            got = expect_found(
                target, conn, "get_stream", {"stream": key}, "IGG-ID-1", f"GET_STREAM {what}"
            )
            require(
                got.body["id"] == sid and got.body["name"] == sname,
                "IGG-ID-1",
                f"GET_STREAM {what} answered stream {got.body['id']} '{got.body['name']}',"
                f" expected {sid} '{sname}'",
                got.at("id", "name", asked=("stream.value",)),
            )
        body = {"stream": ident(sname), "topic": ident(tname)}
        got = expect_found(
            target, conn, "get_topic", body, "IGG-ID-1", f"GET_TOPIC '{sname}' '{tname}'"
        )
        require(
            got.body["id"] == tid and got.body["name"] == tname,
            "IGG-ID-1",
            f"GET_TOPIC by names answered topic {got.body['id']}, expected {tid}",
            got.at("id", "name", asked=("stream.value", "topic.value")),
        )


@case("iggy/identifiers/2", "IGG-ID-1")
def test_messages_are_sent_and_polled_by_names(target: CaseContext) -> None:
    """SEND_MESSAGES and POLL_MESSAGES naming stream and topic by string store and return a message.

    IGG-ID-1: "wherever a request carries an Identifier, a stream or topic ... is found alike by
    a numeric Identifier ... and by a string one ..."
    """
    with target.connect() as conn:
        sid, created = create_stream(target, conn, "sendnamed")
        sname = str(created.body["name"])
        tid, topic = create_topic(target, conn, sid, "sendnamed")
        tname = str(topic.body["name"])
        body = {
            "stream": ident(sname),
            "topic": ident(tname),
            "partitioning": to_partition(0),
            "messages": [message(target, b"by-name")],
        }
        expect_ok(target, conn, "send_messages", body, "IGG-ID-1", "SEND_MESSAGES by names")
        pbody = poll_body(target, sid, tid, 0, FIRST, 0, 10)
        pbody.update(stream=ident(sname), topic=ident(tname))
        got = expect_ok(target, conn, "poll_messages", pbody, "IGG-ID-1", "POLL_MESSAGES by names")
        require(
            got.body is not None and payloads(got) == [b"by-name"],
            "IGG-ID-1",
            "POLL_MESSAGES by names did not return the message sent by names",
            got.at("messages count", asked=("stream.value", "topic.value")),
        )


@case("iggy/identifiers/3", "IGG-ID-4")
def test_a_group_is_found_by_name_as_by_number(target: CaseContext) -> None:
    """GET_CONSUMER_GROUP by the group's name answers the group its number answers.

    IGG-ID-4: "a consumer group is found alike by a numeric Identifier (its id) and by a string
    one (its name) in every consumer-group command"
    """
    with target.connect() as conn:
        sid = stream(target, conn, "gnamed")
        tid, _ = create_topic(target, conn, sid, "gnamed")
        gid, group = create_group(target, conn, sid, tid, "gnamed")
        gname = str(group.body["name"])
        by_id = expect_found(
            target, conn, "get_consumer_group",
            {"stream": ident(sid), "topic": ident(tid), "group": ident(gid)},
            "IGG-ID-4", f"GET_CONSUMER_GROUP {gid}",
        )  # fmt: skip
        by_name = expect_found(
            target, conn, "get_consumer_group",
            {"stream": ident(sid), "topic": ident(tid), "group": ident(gname)},
            "IGG-ID-4", f"GET_CONSUMER_GROUP '{gname}'",
        )  # fmt: skip
        require(
            by_name.body["id"] == by_id.body["id"] == gid,
            "IGG-ID-4",
            f"the group by name is {by_name.body['id']}, by number {by_id.body['id']},"
            f" expected {gid}",
            by_id.at("id") + by_name.at("id", asked=("group.value",)),
        )


@case("iggy/identifiers/4", "IGG-ID-2")
def test_ids_are_assigned_from_0_in_creation_order(target: CaseContext) -> None:
    """A new stream's first two topics get ids 0 and 1, a 3-partition topic partitions 0..2,
    and a new topic's first two groups ids 0 and 1.

    IGG-ID-2: "the server chooses the ids: streams, the topics of a stream and the groups of a
    topic are numbered from 0 in creation order when nothing of that kind was deleted before ...
    the partitions of a topic are always numbered 0..n-1."
    """
    with target.connect() as conn:
        # stream ids may reuse ids other cases freed: only a new stream's topics and a new
        # topic's groups are numbered from 0 for sure
        second, _ = create_stream(target, conn, "order")
        t0, r0 = create_topic(target, conn, second, "t-a", 3)
        t1, r1 = create_topic(target, conn, second, "t-b", 1)
        require(
            (t0, t1) == (0, 1),
            "IGG-ID-2",
            f"the topics of a new stream got ids {t0}, {t1}, expected 0, 1",
            r0.at("id") + r1.at("id"),
        )
        parts = [int(p["id"]) for p in r0.body["partitions"]]
        require(
            parts == [0, 1, 2],
            "IGG-ID-2",
            f"a 3-partition topic has partitions {show_all(parts)}, expected 0, 1, 2",
            r0.at("partitions"),
        )
        g0, q0 = create_group(target, conn, second, t0, "g-a")
        g1, q1 = create_group(target, conn, second, t0, "g-b")
        require(
            (g0, g1) == (0, 1),
            "IGG-ID-2",
            f"the groups of a new topic got ids {g0}, {g1}, expected 0, 1",
            q0.at("id") + q1.at("id"),
        )


@case("iggy/identifiers/5", "IGG-ID-3")
def test_an_unknown_identifier_kind_is_answered_3(target: CaseContext) -> None:
    """GET_STREAM with identifier kind 3 is answered 3.

    IGG-ID-3: "in a request other than SEND_MESSAGES, an Identifier whose kind byte is neither 1
    nor 2 is answered with status 3, and the connection keeps serving."
    """
    with target.connect() as conn:
        what = "GET_STREAM with identifier kind 3"
        send_raw(conn, CODES["get_stream"], b"\x03\x04\x00\x00\x00\x00", what)  # kind 3, len 4, 0
        reply = read(target, conn, "get_stream", "IGG-ID-3", what)
        require_status(reply, 3, "IGG-ID-3", what)
