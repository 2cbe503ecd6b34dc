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
  CM/utils/hash.rs), the next free number on a (rare) collision;
* group members: numbered per group (:class:`GroupEntry`), each number mapped to its
  client; the engine knows the member by the padded number (:func:`member_key`).

Engine names (:func:`engine_topic`, :func:`engine_group`), by ids, so a name never needs
escaping: a topic is ``iggy.<stream id>.<topic id>``, its *shared name*, the one every
other protocol of the broker uses for it (docs/cross-protocol.md: a legal Kafka topic
name, so no ``/``); a group is ``iggy/<stream id>/<topic id>/<group id>`` (groups are not
shared).  Iggy partition id ``p`` is the engine topic's partition ``p``.  Names of the
form ``iggy.<digits>.<digits>`` are Iggy's: a new topic gets the lowest free id whose
shared name is not taken by a topic another protocol made, and recovery removes such a
topic that has no Iggy key (see below).

Durable with ``serve --data-dir``: every change to a stream, topic, group or stored offset
is written through at once to the engine's metadata store (:meth:`Engine.put_meta`), one
small key per item (:data:`LAYOUT`), and a broker started on the same directory rebuilds
the registry from those keys and the engine's ``iggy.`` topics and ``iggy/`` groups
(:meth:`Registry.recover`).  The partition sizes are not stored: they are added up from
the records when first asked for, and brought up to date from the records appended since
(over any protocol) each time (:func:`~.broker_messages.partition_size`).  Not durable:
clients, group membership (a member leaves when its connection ends; the engine's
recovery drops every connection-bound member), a member's turn among its partitions, and
the broker's start time.  Without ``--data-dir`` the
engine keeps the same keys in memory.

Writes go in the order that leaves a crash between two of them harmless: the engine's
topic or group before the key naming it, and on deletion the key before the rest, so what
recovery finds without its key (an engine topic, group or partition, or a key whose
stream, topic or group has gone) was never acknowledged, or was deleted: it is removed.
Stored consumer offsets (both consumer kinds) are keys of their own, not the engine's
committed offsets: Iggy deletes them (DELETE_CONSUMER_OFFSET), which the engine has no
operation for.

Iggy's per-message data in an engine :class:`~conformance.engine.Record`: ``value`` is
the payload, ``key`` None, ``timestamp_ms`` the server timestamp in ms, and four reserved
headers (:data:`ID`, :data:`ORIGIN`, :data:`TIMESTAMP`, :data:`USER_HEADERS`): the u128
id (16 bytes LE), the origin timestamp and the server timestamp in µs (8 bytes LE each),
and the user-header block as the client sent it.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import xxhash

from conformance.engine import Creation, Engine, GroupPolicy, MemberIds, NewRecord, Reaping
from conformance.engine import Record as EngineRecord

log = logging.getLogger("conformance.iggy")

ID, ORIGIN, TIMESTAMP, USER_HEADERS = "iggy.id", "iggy.origin_ts", "iggy.ts_us", "iggy.headers"
PREFIX = "iggy/"
"""Of the metadata keys and the engine's group names."""
TOPIC_PREFIX = "iggy."
"""Of the engine's topic names (:func:`engine_topic`)."""
_ENGINE_TOPIC = re.compile(r"iggy\.(0|[1-9][0-9]{0,9})\.(0|[1-9][0-9]{0,9})")
LAYOUT = {
    "iggy/<stream>": 'stream, JSON {"name", "created_at"}',
    "iggy/<stream>/<topic>": "topic, JSON: name, created_at, compression, message_expiry, "
    "max_topic_size, replication_factor, partitions (runs of [created_at, count])",
    "iggy/<stream>/<topic>/balanced": "the balanced-partitioning counter, decimal",
    "iggy/<stream>/<topic>/g/<group>": 'group, JSON {"name"}',
    "iggy/<stream>/<topic>/o/<kind>/<partition>/<n|s><id>": "a stored offset, decimal; "
    "the consumer's id numeric (n) or a string (s)",
}
"""The metadata keys (ids in decimal) and their values."""
ROOT_USER_ID = 0
"""The root user's id (CM/http/users/defaults.rs ``DEFAULT_ROOT_USER_ID``)."""
TCP = 1

GROUP_POLICY = GroupPolicy(
    member_ids=MemberIds.GIVEN,
    reaping=Reaping.CONNECTION,
    creation=Creation.EXPLICIT,
    assignor="roundrobin",
)
"""Iggy's row of the engine's group table: the member is the group's member number
(padded by :func:`member_key`; which client it is, :attr:`GroupEntry.members` says), it
leaves when its connection ends (the session leaves the groups it joined), groups are made
by CREATE_CONSUMER_GROUP only, and partitions are dealt round-robin over the members in
member-number order (SPEC.md IGG-GROUP-10: our convention; the real server deals
round-robin in its members' slab order after a leave, and cooperatively after a join:
SV/metadata/consumer_group.rs ``rebalance_members``, ``rebalance_cooperative``)."""


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
    """A topic's shared name, ``iggy.<stream id>.<topic id>``."""
    return f"{TOPIC_PREFIX}{stream_id}.{topic_id}"


