"""Incremental fetch sessions (KIP-227): the broker's session cache and its rules.

Sans-IO: nothing here reads a log or a socket; time comes in as milliseconds (the Fetch
handler passes ``broker.clock``).  The Fetch handler asks :func:`resolve` which
partitions a request reads (:attr:`FetchContext.topics`) and gives the answer it built
to :meth:`FetchContext.shape`, which sets the session id and, in an incremental fetch,
leaves out what did not change.  The rules, as Apache Kafka's ``FetchManager.newContext``,
``FetchSessionCacheShard`` and ``CachedPartition`` (core/.../server/FetchSession.scala)
and ``FetchMetadata`` (clients) apply them:

* Fetch v0-6 carry no session: id 0, epoch -1 (``FetchMetadata.LEGACY``).
* Epoch 0 or -1 is a full fetch; a full fetch naming a session id closes that session.
  Epoch -1 (FINAL) is then answered without a session (id 0); epoch 0 (INITIAL) creates a
  session of the partitions answered when the cache has room (or can evict one), its id
  (> 0) in the answer and its next epoch 1; without room the answer says id 0.
* Any other epoch is incremental: an unknown id is FETCH_SESSION_ID_NOT_FOUND (70), an
  epoch other than the session's next one INVALID_FETCH_SESSION_EPOCH (71), a version on
  the other side of v13 from the one that created the session (topic ids or names)
  FETCH_SESSION_TOPIC_ID_ERROR (106); each with session id 0 and no partitions.  Else the
  partitions named are added or updated, the forgotten ones removed, the session touched
  and its epoch advanced (after 2^31-1 comes 1), and every partition of the session is
  read, with the request parameters it last came with (its fetch offset too: the broker
  does not advance it).  A session left with no partition is closed and the fetch
  answered without one.
* An incremental answer holds a partition only if it has records, an error, or a high
  watermark or log start offset other than last answered (an error also forgets the
  high watermark, so the partition comes back when it clears); a partition that returned
  records moves to the end of the session's order.  If another fetch of the same session
  advanced the epoch meanwhile, the answer is INVALID_FETCH_SESSION_EPOCH with the
  session's id.
* The cache holds ``slots`` sessions (max.incremental.fetch.session.cache.slots, 1000).
  A new session when it is full evicts the least recently used one if that was unused
  for over 120 s (MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS); else the least valuable
  evictable one (ordered by privileged, size, id) if the new one is worth more
  (privileged: a follower's, replica id >= 0; or more partitions).  Evictable, as of its
  last use: by anyone, a session created over 120 s before; by a privileged one, also
  any unprivileged session.  Kafka 3.8+ splits the cache into 8 shards, each with an
  eighth of the slots, and evicts within a shard; this broker keeps one.

Both revisions keep sessions (pgcdc's document says nothing of them; in revision ``doc``
Fetch v7-11 carry them).  A quirk that bends these rules lives in
:mod:`.quirks_fetch_sessions`, never here.
"""

from __future__ import annotations

import random
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.protocols.kafka.errors import code

if TYPE_CHECKING:
    from conformance.protocols.kafka.codec import Request
    from conformance.protocols.kafka.context import Broker

SLOTS = 1000
"""max.incremental.fetch.session.cache.slots, Kafka's default (ServerConfigs)."""
EVICTION_MS = 120_000
"""KafkaServer.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS."""
INVALID_SESSION_ID, INITIAL_EPOCH, FINAL_EPOCH = 0, 0, -1
INT32_MAX = 0x7FFFFFFF
ZERO_ID = "00000000-0000-0000-0000-000000000000"

Key = tuple[str, int]
"""A session's partition: (topic id, index) from v13, (topic name, index) before."""


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (``FetchMetadata.nextEpoch``)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT32_MAX else epoch + 1


@dataclass
class Cached:
    """A partition of a session: the request fields it last came with, and what was last
    answered for it (``CachedPartition``)."""

    topic: str
    topic_id: str
    request: dict[str, Any]
    high_watermark: int = -1
    log_start_offset: int = -1

    def must_answer(self, part: dict[str, Any]) -> bool:
        """Whether an incremental answer holds ``part``; remembers what it says."""
        must = bool(part.get("records")) or int(part.get("preferred_read_replica", -1)) >= 0
        if self.high_watermark != part.get("high_watermark", -1):
            must, self.high_watermark = True, int(part.get("high_watermark", -1))
        if self.log_start_offset != part.get("log_start_offset", -1):
            must, self.log_start_offset = True, int(part.get("log_start_offset", -1))
        if part.get("error_code", 0) != 0:
            must, self.high_watermark = True, -1
        diverging = part.get("diverging_epoch") or {}
        return must or int(diverging.get("epoch", -1)) >= 0


