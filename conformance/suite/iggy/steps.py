"""Steps the Iggy cases share: bodies in the run's revision, a fresh stream and topic,
send, poll, consumer offsets.

Bodies differ by revision (SPEC.md's preamble): ``classic`` is the 0.8 client's layout
(the server assigns stream and topic ids, a Consumer carries an Identifier, a partition is
a flag and a u32, messages carry 64-byte headers and user headers); ``doc`` the seed's
(the client gives stream and topic ids, a Consumer is a u32, a partition a bare u32,
consumer groups are u32 ids, a message is an id and a payload).  Every step checks what it
relies on and blames the requirement that covers it, so that a target breaking one
requirement fails that requirement's cases and no others.  Identifiers are numeric
everywhere (only the IGG-ID-1 and IGG-ID-4 cases use names).
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.client import Connection
from conformance.protocols.iggy.messages import identifier
from conformance.suite.case import Violation
from conformance.suite.iggy.verify import (
    Reply,
    call,
    classic,
    expect_ok,
    require_ok,
)
from conformance.suite.target import CaseContext

OFFSET, TIMESTAMP, FIRST, LAST, NEXT = 1, 2, 3, 4, 5
CONSUMER, GROUP = 1, 2


def ident(value: int | str) -> dict[str, Any]:
    return identifier(value)


def fresh_id() -> int:
    """A stream or topic id for ``doc`` (the client gives it): one no other case uses."""
    return random.randrange(1_000_000, 2_000_000_000)


def send_requirement(ctx: CaseContext) -> str:
    return "IGG-SEND-1" if classic(ctx) else "IGG-SEND-8"


# ------------------------------------------------------------------ bodies


def consumer(ctx: CaseContext, cid: int, kind: int = CONSUMER) -> dict[str, Any]:
    if classic(ctx):
        return {"kind": kind, "value": ident(cid)}
    return {"kind": kind, "value": cid}


def partition(ctx: CaseContext, pid: int | None) -> dict[str, Any]:
    """The partition fields of a poll or consumer-offset request (None: no partition,
    classic only)."""
    if classic(ctx):
        return {"partition_flag": 0 if pid is None else 1, "partition_id": pid or 0}
    return {"partition_id": pid or 0}


def group_ref(ctx: CaseContext, group: int | str) -> dict[str, Any]:
    if classic(ctx):
        return {"group": ident(group)}
    return {"consumer_group_id": group}


def balanced() -> dict[str, Any]:
    return {"kind": 1, "value": {}}


def to_partition(pid: int) -> dict[str, Any]:
    return {"kind": 2, "value": pid}


def by_key(key: bytes) -> dict[str, Any]:
    return {"kind": 3, "value": key}


def message(
    ctx: CaseContext,
    payload: bytes,
    mid: int = 0,
    headers: bytes = b"",
    origin: int | None = None,
) -> dict[str, Any]:
    if not classic(ctx):
        return {"id": mid, "payload": payload}
    return {
        "id": mid,
        "payload": payload,
        "headers": headers,
        "origin_timestamp": now_us() if origin is None else origin,
    }


def now_us() -> int:
    return time.time_ns() // 1000


# ------------------------------------------------------------------ streams, topics


def create_stream(
    ctx: CaseContext, conn: Connection, base: str, requirement: str = "IGG-STREAM-1"
) -> tuple[int, Reply]:
    """CREATE_STREAM of a fresh name; its id (classic: from the reply) and the reply."""
    name = ctx.name(base)
    if classic(ctx):
        body: dict[str, Any] = {"name": name}
    else:
        body = {"stream_id": fresh_id(), "name": name}
    reply = expect_ok(ctx, conn, "create_stream", body, requirement, f"CREATE_STREAM {name}")
    if reply.body is None:
        raise Violation(requirement, f"CREATE_STREAM {name}: an empty reply", reply.at("status"))
    sid = int(reply.body["id"]) if classic(ctx) else body["stream_id"]
    return sid, reply


def stream(ctx: CaseContext, conn: Connection, base: str = "s") -> int:
    return create_stream(ctx, conn, base)[0]


def create_topic(
    ctx: CaseContext,
    conn: Connection,
    sid: int,
    base: str,
    partitions: int = 1,
    requirement: str = "IGG-TOPIC-1",
    name: str | None = None,
) -> tuple[int, Reply]:
    """CREATE_TOPIC of a fresh name with ``partitions`` partitions; its id and the reply."""
    name = name or ctx.name(base)
    body = topic_body(ctx, sid, partitions, name)
    what = f"CREATE_TOPIC {name} ({partitions} partitions) in stream {sid}"
    reply = expect_ok(ctx, conn, "create_topic", body, requirement, what)
    tid = int(reply.body["id"]) if classic(ctx) and reply.body is not None else body.get("topic_id")
    if tid is None:
        raise Violation(requirement, f"{what}: an empty reply", reply.at("status"))
    return int(tid), reply


def topic_body(ctx: CaseContext, sid: int, partitions: int, name: str) -> dict[str, Any]:
    if classic(ctx):
        return {
            "stream": ident(sid),
            "partitions_count": partitions,
            "compression": 1,
            "message_expiry": 0,
            "max_topic_size": 0,
            "replication_factor": 0,
            "name": name,
        }
    return {
        "stream": ident(sid),
        "topic_id": fresh_id(),
        "partitions_count": partitions,
        "name": name,
    }


def stream_topic(
    ctx: CaseContext, conn: Connection, base: str, partitions: int = 1
) -> tuple[int, int]:
    """A fresh stream with one fresh topic of ``partitions`` partitions."""
    sid = stream(ctx, conn, base)
    tid, _ = create_topic(ctx, conn, sid, base, partitions)
    return sid, tid


def delete_stream(ctx: CaseContext, conn: Connection, sid: int) -> None:
    """Clean up (not checked)."""
    call(ctx, conn, "delete_stream", {"stream": ident(sid)}, "IGG-STREAM-5", "DELETE_STREAM")


# ------------------------------------------------------------------ messages


def send_messages(
    ctx: CaseContext,
    conn: Connection,
    sid: int,
    tid: int,
    partitioning: Mapping[str, Any],
    msgs: Sequence[Mapping[str, Any]],
    requirement: str | None = None,
) -> Reply:
    """SEND_MESSAGES, answered 0 (SEND-1 classic / SEND-8 doc unless told)."""
    body = {
        "stream": ident(sid),
        "topic": ident(tid),
        "partitioning": dict(partitioning),
        "messages": list(msgs),
    }
    req = requirement or send_requirement(ctx)
    what = f"SEND_MESSAGES of {len(msgs)} message(s) to stream {sid} topic {tid}"
    return expect_ok(ctx, conn, "send_messages", body, req, what)


def produce(
    ctx: CaseContext,
    conn: Connection,
    sid: int,
    tid: int,
    pid: int,
    *payloads: bytes,
) -> Reply:
    """Send ``payloads`` to partition ``pid``."""
    msgs = [message(ctx, p) for p in payloads]
    return send_messages(ctx, conn, sid, tid, to_partition(pid), msgs)


def poll_body(
    ctx: CaseContext,
    sid: int,
    tid: int,
    pid: int | None,
    strategy: int,
    value: int = 0,
    count: int = 100,
    *,
    auto_commit: bool = False,
    cid: int = 0,
    kind: int = CONSUMER,
) -> dict[str, Any]:
    return {
        "consumer": consumer(ctx, cid, kind),
        "stream": ident(sid),
        "topic": ident(tid),
        **partition(ctx, pid),
        "strategy": {"kind": strategy, "value": value},
        "count": count,
        "auto_commit": auto_commit,
    }


STRATEGIES = {OFFSET: "offset", TIMESTAMP: "timestamp", FIRST: "first", LAST: "last", NEXT: "next"}


def poll(
    ctx: CaseContext, conn: Connection, body: Mapping[str, Any], requirement: str = "IGG-POLL-1"
) -> Reply:
    """POLL_MESSAGES of ``body`` (:func:`poll_body`), answered 0 with a reply that decodes
    (IGG-POLL-1 unless told)."""
    pid = body["partition_id"] if body.get("partition_flag", 1) else None
    kind, value = body["strategy"]["kind"], body["strategy"]["value"]
    what = f"POLL_MESSAGES partition {pid} strategy {STRATEGIES.get(kind, kind)} {value}"
    what += f" count {body['count']}"
    reply = call(ctx, conn, "poll_messages", body, requirement, what, require_ok)
    if reply.body is None:
        raise Violation(requirement, f"{what}: an empty reply", reply.at("status"))
    return reply


def polled(reply: Reply) -> list[Any]:
    return list(reply.body["messages"])


def payloads(reply: Reply) -> list[bytes]:
    return [bytes(m["payload"]) for m in reply.body["messages"]]


def offsets(reply: Reply) -> list[int]:
    return [int(m["offset"]) for m in reply.body["messages"]]


def msg_fields(reply: Reply, name: str) -> list[str]:
    return [f"messages[{i}].{name}" for i in range(len(reply.body["messages"]))]


# ------------------------------------------------------------------ consumer offsets


def offset_body(
    ctx: CaseContext, sid: int, tid: int, pid: int | None, cid: int = 0, kind: int = CONSUMER
) -> dict[str, Any]:
    return {
        "consumer": consumer(ctx, cid, kind),
        "stream": ident(sid),
        "topic": ident(tid),
        **partition(ctx, pid),
    }


# ------------------------------------------------------------------ consumer groups


def create_group(
    ctx: CaseContext,
    conn: Connection,
    sid: int,
    tid: int,
    base: str = "g",
    requirement: str = "IGG-GROUP-1",
) -> tuple[int, Reply]:
    """CREATE_CONSUMER_GROUP (classic: a fresh name; doc: a fresh u32 id); its id."""
    if classic(ctx):
        body: dict[str, Any] = {"stream": ident(sid), "topic": ident(tid), "name": ctx.name(base)}
    else:
        body = {"stream": ident(sid), "topic": ident(tid), "consumer_group_id": fresh_id()}
    what = f"CREATE_CONSUMER_GROUP in stream {sid} topic {tid}"
    reply = expect_ok(ctx, conn, "create_consumer_group", body, requirement, what)
    if classic(ctx):
        if reply.body is None:
            raise Violation(requirement, f"{what}: an empty reply", reply.at("status"))
        return int(reply.body["id"]), reply
    return int(body["consumer_group_id"]), reply


def group_body(ctx: CaseContext, sid: int, tid: int, gid: int | str) -> dict[str, Any]:
    return {"stream": ident(sid), "topic": ident(tid), **group_ref(ctx, gid)}


def join(
    ctx: CaseContext,
    conn: Connection,
    sid: int,
    tid: int,
    gid: int,
    requirement: str = "IGG-GROUP-4",
) -> Reply:
    what = f"JOIN_CONSUMER_GROUP {gid}"
    return expect_ok(
        ctx, conn, "join_consumer_group", group_body(ctx, sid, tid, gid), requirement, what
    )


def get_group(
    ctx: CaseContext,
    conn: Connection,
    sid: int,
    tid: int,
    gid: int,
    requirement: str = "IGG-GROUP-2",
) -> Reply:
    what = f"GET_CONSUMER_GROUP {gid}"
    return expect_ok(
        ctx, conn, "get_consumer_group", group_body(ctx, sid, tid, gid), requirement, what
    )


def members(reply: Reply) -> list[tuple[int, list[int]]]:
    """Each member a GET_CONSUMER_GROUP reply lists, in its order: (member id, its partitions
    sorted).  A member id is numbered per group (IGG-GROUP-2), not a client id: a case tells
    its connections apart by the partitions they poll, never by GET_ME."""
    if reply.body is None:
        return []
    return [(int(m["id"]), sorted(int(p) for p in m["partitions"])) for m in reply.body["members"]]


def partitions_held(reply: Reply) -> list[int]:
    """Every partition the listed members hold, sorted, once per list it is in."""
    return sorted(p for _, parts in members(reply) for p in parts)