def parse_engine_topic(name: str) -> tuple[int, int] | None:
    """(stream id, topic id) of a shared name :func:`engine_topic` wrote, else None."""
    m = _ENGINE_TOPIC.fullmatch(name)
    return None if m is None else (int(m.group(1)), int(m.group(2)))


def engine_group(stream_id: int, topic_id: int, group_id: int) -> str:
    return f"{PREFIX}{stream_id}/{topic_id}/{group_id}"


def member_key(member: int) -> str:
    """A group's member number as the engine's member id: padded, so that the engine's
    order (member ids sorted as strings) is numeric order."""
    return f"{member:010d}"


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
    """A stored record as Iggy sees it; a record another protocol wrote has none of the
    reserved headers: id 0, both timestamps the record's (ms as µs), the value (None as
    empty) and no user headers (docs/cross-protocol.md)."""
    h = {name: value or b"" for name, value in record.headers}
    engine_us = record.timestamp_ms * 1000
    return Stored(
        record.offset,
        int.from_bytes(h.get(ID, b""), "little"),
        int.from_bytes(h[ORIGIN], "little") if ORIGIN in h else engine_us,
        int.from_bytes(h.get(TIMESTAMP, b""), "little") or engine_us,
        record.value or b"",
        h.get(USER_HEADERS, b""),
    )


# ------------------------------------------------------------------ registry

OffsetKey = tuple[int, object, int]  # (consumer kind, consumer id value, partition)