@dataclass
class Session:
    id: int
    privileged: bool
    uses_topic_ids: bool
    created_ms: int
    epoch: int
    partitions: dict[Key, Cached]
    last_used_ms: int = 0
    cached_size: int = -1
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False

    @property
    def evictable_key(self) -> tuple[bool, int, int]:
        return (self.privileged, self.cached_size, self.id)


class SessionCache:
    """The broker's fetch sessions, at most ``slots`` (``FetchSessionCacheShard``)."""

    def __init__(
        self, slots: int = SLOTS, eviction_ms: int = EVICTION_MS, seed: int | None = None
    ) -> None:
        self.slots = slots
        self.eviction_ms = eviction_ms
        self.sessions: dict[int, Session] = {}
        self.evictions = 0
        self._random = random.Random(seed)

    def get(self, session_id: int) -> Session | None:
        return self.sessions.get(session_id)

    def remove(self, session_id: int) -> Session | None:
        return self.sessions.pop(session_id, None)

    def new_id(self) -> int:
        while True:
            sid = self._random.randrange(1, INT32_MAX)
            if sid not in self.sessions:
                return sid

    def touch(self, session: Session, now_ms: int) -> None:
        """Mark ``session`` used at ``now_ms``; its size and evictability as of now."""
        session.last_used_ms = now_ms
        session.cached_size = len(session.partitions)
        old = now_ms - session.created_ms > self.eviction_ms
        session.evictable_by_privileged = old or not session.privileged
        session.evictable_by_all = old

    def create(
        self,
        now_ms: int,
        privileged: bool,
        uses_topic_ids: bool,
        partitions: dict[Key, Cached],
    ) -> int:
        """A new session of ``partitions`` if there is room (or one can be evicted): its
        id, else :data:`INVALID_SESSION_ID`."""
        if len(self.sessions) >= self.slots and not self._evict(
            privileged, len(partitions), now_ms
        ):
            return INVALID_SESSION_ID
        session = Session(
            self.new_id(), privileged, uses_topic_ids, now_ms, next_epoch(INITIAL_EPOCH), partitions
        )
        self.sessions[session.id] = session
        self.touch(session, now_ms)
        return session.id

    def _evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        if not self.sessions:
            return False
        stalest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stalest.last_used_ms > self.eviction_ms:
            return self._evicted(stalest)
        pool = [
            s
            for s in self.sessions.values()
            if (s.evictable_by_privileged if privileged else s.evictable_by_all)
        ]
        if not pool:
            return False
        cheapest = min(pool, key=lambda s: s.evictable_key)
        if (privileged, size, 0) < cheapest.evictable_key:
            return False
        return self._evicted(cheapest)

    def _evicted(self, session: Session) -> bool:
        del self.sessions[session.id]
        self.evictions += 1
        return True


# ------------------------------------------------------------------ one request


@dataclass
class FetchContext:
    """What one Fetch reads and how its answer is shaped: ``kind`` is ``sessionless``,
    ``full``, ``incremental`` or ``error`` (``error`` names the session error)."""

    kind: str
    topics: list[dict[str, Any]]
    version: int
    clock_ms: Callable[[], int]
    cache: SessionCache
    error: str = "NONE"
    privileged: bool = False
    session: Session | None = None
    expected_epoch: int = 0
    requested: dict[Key, Cached] = field(default_factory=dict)

    @property
    def refused(self) -> bool:
        """A session error: answered at once, with no partition."""
        return self.kind == "error"

    def shape(self, reply: dict[str, Any]) -> dict[str, Any]:
        """The handler's answer with the session's id (and, incremental, its changes)."""
        if self.kind == "error":
            return _refusal(reply, self.error, INVALID_SESSION_ID)
        if self.kind == "sessionless":
            return {**reply, "session_id": INVALID_SESSION_ID}
        if self.kind == "full":
            return {**reply, "session_id": self._create(reply)}
        session = self.session
        assert session is not None
        if session.epoch != self.expected_epoch:  # a fetch of the same session overtook this
            return _refusal(reply, "INVALID_FETCH_SESSION_EPOCH", session.id)
        kept = []
        for t in reply.get("responses", []):
            parts = []
            for p in t.get("partitions", []):
                key = _key(session.uses_topic_ids, t, int(p.get("partition_index", 0)))
                cached = session.partitions.get(key)
                if cached is None or cached.must_answer(p):
                    parts.append(p)
                    if cached is not None and p.get("records"):
                        session.partitions[key] = session.partitions.pop(key)  # to the end
            if parts:
                kept.append({**t, "partitions": parts})
        return {**reply, "session_id": session.id, "responses": kept}

    def _create(self, reply: dict[str, Any]) -> int:
        ids = self.version >= 13
        partitions: dict[Key, Cached] = {}
        for t in reply.get("responses", []):
            for p in t.get("partitions", []):
                key = _key(ids, t, int(p.get("partition_index", 0)))
                asked = self.requested.get(key)
                request = asked.request if asked is not None else {"partition": key[1]}
                partitions[key] = Cached(
                    str(t.get("topic", "")),
                    str(t.get("topic_id", ZERO_ID)),
                    request,
                    int(p.get("high_watermark", -1)),
                    int(p.get("log_start_offset", -1)),
                )
        return self.cache.create(self.clock_ms(), self.privileged, ids, partitions)


