"""Iggy for the cross-protocol check (:class:`conformance.plugin.Messaging`), sans-IO.

Iggy owns its topics (``owns_topics``): a topic is visible to it only as (stream, topic),
so every pair with Iggy has its topic created here.  Runs on a session the plug-in's
opener has logged in (classic).

* create: CREATE_STREAM named ``base``, then CREATE_TOPIC ``base`` with one partition in
  it (doc: the ids are the client's, drawn at random); returns the shared name
  ``iggy.<stream id>.<topic id>`` (:func:`~.broker_state.engine_topic`).
* produce: the stream and topic ids are read back from the shared name; GET_TOPIC gives
  partition 0's message count (the offset the next message gets), one SEND_MESSAGES to
  partition id 0 carries every value with an id of our own (SEND_MESSAGES is answered an
  empty OK, without offsets), and a POLL from that offset finds each id's offset.
* consume: POLL_MESSAGES of partition id 0 by offset (consumer 1, no auto-commit), again
  from the next offset until ``count`` messages are read or a poll returns none.

Iggy partition id ``p`` is the shared topic's partition ``p`` (docs/cross-protocol.md).
A reply with a non-zero status raises :class:`MessagingRefused` with its name.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from conformance.plugin import Messaging, MessagingRefused
from conformance.protocols.iggy import codec
from conformance.protocols.iggy.broker_state import engine_topic, parse_engine_topic
from conformance.protocols.iggy.errors import NAMES as STATUS_NAMES
from conformance.protocols.iggy.errors import IggyError
from conformance.protocols.iggy.messages import CODES, identifier

FRAMING = codec.IggyFraming()
POLL_MAX = 1000


class IggyMessaging:
    def __init__(self, revision: str) -> None:
        self.revision = revision
        self.classic = revision != "doc"

    def _call(self, name: str, body: Mapping[str, Any]) -> Generator[bytes, bytes, Any]:
        payload = codec.U32.pack(CODES[name]) + codec.encode_request(name, body, self.revision)
        reply = yield FRAMING.frame(payload)
        try:
            status, data = codec.split_reply(reply)
            if status != 0:
                why = STATUS_NAMES.get(status, "unknown status")
                raise MessagingRefused(f"{name.upper()} was answered status {status} ({why})")
            return codec.decode_reply(name, data, self.revision)
        except IggyError as exc:
            raise MessagingRefused(f"{name.upper()}: the reply does not decode: {exc}") from None

    def _partition(self) -> dict[str, Any]:
        if self.classic:
            return {"partition_flag": 1, "partition_id": 0}
        return {"partition_id": 0}

    def _ids(self, topic: str) -> tuple[int, int]:
        ids = parse_engine_topic(topic)
        if ids is None:
            raise MessagingRefused(
                f"{topic!r} is not a shared name of an Iggy topic (iggy.<stream id>.<topic id>)"
            )
        return ids

    def create(self, base: str) -> Generator[bytes, bytes, str]:
        if self.classic:
            stream = yield from self._call("create_stream", {"name": base})
            sid = int(stream["id"])
            body: dict[str, Any] = {"compression": 1, "message_expiry": 0, "max_topic_size": 0}
            body["replication_factor"] = 1
        else:
            sid = secrets.randbelow(2**31 - 1) + 1
            yield from self._call("create_stream", {"stream_id": sid, "name": base})
            body = {"topic_id": secrets.randbelow(2**31 - 1) + 1}
        topic_body = {**body, "stream": identifier(sid), "partitions_count": 1, "name": base}
        topic = yield from self._call("create_topic", topic_body)
        tid = int(topic["id"]) if self.classic else int(body["topic_id"])
        return engine_topic(sid, tid)

    def _poll(
        self, sid: int, tid: int, offset: int, count: int
    ) -> Generator[bytes, bytes, list[dict[str, Any]]]:
        body = {
            "consumer": {"kind": 1, "value": identifier(0) if self.classic else 0},
            "stream": identifier(sid),
            "topic": identifier(tid),
            **self._partition(),
            "strategy": {"kind": 1, "value": offset},
            "count": count,
            "auto_commit": False,
        }
        got = yield from self._call("poll_messages", body)
        return [m for m in got["messages"] if int(m["offset"]) >= offset]

    def produce(self, topic: str, values: Sequence[bytes]) -> Generator[bytes, bytes, list[int]]:
        sid, tid = self._ids(topic)
        head = {"stream": identifier(sid), "topic": identifier(tid)}
        details = yield from self._call("get_topic", head)
        parts = [p for p in details["partitions"] if int(p["id"]) == 0]
        if not parts:
            raise MessagingRefused(f"GET_TOPIC of {topic}: the topic has no partition id 0")
        start = int(parts[0]["messages_count"])
        ids = [uuid.uuid4().int or 1 for _ in values]
        messages: list[dict[str, Any]] = [
            {"id": i, "payload": bytes(v)} for i, v in zip(ids, values, strict=True)
        ]
        if self.classic:
            messages = [{**m, "origin_timestamp": 0, "headers": b""} for m in messages]
        send = {**head, "partitioning": {"kind": 2, "value": 0}, "messages": messages}
        yield from self._call("send_messages", send)
        found: dict[int, int] = {}
        offset = start
        while len(found) < len(ids):
            polled = yield from self._poll(sid, tid, offset, POLL_MAX)
            if not polled:
                break
            for m in polled:
                found.setdefault(int(m["id"]), int(m["offset"]))
            offset = int(polled[-1]["offset"]) + 1
        missing = [i for i in ids if i not in found]
        if missing:
            raise MessagingRefused(
                f"SEND_MESSAGES to {topic} was answered OK, but {len(missing)} of the "
                f"{len(ids)} messages are not found from offset {start}"
            )
        return [found[i] for i in ids]

    def consume(
        self, topic: str, offset: int, count: int
    ) -> Generator[bytes, bytes, list[tuple[int, bytes]]]:
        sid, tid = self._ids(topic)
        polled = yield from self._poll(sid, tid, offset, count)
        return [(int(m["offset"]), bytes(m["payload"])) for m in polled]


def messaging(options: Mapping[str, Any], revision: str) -> Messaging:
    m = IggyMessaging(revision)
    return Messaging(produce=m.produce, consume=m.consume, create=m.create, owns_topics=True)
