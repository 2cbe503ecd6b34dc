"""The Iggy front-end's own state: streams, topics, groups, clients and stored offsets.

The engine knows topics by one name and partitions by number; Iggy addresses a topic as
(stream, topic), each by a numeric or a string Identifier, and keeps metadata the engine
has no field for.  This registry holds that, in memory:

* a stream: id, name, created_at (µs), its topics; a topic: id, name, created_at,
  compression, message_expiry, max_topic_size, replication_factor (as the client sent
  them), one created_at per partition, its balanced-partitioning counter, its groups and
  its stored consumer offsets;
* ids: classic: the lowest id not in use, from 0 (the real server keeps streams, topics
  and groups in slabs, which reuse a freed slot: SV/metadata/inner.rs, stream.rs,
  topic.rs); doc: the id the client gave;
* clients: one per connection, its id XXH32(seed 0) of the peer address ``host:port`` as
  the real server computes it (SV/streaming/clients/client_manager.rs ``add_client``,
  CM/utils/hash.rs), the next free number on a (rare) collision.

Engine names (:func:`engine_topic`, :func:`engine_group`): ``iggy/<stream id>/<topic id>``
and ``iggy/<stream id>/<topic id>/<group id>``, by ids, so a name never needs escaping.

Not durable: the registry lives in memory; with ``serve --data-dir`` the engine keeps its
records, but a restarted broker has no streams, and :meth:`Registry.drop_stale` deletes
the engine topics and groups under ``iggy/`` a previous run left, before the first
request.  Stored consumer offsets (both consumer kinds) live here too, not in the engine's
committed offsets: Iggy deletes them (DELETE_CONSUMER_OFFSET), which the engine has no
operation for.

Iggy's per-message data in an engine :class:`~conformance.engine.Record`: ``value`` is
the payload, ``key`` None, ``timestamp_ms`` the server timestamp in ms, and four reserved
headers (:data:`ID`, :data:`ORIGIN`, :data:`TIMESTAMP`, :data:`USER_HEADERS`): the u128
id (16 bytes LE), the origin timestamp and the server timestamp in µs (8 bytes LE each),
and the user-header block as the client sent it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import xxhash

from conformance.engine import Creation, Engine, GroupPolicy, MemberIds, NewRecord, Reaping
from conformance.engine import Record as EngineRecord

ID, ORIGIN, TIMESTAMP, USER_HEADERS = "iggy.id", "iggy.origin_ts", "iggy.ts_us", "iggy.headers"
PREFIX = "iggy/"
ROOT_USER_ID = 0
"""The root user's id (CM/http/users/defaults.rs ``DEFAULT_ROOT_USER_ID``)."""
TCP = 1

GROUP_POLICY = GroupPolicy(
    member_ids=MemberIds.GIVEN,
    reaping=Reaping.CONNECTION,
    creation=Creation.EXPLICIT,
    assignor="roundrobin",
)
"""Iggy's row of the engine's group table: the member is the client (its id padded by
:func:`member_id`), it leaves when its connection ends, groups are made by
CREATE_CONSUMER_GROUP only, and partitions are dealt round-robin over the members in
client-id order (the real server deals round-robin too, in its members' slab order:
SV/metadata/consumer_group.rs ``rebalance_members``)."""


