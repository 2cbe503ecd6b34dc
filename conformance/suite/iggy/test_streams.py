"""Iggy streams: CREATE_STREAM, GET_STREAM, GET_STREAMS, DELETE_STREAM (SPEC.md, area
"streams")."""

from __future__ import annotations

from conformance.suite.case import case, require
from conformance.suite.iggy.steps import create_stream, create_topic, fresh_id, ident
from conformance.suite.iggy.verify import (
    call,
    classic,
    expect_empty,
    expect_found,
    expect_ok,
    expect_status,
    require_ok,
    require_status,
)
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext

UNKNOWN_STREAM = 4_000_000_000


@case("iggy/streams/1", "IGG-STREAM-1")
def test_create_stream_answers_the_new_empty_stream(target: CaseContext) -> None:
    """CREATE_STREAM answers the stream it made: its id, its name, 0 topics, 0 messages.

    IGG-STREAM-1: "CREATE_STREAM (202) is answered with the new stream's Stream record: its id,
    the name as sent, 0 topics, 0 bytes, 0 messages. In classic the request is a Name only, with
    no stream id."
    """
    with target.connect() as conn:
        name = target.name("new")
        body = {"name": name} if classic(target) else {"stream_id": fresh_id(), "name": name}
        reply = expect_found(
            target, conn, "create_stream", body, "IGG-STREAM-1", f"CREATE_STREAM {name}"
        )
        got = reply.body
        require(
            got["name"] == name,
            "IGG-STREAM-1",
            f"CREATE_STREAM {name} answered name '{got['name']}'",
            reply.at("name", asked=("name",)),
        )
        require(
            (got["topics_count"], got["messages_count"], len(got["topics"])) == (0, 0, 0),
            "IGG-STREAM-1",
            f"a new stream has topics_count {got['topics_count']}, messages_count"
            f" {got['messages_count']}, {len(got['topics'])} topic record(s), expected 0, 0, 0",
            reply.at("topics_count", "messages_count", "topics"),
        )


@case("iggy/streams/2", "IGG-STREAM-2")
def test_a_stream_name_in_use_is_answered_1012(target: CaseContext) -> None:
    """Creating a second stream with a name in use is answered 1012.

    IGG-STREAM-2: "CREATE_STREAM with a name another stream already has is answered with status
    1012 (StreamNameAlreadyExists) and creates nothing."
    """
    with target.connect() as conn:
        _, first = create_stream(target, conn, "twice")
        name = str(first.body["name"])
        body = {"name": name} if classic(target) else {"stream_id": fresh_id(), "name": name}
        expect_status(
            target, conn, "create_stream", body, 1012, "IGG-STREAM-2", f"CREATE_STREAM {name} again"
        )


@case("iggy/streams/3", "IGG-STREAM-3")
def test_get_stream_answers_the_stream_and_its_topics(target: CaseContext) -> None:
    """GET_STREAM answers the stream with its two topics; an unknown stream gets an empty reply.

    IGG-STREAM-3: "GET_STREAM (200, stream Identifier) is answered with the Stream record
    followed by one Topic record per topic of the stream; for a stream that does not exist the
    reply is status 0 with an empty payload."
    """
    with target.connect() as conn:
        sid, created = create_stream(target, conn, "get")
        _, a = create_topic(target, conn, sid, "get-a")
        _, b = create_topic(target, conn, sid, "get-b", 2)
        got = expect_found(
            target, conn, "get_stream", {"stream": ident(sid)}, "IGG-STREAM-3", f"GET_STREAM {sid}"
        )
        names = sorted(str(t["name"]) for t in got.body["topics"])
        want = sorted([str(a.body["name"]), str(b.body["name"])])
        require(
            got.body["id"] == sid and got.body["name"] == created.body["name"],
            "IGG-STREAM-3",
            f"GET_STREAM {sid} answered stream {got.body['id']} '{got.body['name']}'",
            got.at("id", "name", asked=("stream.value",)),
        )
        require(
            names == want and got.body["topics_count"] == 2,
            "IGG-STREAM-3",
            f"GET_STREAM {sid} lists topics {show_all(names)} (topics_count"
            f" {got.body['topics_count']}), expected {', '.join(want)}",
            got.at("topics_count", "topics"),
        )
        expect_empty(
            target, conn, "get_stream", {"stream": ident(UNKNOWN_STREAM)}, "IGG-STREAM-3",
            f"GET_STREAM {UNKNOWN_STREAM} (no such stream)",
        )  # fmt: skip