def _refusal(reply: dict[str, Any], error: str, session_id: int) -> dict[str, Any]:
    return {**reply, "error_code": code(error), "session_id": session_id, "responses": []}


def _key(uses_topic_ids: bool, topic: Any, index: int) -> Key:
    if uses_topic_ids:
        return (str(topic.get("topic_id", ZERO_ID)), index)
    return (str(topic.get("topic", "")), index)


def _requested(version: int, topics: Iterable[Any]) -> dict[Key, Cached]:
    """The partitions a request names, by key, in order (the last of duplicates wins)."""
    out: dict[Key, Cached] = {}
    for t in topics:
        name, tid = str(t.get("topic", "")), str(t.get("topic_id", ZERO_ID))
        for p in t.get("partitions", []):
            out[_key(version >= 13, t, int(p.get("partition", 0)))] = Cached(name, tid, dict(p))
    return out


def _forgotten(version: int, body: dict[str, Any]) -> list[Key]:
    return [
        _key(version >= 13, t, int(index))
        for t in body.get("forgotten_topics_data") or []
        for index in t.get("partitions") or []
    ]


def _privileged(version: int, body: dict[str, Any]) -> bool:
    """A follower's fetch (``FetchRequest.isFromFollower``: replica id >= 0)."""
    if version >= 15:
        state = body.get("replica_state") or {}
        return int(state.get("replica_id", -1)) >= 0
    return int(body.get("replica_id", -1)) >= 0


def _session_topics(session: Session) -> list[dict[str, Any]]:
    """The session's partitions as request topics, adjacent ones of a topic grouped."""
    topics: list[dict[str, Any]] = []
    for key, cached in session.partitions.items():
        if not topics or _key(session.uses_topic_ids, topics[-1], 0)[0] != key[0]:
            topics.append({"topic": cached.topic, "topic_id": cached.topic_id, "partitions": []})
        topics[-1]["partitions"].append(cached.request)
    return topics


def open_context(
    cache: SessionCache, version: int, body: dict[str, Any], clock_ms: Callable[[], int]
) -> FetchContext:
    """The fetch context of one request (``FetchManager.newContext``)."""
    sid = int(body.get("session_id", 0)) if version >= 7 else INVALID_SESSION_ID
    epoch = int(body.get("session_epoch", -1)) if version >= 7 else FINAL_EPOCH
    topics = list(body.get("topics") or [])
    requested = _requested(version, topics)

    def made(kind: str, topics: list[dict[str, Any]], **kw: Any) -> FetchContext:
        return FetchContext(kind, topics, version, clock_ms, cache, **kw)

    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if sid != INVALID_SESSION_ID:
            cache.remove(sid)
        kind = "sessionless" if epoch == FINAL_EPOCH else "full"
        return made(kind, topics, privileged=_privileged(version, body), requested=requested)
    session = cache.get(sid)
    error = None
    if session is None:
        error = "FETCH_SESSION_ID_NOT_FOUND"
    elif session.epoch != epoch:
        error = "INVALID_FETCH_SESSION_EPOCH"
    elif session.uses_topic_ids != (version >= 13):
        error = "FETCH_SESSION_TOPIC_ID_ERROR"
    if error is not None or session is None:
        return made("error", [], error=error or "FETCH_SESSION_ID_NOT_FOUND")
    for key, asked in requested.items():
        cached = session.partitions.get(key)
        if cached is None:
            session.partitions[key] = asked
        else:
            cached.request = asked.request
    for key in _forgotten(version, body):
        session.partitions.pop(key, None)
    if not session.partitions:
        cache.remove(session.id)
        return made("sessionless", [])
    cache.touch(session, clock_ms())
    session.epoch = next_epoch(session.epoch)
    return made(
        "incremental", _session_topics(session), session=session, expected_epoch=session.epoch
    )


# ------------------------------------------------------------------ the broker's cache

_CACHES: weakref.WeakKeyDictionary[Broker, SessionCache] = weakref.WeakKeyDictionary()


def cache_of(broker: Broker) -> SessionCache:
    """The broker's session cache (sessions are per broker, not per connection)."""
    found = _CACHES.get(broker)
    if found is None:
        found = _CACHES[broker] = SessionCache(getattr(broker.config, "fetch_session_slots", SLOTS))
    return found


def resolve(broker: Broker, request: Request) -> FetchContext:
    """The fetch context of ``request`` on ``broker`` (the Fetch handler's hook)."""

    def clock_ms() -> int:
        return int(broker.clock() * 1000)

    return open_context(cache_of(broker), request.api_version, dict(request.body), clock_ms)