class Refusal(Exception):
    """A request answered with error ``status`` (no payload)."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status


def identifier(value: object) -> tuple[int, object]:
    """(kind, value) of an Identifier dict, or of a bare u32 (doc's ids): numeric."""
    if isinstance(value, dict):
        return int(value.get("kind", 0)), value.get("value")
    return 1, value


def now_us() -> int:
    return time.time_ns() // 1000


def engine_topic(stream_id: int, topic_id: int) -> str:
    return f"{PREFIX}{stream_id}/{topic_id}"


def engine_group(stream_id: int, topic_id: int, group_id: int) -> str:
    return f"{PREFIX}{stream_id}/{topic_id}/{group_id}"


def member_id(client_id: int) -> str:
    """A client id as the engine's member id: padded, so string order is numeric order."""
    return f"{client_id:010d}"


def lowest_free(used: object) -> int:
    n = 0
    while n in used:  # type: ignore[operator]
        n += 1
    return n


# ------------------------------------------------------------------ messages


def to_record(
    msg_id: int, origin: int, timestamp_us: int, payload: bytes, headers: bytes
) -> NewRecord:
    return NewRecord(
        key=None,
        value=payload,
        headers=(
            (ID, msg_id.to_bytes(16, "little")),
            (ORIGIN, origin.to_bytes(8, "little")),
            (TIMESTAMP, timestamp_us.to_bytes(8, "little")),
            (USER_HEADERS, headers),
        ),
        timestamp_ms=timestamp_us // 1000,
    )


@dataclass(frozen=True)
class Stored:
    """A stored message as Iggy sees it."""

    offset: int
    id: int
    origin_timestamp: int
    timestamp: int
    payload: bytes
    headers: bytes

    @property
    def size(self) -> int:
        return 64 + len(self.payload) + len(self.headers)


def from_record(record: EngineRecord) -> Stored:
    h = {name: value or b"" for name, value in record.headers}
    return Stored(
        record.offset,
        int.from_bytes(h.get(ID, b""), "little"),
        int.from_bytes(h.get(ORIGIN, b""), "little"),
        int.from_bytes(h.get(TIMESTAMP, b""), "little") or record.timestamp_ms * 1000,
        record.value or b"",
        h.get(USER_HEADERS, b""),
    )


# ------------------------------------------------------------------ registry

OffsetKey = tuple[int, object, int]  # (consumer kind, consumer id value, partition)


@dataclass
class GroupEntry:
    id: int
    name: str
    cursors: dict[int, int] = field(default_factory=dict)  # client -> next of its partitions


@dataclass
class TopicEntry:
    id: int
    name: str
    created_at: int
    compression: int
    message_expiry: int
    max_topic_size: int
    replication_factor: int
    partitions: list[int] = field(default_factory=list)  # created_at of each
    sizes: list[int] = field(default_factory=list)  # bytes stored in each (64 + payload + headers)
    balanced: int = 0
    groups: dict[int, GroupEntry] = field(default_factory=dict)
    offsets: dict[OffsetKey, int] = field(default_factory=dict)


@dataclass
class StreamEntry:
    id: int
    name: str
    created_at: int
    topics: dict[int, TopicEntry] = field(default_factory=dict)


@dataclass
class ClientEntry:
    id: int
    address: str
    user_id: int | None = None


@dataclass
class Registry:
    streams: dict[int, StreamEntry] = field(default_factory=dict)
    clients: dict[int, ClientEntry] = field(default_factory=dict)
    started_us: int = field(default_factory=now_us)

    def drop_stale(self, engine: Engine) -> None:
        """Delete what a previous run left under ``iggy/`` (see the module doc)."""
        for g in engine.list_groups():
            if g.name.startswith(PREFIX):
                engine.delete_group(g.name)
        for t in engine.list_topics():
            if t.name.startswith(PREFIX):
                engine.delete_topic(t.name)

    def add_client(self, address: str) -> ClientEntry:
        cid = xxhash.xxh32_intdigest(address.encode(), 0)
        while cid in self.clients:
            cid = (cid + 1) & 0xFFFFFFFF
        client = ClientEntry(cid, address)
        self.clients[cid] = client
        return client

    def stream_by(self, kind: int, value: object, names: bool = True) -> StreamEntry | None:
        if kind == 1:
            return self.streams.get(value) if isinstance(value, int) else None
        if not names:
            return None
        return next((s for s in self.streams.values() if s.name == value), None)

    @staticmethod
    def topic_by(
        stream: StreamEntry, kind: int, value: object, names: bool = True
    ) -> TopicEntry | None:
        if kind == 1:
            return stream.topics.get(value) if isinstance(value, int) else None
        if not names:
            return None
        return next((t for t in stream.topics.values() if t.name == value), None)

    @staticmethod
    def group_by(
        topic: TopicEntry, kind: int, value: object, names: bool = True
    ) -> GroupEntry | None:
        if kind == 1:
            return topic.groups.get(value) if isinstance(value, int) else None
        if not names:
            return None
        return next((g for g in topic.groups.values() if g.name == value), None)