@case("iggy/streams/4", "IGG-STREAM-4")
def test_get_streams_lists_every_stream_once(target: CaseContext) -> None:
    """GET_STREAMS lists each of two new streams exactly once.

    IGG-STREAM-4: "GET_STREAMS (201, empty payload) is answered with one Stream record per
    existing stream, each exactly once."
    """
    with target.connect() as conn:
        a, _ = create_stream(target, conn, "list-a")
        b, _ = create_stream(target, conn, "list-b")
        listed = expect_ok(target, conn, "get_streams", {}, "IGG-STREAM-4", "GET_STREAMS")
        ids = [int(s["id"]) for s in listed.body["streams"]]
        require(
            len(ids) == len(set(ids)),
            "IGG-STREAM-4",
            "GET_STREAMS lists a stream more than once",
            listed.at("streams"),
        )
        for sid in (a, b):
            require(
                sid in ids,
                "IGG-STREAM-4",
                f"GET_STREAMS does not list stream {sid}, just created",
                listed.at("streams"),
            )


@case("iggy/streams/5", "IGG-STREAM-5")
def test_delete_stream_removes_it_and_its_topics(target: CaseContext) -> None:
    """DELETE_STREAM removes the stream and its topic; deleting it again is answered 1009.

    IGG-STREAM-5: "DELETE_STREAM (203, stream Identifier) is answered with status 0 and an empty
    payload and removes the stream with all its topics and messages (GET_STREAM then answers
    empty, GET_STREAMS no longer lists it); a stream that does not exist is answered with status
    1009 (StreamIdNotFound)."
    """
    with target.connect() as conn:
        sid, _ = create_stream(target, conn, "gone")
        tid, _ = create_topic(target, conn, sid, "gone")
        expect_empty(
            target,
            conn,
            "delete_stream",
            {"stream": ident(sid)},
            "IGG-STREAM-5",
            f"DELETE_STREAM {sid}",
        )
        expect_empty(
            target, conn, "get_stream", {"stream": ident(sid)}, "IGG-STREAM-5",
            f"GET_STREAM {sid} after its deletion",
        )  # fmt: skip
        listed = expect_ok(target, conn, "get_streams", {}, "IGG-STREAM-5", "GET_STREAMS after it")
        require(
            sid not in [int(s["id"]) for s in listed.body["streams"]],
            "IGG-STREAM-5",
            f"GET_STREAMS still lists stream {sid} after its deletion",
            listed.at("streams"),
        )
        topic = call(
            target, conn, "get_topic", {"stream": ident(sid), "topic": ident(tid)}, "IGG-STREAM-5",
            f"GET_TOPIC {sid}/{tid} after the stream's deletion",
        )  # fmt: skip
        require(
            topic.status == 1009 or (topic.ok and topic.body is None),
            "IGG-STREAM-5",
            f"GET_TOPIC of a deleted stream's topic: {topic.shown()}, expected it gone",
            topic.at("status"),
        )
        expect_status(
            target, conn, "delete_stream", {"stream": ident(sid)}, 1009, "IGG-STREAM-5",
            f"DELETE_STREAM {sid} again",
        )  # fmt: skip


@case("iggy/streams/6", "IGG-STREAM-6")
def test_doc_create_stream_takes_the_id_given(target: CaseContext) -> None:
    """CREATE_STREAM with u32 stream_id makes a stream of that id; the id again is refused.

    IGG-STREAM-6: "in doc, the CREATE_STREAM payload is a u32 stream id followed by a Name; the
    stream gets that id (the reply and GET_STREAM carry it); an id already used by a stream is
    answered with status 1011 and creates nothing."
    """
    with target.connect() as conn:
        sid = fresh_id()
        name = target.name("given")
        body = {"stream_id": sid, "name": name}
        reply = expect_found(
            target, conn, "create_stream", body, "IGG-STREAM-6", f"CREATE_STREAM {sid} {name}"
        )
        require(
            reply.body["id"] == sid,
            "IGG-STREAM-6",
            f"CREATE_STREAM {sid} made stream {reply.body['id']}",
            reply.at("id", asked=("stream_id",)),
        )
        got = expect_found(
            target, conn, "get_stream", {"stream": ident(sid)}, "IGG-STREAM-6", f"GET_STREAM {sid}"
        )
        require_ok(got, "IGG-STREAM-6", f"GET_STREAM {sid}")
        again = {"stream_id": sid, "name": target.name("given-again")}
        dup = call(
            target, conn, "create_stream", again, "IGG-STREAM-6", f"CREATE_STREAM {sid} again"
        )
        require_status(
            dup, 1011, "IGG-STREAM-6", f"CREATE_STREAM {sid} (in use) under another name"
        )
