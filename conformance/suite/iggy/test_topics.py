"""Iggy topics: CREATE_TOPIC, GET_TOPIC, GET_TOPICS, DELETE_TOPIC (SPEC.md, area
"topics")."""

from __future__ import annotations

from conformance.suite.case import case, require
from conformance.suite.iggy.steps import (
    balanced,
    create_topic,
    fresh_id,
    ident,
    message,
    stream,
    topic_body,
)
from conformance.suite.iggy.verify import (
    classic,
    expect_empty,
    expect_found,
    expect_ok,
    expect_status,
)
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext

UNKNOWN = 4_000_000_000


@case("iggy/topics/1", "IGG-TOPIC-1")
def test_create_topic_answers_the_topic_and_its_partitions(target: CaseContext) -> None:
    """CREATE_TOPIC of 3 partitions answers the topic with partitions 0, 1 and 2.

    IGG-TOPIC-1: "CREATE_TOPIC (302) creates a topic with partitions_count partitions numbered
    from 0 and is answered with its Topic record (its id, the name as sent, that partitions
    count, 0 bytes, 0 messages) followed by one Partition record per partition, ids 0..n-1."
    """
    with target.connect() as conn:
        sid = stream(target, conn, "topic")
        name = target.name("three")
        body = topic_body(target, sid, 3, name)
        reply = expect_found(
            target, conn, "create_topic", body, "IGG-TOPIC-1", f"CREATE_TOPIC {name}"
        )
        parts = [int(p["id"]) for p in reply.body["partitions"]]
        require(
            reply.body["name"] == name and reply.body["partitions_count"] == 3,
            "IGG-TOPIC-1",
            f"CREATE_TOPIC {name} of 3 partitions answered '{reply.body['name']}' with"
            f" partitions_count {reply.body['partitions_count']}",
            reply.at("name", "partitions_count", asked=("name", "partitions_count")),
        )
        require(
            parts == [0, 1, 2],
            "IGG-TOPIC-1",
            f"CREATE_TOPIC of 3 partitions answered partitions {show_all(parts)}, expected 0, 1, 2",
            reply.at("partitions"),
        )


@case("iggy/topics/2", "IGG-TOPIC-2")
def test_a_topic_name_in_use_is_answered_2013(target: CaseContext) -> None:
    """A second CREATE_TOPIC with a name in use in the stream is answered 2013.

    IGG-TOPIC-2: "CREATE_TOPIC with a name another topic of the same stream has is answered with
    status 2013 (TopicNameAlreadyExists) and creates nothing."
    """
    with target.connect() as conn:
        sid = stream(target, conn, "tdup")
        _, first = create_topic(target, conn, sid, "tdup")
        name = str(first.body["name"])
        expect_status(
            target, conn, "create_topic", topic_body(target, sid, 1, name), 2013, "IGG-TOPIC-2",
            f"CREATE_TOPIC {name} again",
        )  # fmt: skip


@case("iggy/topics/3", "IGG-TOPIC-3")
def test_create_topic_in_an_unknown_stream_is_answered_1009(target: CaseContext) -> None:
    """CREATE_TOPIC in a stream that does not exist is answered 1009.

    IGG-TOPIC-3: "CREATE_TOPIC in a stream that does not exist is answered with status 1009."
    """
    with target.connect() as conn:
        body = topic_body(target, UNKNOWN, 1, target.name("orphan"))
        expect_status(
            target,
            conn,
            "create_topic",
            body,
            1009,
            "IGG-TOPIC-3",
            f"CREATE_TOPIC in stream {UNKNOWN}",
        )


