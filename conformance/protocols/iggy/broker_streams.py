"""Streams, topics and partitions of the Iggy front-end, and their reply records.

Behaviour (sources at apache/iggy f5350d999; FACTS.md section 3):

* ids: classic, the lowest free id from 0 (the real server's slabs reuse a freed slot);
  doc, the id the client gave.  A stream name in use is 1012; in doc a stream id in use is
  1011, Iggy's historic StreamIdAlreadyExists (SPEC.md IGG-STREAM-6).  A topic name in use
  in its stream (doc: a topic id in use) is 2013.  An unknown stream is 1009, an unknown
  topic 2010; GET_STREAM and GET_TOPIC of an unknown one are the empty reply.
* CREATE_TOPIC and CREATE_PARTITIONS refuse more than 1000 partitions in one request with
  2015 (BP/lib.rs ``MAX_PARTITIONS_PER_REQUEST``), the partition commands a count of 0
  too; CREATE_TOPIC takes 0 (a topic with no partition); DELETE_PARTITIONS has no upper
  bound of its own: deleting more partitions than the topic has is 2019.  Partitions are
  added after the last and removed from the end, and the topic's groups are dealt again
  (the engine's assignor; SV/shard/execution.rs ``execute_create_partitions``,
  ``execute_delete_partitions``: ``rebalance_consumer_groups_for_topic``).
* deleting a stream deletes its topics, deleting a topic its groups (and their
  memberships) and stored offsets; every change is written through before the reply, in
  the order broker_state.py gives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.protocols.iggy import broker_groups, broker_messages
from conformance.protocols.iggy import errors as st
from conformance.protocols.iggy.broker_state import (
    Refusal,
    StreamEntry,
    TopicEntry,
    engine_topic,
    lowest_free,
    now_us,
)

if TYPE_CHECKING:
    from conformance.protocols.iggy.handler import IggySession

MAX_PARTITIONS_PER_REQUEST = 1000
"""BP/lib.rs ``MAX_PARTITIONS_PER_REQUEST``: more in one request is 2015."""


def _id(entry: Any) -> int:
    return int(entry.id)


# ------------------------------------------------------------------ records


def partition_record(
    session: IggySession, stream: StreamEntry, topic: TopicEntry, p: int
) -> dict[str, Any]:
    hwm = session.engine.high_watermark(engine_topic(stream.id, topic.id), p)
    return {
        "id": p,
        "created_at": topic.partitions[p],
        "segments_count": 1,
        "current_offset": max(hwm - 1, 0),
        "size_bytes": broker_messages.partition_size(session, stream, topic, p),
        "messages_count": hwm,
    }


def topic_record(session: IggySession, stream: StreamEntry, topic: TopicEntry) -> dict[str, Any]:
    parts = [partition_record(session, stream, topic, p) for p in range(len(topic.partitions))]
    return {
        "id": topic.id,
        "created_at": topic.created_at,
        "partitions_count": len(parts),
        "message_expiry": topic.message_expiry,
        "compression": topic.compression,
        "max_topic_size": topic.max_topic_size,
        "replication_factor": topic.replication_factor,
        "size_bytes": sum(p["size_bytes"] for p in parts),
        "messages_count": sum(p["messages_count"] for p in parts),
        "name": topic.name,
        "partitions": parts,
    }


def stream_record(session: IggySession, stream: StreamEntry) -> dict[str, Any]:
    topics = [topic_record(session, stream, t) for t in sorted(stream.topics.values(), key=_id)]
    for t in topics:
        t.pop("partitions")
    return {
        "id": stream.id,
        "created_at": stream.created_at,
        "topics_count": len(topics),
        "size_bytes": sum(t["size_bytes"] for t in topics),
        "messages_count": sum(t["messages_count"] for t in topics),
        "name": stream.name,
        "topics": topics,
    }


# ------------------------------------------------------------------ streams


def create_stream(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    reg, name = session.registry, body["name"]
    if any(s.name == name for s in reg.streams.values()):
        raise Refusal(st.STREAM_NAME_ALREADY_EXISTS, f"stream {name!r} exists")
    sid = body.get("stream_id")
    if sid is None:
        sid = lowest_free(reg.streams)
    elif sid in reg.streams:  # doc: Iggy's historic StreamIdAlreadyExists (IGG-STREAM-6)
        raise Refusal(st.STREAM_ID_ALREADY_EXISTS, f"stream id {sid} is in use")
    reg.streams[sid] = StreamEntry(sid, name, now_us())
    reg.save_stream(reg.streams[sid])
    return stream_record(session, reg.streams[sid])


def get_stream(session: IggySession, body: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return stream_record(session, session.stream(body["stream"]))
    except Refusal:
        return None


def get_streams(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    streams = sorted(session.registry.streams.values(), key=_id)
    records = [stream_record(session, s) for s in streams]
    for r in records:
        r.pop("topics")
    return {"streams": records}


def delete_stream(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    stream = session.stream(body["stream"])
    session.registry.forget_stream(stream)
    for topic in list(stream.topics.values()):
        drop_topic(session, stream, topic)
    del session.registry.streams[stream.id]
    return {}


# ------------------------------------------------------------------ topics


def create_topic(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    stream, name = session.stream(body["stream"]), body["name"]
    count = body["partitions_count"]
    if count > MAX_PARTITIONS_PER_REQUEST:
        raise Refusal(st.TOO_MANY_PARTITIONS, f"{count} partitions: at most 1000 a request")
    if any(t.name == name for t in stream.topics.values()):
        raise Refusal(st.TOPIC_NAME_ALREADY_EXISTS, f"topic {name!r} exists in stream {stream.id}")
    tid = body.get("topic_id")
    if tid is None:  # the lowest free id whose shared name no other protocol has taken
        tid = lowest_free(stream.topics)
        while session.engine.has_topic(engine_topic(stream.id, tid)):
            tid = lowest_free({*stream.topics, *range(tid + 1)})
    elif tid in stream.topics:  # doc: as for streams, the name code
        raise Refusal(st.TOPIC_NAME_ALREADY_EXISTS, f"topic id {tid} is in use")
    elif session.engine.has_topic(engine_topic(stream.id, tid)):
        raise Refusal(
            st.TOPIC_NAME_ALREADY_EXISTS,
            f"topic id {tid}: its shared name {engine_topic(stream.id, tid)} is another "
            "protocol's topic",
        )
    now = now_us()
    topic = TopicEntry(
        tid,
        name,
        now,
        body.get("compression", 1),
        body.get("message_expiry", 0),
        body.get("max_topic_size", 0),
        body.get("replication_factor", 0),
        [now] * count,
        [0] * count,
        [0] * count,
    )
    session.engine.create_topic(engine_topic(stream.id, tid), count, min_partitions=0)
    stream.topics[tid] = topic
    session.registry.save_topic(stream, topic)
    return topic_record(session, stream, topic)


def get_topic(session: IggySession, body: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return topic_record(session, *session.topic(body))
    except Refusal:
        return None


def get_topics(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    stream = session.stream(body["stream"])
    topics = sorted(stream.topics.values(), key=_id)
    records = [topic_record(session, stream, t) for t in topics]
    for r in records:
        r.pop("partitions")
    return {"topics": records}


def delete_topic(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    drop_topic(session, *session.topic(body))
    return {}


def drop_topic(session: IggySession, stream: StreamEntry, topic: TopicEntry) -> None:
    session.registry.forget_topic(stream, topic)
    for group in topic.groups.values():
        broker_groups.drop_group(session, stream, topic, group)
    session.engine.delete_topic(engine_topic(stream.id, topic.id))
    del stream.topics[topic.id]


# ------------------------------------------------------------------ partitions


def _partition_count(session: IggySession, body: dict[str, Any], capped: bool) -> int:
    """The count of CREATE_PARTITIONS (``capped``: 1..=1000, SV/binary/handlers/partitions/
    create_partitions_handler.rs) or DELETE_PARTITIONS (0 refused, no upper bound:
    delete_partitions_handler.rs; more than the topic has is 2019 later); 2015 otherwise."""
    count: int = body["partitions_count"]
    capped = capped or session.quirks.caps_partition_deletes()
    if capped and count > MAX_PARTITIONS_PER_REQUEST:
        raise Refusal(st.TOO_MANY_PARTITIONS, f"{count} partitions: at most 1000 a request")
    if count < 1:
        raise Refusal(st.TOO_MANY_PARTITIONS, "a partitions count of 0")
    return count


def create_partitions(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    stream, topic = session.topic(body)
    count = _partition_count(session, body, capped=True)
    broker_groups.freeze_lists(session, stream, topic)
    session.engine.add_partitions(engine_topic(stream.id, topic.id), count)
    topic.partitions += [now_us()] * count
    topic.sizes += [0] * count
    topic.counted += [0] * (len(topic.sizes) - len(topic.counted))
    session.registry.save_topic(stream, topic)
    return {}


def delete_partitions(session: IggySession, body: dict[str, Any]) -> dict[str, Any]:
    stream, topic = session.topic(body)
    count = _partition_count(session, body, capped=False)
    if count > len(topic.partitions):
        raise Refusal(
            st.INVALID_PARTITIONS_COUNT,
            f"{count} partitions to delete, topic {topic.id} has {len(topic.partitions)}",
        )
    del topic.partitions[len(topic.partitions) - count :]
    del topic.sizes[len(topic.sizes) - count :]
    del topic.counted[len(topic.sizes) :]
    session.registry.save_topic(stream, topic)  # the key first (see broker_state.py)
    session.registry.forget_partitions_from(stream, topic, len(topic.partitions))
    broker_groups.freeze_lists(session, stream, topic)
    session.engine.remove_partitions(engine_topic(stream.id, topic.id), count)
    return {}