@dataclass
class GroupEntry:
    """A consumer group.  Its members are numbered within it as the real server numbers
    them (SV/metadata/absorb.rs ``JoinConsumerGroup``): a joining client gets one more than
    the highest member number in the group, 0 when it has none.  Not durable."""

    id: int
    name: str
    members: dict[int, int] = field(default_factory=dict)  # member number -> client id
    cursors: dict[int, int] = field(default_factory=dict)  # member -> next of its partitions

    def member_of(self, client_id: int) -> int | None:
        return next((m for m, c in self.members.items() if c == client_id), None)

    def next_member(self) -> int:
        return max(self.members, default=-1) + 1


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
    counted: list[int] = field(default_factory=list)  # of each, the first offset not in sizes
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
    engine: Engine
    streams: dict[int, StreamEntry] = field(default_factory=dict)
    clients: dict[int, ClientEntry] = field(default_factory=dict)
    started_us: int = field(default_factory=now_us)

    # ------------------------------------------------------------ writing through

    def _put(self, key: str, value: object) -> None:
        raw = value if value is None or isinstance(value, bytes) else _json(value)
        self.engine.put_meta(key, raw)

    def _drop_under(self, key: str) -> None:
        """Remove ``key`` first, then every key under it."""
        self.engine.put_meta(key, None)
        for k in self.engine.meta(key + "/"):
            self.engine.put_meta(k, None)

    def save_stream(self, s: StreamEntry) -> None:
        self._put(f"{PREFIX}{s.id}", {"name": s.name, "created_at": s.created_at})

    def save_topic(self, s: StreamEntry, t: TopicEntry) -> None:
        runs: list[list[int]] = []
        for created in t.partitions:
            if runs and runs[-1][0] == created:
                runs[-1][1] += 1
            else:
                runs.append([created, 1])
        fields = ("name", "created_at", "compression", "message_expiry", "max_topic_size")
        value = {f: getattr(t, f) for f in (*fields, "replication_factor")}
        self._put(f"{PREFIX}{s.id}/{t.id}", {**value, "partitions": runs})

    def save_balanced(self, s: StreamEntry, t: TopicEntry) -> None:
        self._put(f"{PREFIX}{s.id}/{t.id}/balanced", b"%d" % t.balanced)

    def save_group(self, s: StreamEntry, t: TopicEntry, g: GroupEntry) -> None:
        self._put(f"{PREFIX}{s.id}/{t.id}/g/{g.id}", {"name": g.name})

    def save_offset(self, s: StreamEntry, t: TopicEntry, key: OffsetKey) -> None:
        """Write ``t.offsets[key]``, or remove the key when there is none."""
        kind, who, p = key
        tag = f"n{who}" if isinstance(who, int) else f"s{who}"
        stored = t.offsets.get(key)
        self._put(
            f"{PREFIX}{s.id}/{t.id}/o/{kind}/{p}/{tag}", None if stored is None else b"%d" % stored
        )

    def forget_stream(self, s: StreamEntry) -> None:
        self._drop_under(f"{PREFIX}{s.id}")

    def forget_topic(self, s: StreamEntry, t: TopicEntry) -> None:
        self._drop_under(f"{PREFIX}{s.id}/{t.id}")

    def forget_group(self, s: StreamEntry, t: TopicEntry, g: GroupEntry) -> None:
        """The group's key, then its offsets (removed from ``t.offsets`` too)."""
        self._put(f"{PREFIX}{s.id}/{t.id}/g/{g.id}", None)
        self._forget_offsets(s, t, lambda k: k[:2] == (2, g.id))

    def forget_partitions_from(self, s: StreamEntry, t: TopicEntry, left: int) -> None:
        """The offsets stored on partitions ``left`` and after."""
        self._forget_offsets(s, t, lambda k: k[2] >= left)

    def _forget_offsets(
        self, s: StreamEntry, t: TopicEntry, gone: Callable[[OffsetKey], bool]
    ) -> None:
        for key in [k for k in t.offsets if gone(k)]:
            del t.offsets[key]
            self.save_offset(s, t, key)

    # ------------------------------------------------------------ recovery

    def recover(self) -> None:
        """Rebuild streams, topics, groups and offsets from the engine's metadata, then
        remove what has no key (see the module doc) and add up the partition sizes."""
        items = [(_parse(k[len(PREFIX) :]), k, v) for k, v in self.engine.meta(PREFIX).items()]
        items.sort(key=lambda item: (len(item[0]), item[0][:5]))  # parents first
        for path, key, value in items:
            try:
                kept = self._restore(path, value)
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("iggy: metadata key %r is unreadable (%s); left as it is", key, exc)
                continue
            if not kept:
                self.engine.put_meta(key, None)
        self._reconcile()

    def _restore(self, path: tuple[Any, ...], raw: bytes) -> bool:
        """Install one key's item; False if what it belongs to is gone."""
        if not path:
            raise ValueError("not a key of this layout")
        stream = self.streams.get(path[0])
        if len(path) == 2:  # (stream, value)
            self.streams[path[0]] = StreamEntry(path[0], **json.loads(raw))
            return True
        topic = None if stream is None else stream.topics.get(path[1])
        if len(path) == 3 and path[2] == "" and stream is not None:  # (stream, topic, "")
            v = json.loads(raw)
            runs = v.pop("partitions")
            created = [c for c, n in runs for _ in range(n)]
            stream.topics[path[1]] = TopicEntry(path[1], **v, partitions=created)
            return True
        if topic is None:
            return False
        what = path[2]
        if what == "balanced":
            topic.balanced = int(raw)
        elif what == "g":
            topic.groups[path[3]] = GroupEntry(path[3], json.loads(raw)["name"])
        else:  # ("o", kind, partition, who)
            kind, p, who = path[3], path[4], path[5]
            if p >= len(topic.partitions) or (kind == 2 and who not in topic.groups):
                return False
            topic.offsets[(kind, who, p)] = int(raw)
        return True

    def _reconcile(self) -> None:
        engine = self.engine
        topics = {
            engine_topic(s.id, t.id): (s, t)
            for s in self.streams.values()
            for t in s.topics.values()
        }
        groups = {
            engine_group(s.id, t.id, g.id): (s, t)
            for s, t in topics.values()
            for g in t.groups.values()
        }
        for g in engine.list_groups():
            if g.name.startswith(PREFIX) and g.name not in groups:
                engine.delete_group(g.name)
        for info in engine.list_topics():
            if parse_engine_topic(info.name) is not None and info.name not in topics:
                engine.delete_topic(info.name)
        for name, (s, t) in topics.items():
            if not engine.has_topic(name):  # cannot happen in the write order: kept empty
                engine.create_topic(name, len(t.partitions), min_partitions=0)
            extra = engine.topic(name).partitions - len(t.partitions)
            if extra > 0:  # added, not acknowledged; or deleted, key written first
                engine.remove_partitions(name, extra)
            elif extra < 0:
                del t.partitions[extra:]
                self.save_topic(s, t)
                self.forget_partitions_from(s, t, len(t.partitions))
            t.sizes, t.counted = [0] * len(t.partitions), [0] * len(t.partitions)
        known = {g.name for g in engine.list_groups()}
        for name, (s, t) in groups.items():
            if name not in known:  # cannot happen in the write order: made again
                engine.create_group(name, engine_topic(s.id, t.id), policy=GROUP_POLICY)

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


def _json(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _parse(rest: str) -> tuple[Any, ...]:
    """A key's path after ``iggy/``, ids as ints: (stream, ""), (stream, topic, ""), (stream,
    topic, "balanced"), (stream, topic, "g", group), (stream, topic, "o", kind, partition,
    who); () for a key not of :data:`LAYOUT`."""
    parts = rest.split("/", 5)
    try:
        ids = [int(x) for x in parts[:2]]
        if len(parts) <= 2:
            return (*ids, "")
        if parts[2] == "balanced" and len(parts) == 3:
            return (*ids, "balanced")
        if parts[2] == "g" and len(parts) == 4:
            return (*ids, "g", int(parts[3]))
        if parts[2] == "o" and len(parts) == 6 and parts[5][:1] in ("n", "s"):
            tag, who = parts[5][0], parts[5][1:]
            return (*ids, "o", int(parts[3]), int(parts[4]), int(who) if tag == "n" else who)
    except ValueError:
        pass
    return ()