@case("iggy/topics/4", "IGG-TOPIC-4")
def test_get_topic_answers_the_topic_and_its_partitions(target: CaseContext) -> None:
    """GET_TOPIC answers a 2-partition topic with partitions 0 and 1; an unknown topic, empty.

    IGG-TOPIC-4: "GET_TOPIC (300, stream and topic Identifiers) is answered with the Topic
    record followed by one Partition record per partition (with its current offset and message
    count); for a topic or stream that does not exist the reply is status 0 with an empty
    payload."
    """
    with target.connect() as conn:
        sid = stream(target, conn, "gettopic")
        tid, created = create_topic(target, conn, sid, "gettopic", 2)
        body = {"stream": ident(sid), "topic": ident(tid)}
        got = expect_found(target, conn, "get_topic", body, "IGG-TOPIC-4", f"GET_TOPIC {sid}/{tid}")
        parts = [int(p["id"]) for p in got.body["partitions"]]
        require(
            got.body["id"] == tid and got.body["name"] == created.body["name"] and parts == [0, 1],
            "IGG-TOPIC-4",
            f"GET_TOPIC {sid}/{tid} answered topic {got.body['id']} '{got.body['name']}' with"
            f" partitions {show_all(parts)}, expected {tid} '{created.body['name']}' with 0, 1",
            got.at("id", "name", "partitions", asked=("topic.value",)),
        )
        expect_empty(
            target, conn, "get_topic", {"stream": ident(sid), "topic": ident(UNKNOWN)},
            "IGG-TOPIC-4",
            f"GET_TOPIC {sid}/{UNKNOWN} (no such topic)",
        )  # fmt: skip


@case("iggy/topics/5", "IGG-TOPIC-5")
def test_get_topics_lists_the_streams_topics_once_each(target: CaseContext) -> None:
    """GET_TOPICS lists each of a stream's two topics exactly once.

    IGG-TOPIC-5: "GET_TOPICS (301, stream Identifier) is answered with one Topic record per
    topic of that stream, each exactly once."
    """
    with target.connect() as conn:
        sid = stream(target, conn, "topics")
        a, _ = create_topic(target, conn, sid, "topics-a")
        b, _ = create_topic(target, conn, sid, "topics-b")
        listed = expect_ok(
            target, conn, "get_topics", {"stream": ident(sid)}, "IGG-TOPIC-5", f"GET_TOPICS {sid}"
        )
        ids = sorted(int(t["id"]) for t in listed.body["topics"])
        require(
            ids == sorted([a, b]),
            "IGG-TOPIC-5",
            f"GET_TOPICS {sid} lists topics {show_all(ids)}, expected {show_all(sorted([a, b]))}",
            listed.at("topics"),
        )


@case("iggy/topics/6", "IGG-TOPIC-6")
def test_delete_topic_removes_it(target: CaseContext) -> None:
    """DELETE_TOPIC removes the topic; deleting it again is answered 2010.

    IGG-TOPIC-6: "DELETE_TOPIC (303) is answered with status 0 and an empty payload and removes
    the topic with its partitions and messages; a topic that does not exist is answered with
    status 2010 (TopicIdNotFound), and a stream that does not exist with 1009."
    """
    with target.connect() as conn:
        sid = stream(target, conn, "deltopic")
        tid, _ = create_topic(target, conn, sid, "deltopic")
        body = {"stream": ident(sid), "topic": ident(tid)}
        expect_empty(target, conn, "delete_topic", body, "IGG-TOPIC-6", f"DELETE_TOPIC {sid}/{tid}")
        expect_empty(
            target, conn, "get_topic", body, "IGG-TOPIC-6", f"GET_TOPIC {sid}/{tid} after it"
        )
        expect_status(
            target,
            conn,
            "delete_topic",
            body,
            2010,
            "IGG-TOPIC-6",
            f"DELETE_TOPIC {sid}/{tid} again",
        )
        orphan = {"stream": ident(UNKNOWN), "topic": ident(tid)}
        what = f"DELETE_TOPIC in stream {UNKNOWN}"
        expect_status(target, conn, "delete_topic", orphan, 1009, "IGG-TOPIC-6", what)


@case("iggy/topics/7", "IGG-TOPIC-7")
def test_more_than_1000_partitions_is_answered_2015(target: CaseContext) -> None:
    """CREATE_TOPIC with 1001 partitions is answered 2015.

    IGG-TOPIC-7: "CREATE_TOPIC asking for more than 1000 partitions is answered with status 2015
    (TooManyPartitions) and creates nothing."
    """
    with target.connect() as conn:
        sid = stream(target, conn, "many")
        body = topic_body(target, sid, 1001, target.name("many"))
        expect_status(
            target,
            conn,
            "create_topic",
            body,
            2015,
            "IGG-TOPIC-7",
            "CREATE_TOPIC of 1001 partitions",
        )


@case("iggy/topics/8", "IGG-TOPIC-8")
def test_doc_create_topic_takes_the_id_given(target: CaseContext) -> None:
    """CREATE_TOPIC with u32 topic_id makes a topic of that id, found by it.

    IGG-TOPIC-8: "in doc, the CREATE_TOPIC payload is the stream Identifier, a u32 topic id, a
    u32 partitions count and a Name, with no expiry field; the topic gets that id (the reply and
    GET_TOPIC carry it)."
    """
    with target.connect() as conn:
        sid = stream(target, conn, "tgiven")
        tid = fresh_id()
        name = target.name("tgiven")
        body = {"stream": ident(sid), "topic_id": tid, "partitions_count": 2, "name": name}
        reply = expect_found(
            target, conn, "create_topic", body, "IGG-TOPIC-8", f"CREATE_TOPIC {tid} {name}"
        )
        require(
            reply.body["id"] == tid,
            "IGG-TOPIC-8",
            f"CREATE_TOPIC {tid} made topic {reply.body['id']}",
            reply.at("id", asked=("topic_id",)),
        )
        got = expect_found(
            target, conn, "get_topic", {"stream": ident(sid), "topic": ident(tid)}, "IGG-TOPIC-8",
            f"GET_TOPIC {sid}/{tid}",
        )  # fmt: skip
        require(
            got.body["name"] == name,
            "IGG-TOPIC-8",
            f"GET_TOPIC {sid}/{tid} answered '{got.body['name']}', expected '{name}'",
            got.at("name"),
        )
        _ = classic


@case("iggy/topics/9", "IGG-TOPIC-9")
def test_a_topic_of_no_partition_is_made_and_refuses_a_balanced_send(target: CaseContext) -> None:
    """CREATE_TOPIC of 0 partitions answers a topic of none; a balanced send to it is 2010.

    IGG-TOPIC-9: "CREATE_TOPIC with a partitions count of 0 creates a topic with no partition
    (its Topic record counts 0 partitions and no Partition record follows), and SEND_MESSAGES
    with balanced partitioning to it is answered with status 2010 (TopicIdNotFound) and stores
    nothing."
    """
    req = "IGG-TOPIC-9"
    with target.connect() as conn:
        sid = stream(target, conn, "nopart")
        tid, made = create_topic(target, conn, sid, "nopart", 0, req)
        ref = {"stream": ident(sid), "topic": ident(tid)}
        got = expect_found(target, conn, "get_topic", ref, req, f"GET_TOPIC {sid}/{tid}")
        for reply, what in ((made, "CREATE_TOPIC"), (got, "GET_TOPIC")):
            body = reply.body
            require(
                body is not None and body["partitions_count"] == 0 and not body["partitions"],
                req,
                f"{what} of a topic made with 0 partitions answered partitions_count"
                f" {body['partitions_count'] if body else None} and"
                f" {len(body['partitions']) if body else 0} Partition record(s), expected 0, none",
                reply.at("partitions_count", "partitions"),
            )
        send = {**ref, "partitioning": balanced(), "messages": [message(target, b"nowhere")]}
        expect_status(
            target, conn, "send_messages", send, 2010, req,
            "SEND_MESSAGES, balanced, to a topic of 0 partitions",
        )  # fmt: skip
        after = expect_found(target, conn, "get_topic", ref, req, f"GET_TOPIC {sid}/{tid} again")
        require(
            after.body["messages_count"] == 0,
            req,
            f"after the refused send the topic counts {after.body['messages_count']} messages,"
            " expected 0",
            after.at("messages_count"),
        )
