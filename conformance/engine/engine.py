"""The engine facade: topics, partition logs, consumer groups and committed offsets.

Protocol-agnostic and I/O-free apart from its journal: front-ends call these methods and
map ``EngineError.code`` to their own error names.  Every state change follows one path:
check the request (raising EngineError), build the operation (see ops.py), write it to the
journal when there is one, then apply it; recovery applies the journal's operations with
the same code, so what is recovered is what was acknowledged.

Idempotent appends are checked under an :class:`~conformance.engine.log.IdempotencePolicy`
passed with each call, because one engine serves several protocols at once and each
document states its own rules.  There is no default: an append with a producer and no
policy is a programming error (ValueError), so a front-end cannot inherit another
protocol's refusals by forgetting to choose.  ``STRICT`` is Kafka's idempotent producer
(fencing, sequence order, a range that numbers the records); a front-end whose document
states none of these passes ``DEDUPE_ONLY`` (see log.py).

Offsets number a partition's log from 0: a read or a commit at an offset below 0 is
OFFSET_OUT_OF_RANGE, and no partition or offset below 0 ever indexes a log.  A committed
offset, and the position a reader waits at, may lie past the high watermark (Kafka accepts
any committed offset too); it must only be in 0..2**63-1.  How many partitions a topic may
have is the broker's resource limit, ``max_partitions`` (10000 unless configured).

Group sessions need no timer: ``expire_members`` runs at the start of every group and
offset operation and drops members silent for longer than ``session_timeout_s`` by
``clock``.  Session times are not durable: after a restart every member's session starts
again at the moment of recovery.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from types import TracebackType

from conformance.engine.errors import (
    CLOSED,
    GENERATION_MISMATCH,
    INVALID_ARGUMENT,
    INVALID_PARTITIONS,
    OFFSET_OUT_OF_RANGE,
    TOPIC_EXISTS,
    UNKNOWN_GROUP,
    UNKNOWN_MEMBER,
    UNKNOWN_PARTITION,
    UNKNOWN_TOPIC,
    EngineError,
)
from conformance.engine.groups import Group, Member, assignor_named
from conformance.engine.log import IdempotencePolicy, PartitionLog, Topic
from conformance.engine.ops import Append, Commit, CreateTopic, DeleteTopic, Op
from conformance.engine.records import (
    AppendResult,
    HeartbeatStatus,
    JoinResult,
    NewRecord,
    ProducerBatch,
    Record,
    TopicInfo,
)
from conformance.engine.state import Inconsistent, State, group_state
from conformance.engine.store import Journal, JournalError, ReplayStats

MAX_PARTITIONS = 10_000
MAX_OFFSET = 2**63 - 1  # offsets are int64 in the journal and in every protocol
COMPACT_AFTER_DEAD_OPS = 10_000  # superseded group/offset operations that trigger compaction

Listener = Callable[[str, int], None]


def now_ms() -> int:
    """Wall-clock milliseconds, the timestamp given to appended records."""
    return time.time_ns() // 1_000_000


class Engine:
    """The broker core.  With ``data_dir`` its state is journaled there and recovered."""

    def __init__(
        self,
        data_dir: str | None = None,
        *,
        fsync: bool = False,
        session_timeout_s: float = 10.0,
        assignor: str = "range",
        clock: Callable[[], float] = time.monotonic,
        max_partitions: int = MAX_PARTITIONS,
    ) -> None:
        if not session_timeout_s > 0:
            raise ValueError(f"session_timeout_s must be positive, not {session_timeout_s}")
        if max_partitions < 1:
            raise ValueError(f"max_partitions must be at least 1, not {max_partitions}")
        self.max_partitions = max_partitions
        self._assign = assignor_named(assignor)
        self._timeout = session_timeout_s
        self._clock = clock
        self._state = State(clock)
        self._topics = self._state.topics
        self._groups = self._state.groups
        self._listeners: list[Listener] = []
        self._closed = False
        self._journal: Journal | None = None
        self.recovery: ReplayStats | None = None
        if data_dir is not None:
            self._open(Journal(data_dir, fsync=fsync))

    # ---------------------------------------------------------------- lifecycle

    def _open(self, journal: Journal) -> None:
        kinds: Counter[type] = Counter()

        def replayed(op: Op) -> None:
            kinds[type(op)] += 1
            try:
                self._state.apply(op)
            except (Inconsistent, KeyError, IndexError) as exc:
                raise JournalError(
                    f"{journal.path}: operation {kinds.total()} ({type(op).__name__}) does not "
                    f"fit the state before it ({exc!r}); the journal is damaged"
                ) from None

        self.recovery = journal.replay(replayed)
        if kinds[DeleteTopic] or self._state.dead_ops(kinds) > COMPACT_AFTER_DEAD_OPS:
            try:
                journal.rewrite(self._state.snapshot())
            except BaseException:
                journal.close()
                raise
        self._journal = journal

    def close(self) -> None:
        """Close the journal; the engine refuses further changes.  Safe to call twice."""
        self._closed = True
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------- write, then apply

    def _write(self, op: Op) -> None:
        if self._closed:
            raise EngineError(CLOSED, "the engine is closed and accepts no more changes")
        if self._journal is not None:
            self._journal.write(op)
        self._state.apply(op)

    # ------------------------------------------------------------------- topics

    def create_topic(self, name: str, partitions: int) -> TopicInfo:
        _need_name("topic", name)
        if name in self._topics:
            raise EngineError(TOPIC_EXISTS, f"topic {name!r} already exists")
        if partitions < 1:
            raise EngineError(
                INVALID_PARTITIONS,
                f"a topic needs at least one partition; {partitions} were asked for",
            )
        if partitions > self.max_partitions:
            raise EngineError(
                INVALID_PARTITIONS,
                f"{partitions} partitions were asked for; this broker's limit is "
                f"{self.max_partitions} partitions per topic (serve --max-partitions)",
            )
        self._write(CreateTopic(name, partitions))
        return TopicInfo(name, partitions)

    def delete_topic(self, name: str) -> None:
        self._topic(name)
        self._write(DeleteTopic(name))

    def list_topics(self) -> list[TopicInfo]:
        return [TopicInfo(n, len(self._topics[n].logs)) for n in sorted(self._topics)]

    def has_topic(self, name: str) -> bool:
        return name in self._topics

    def topic(self, name: str) -> TopicInfo:
        return TopicInfo(name, len(self._topic(name).logs))

    def _topic(self, name: str) -> Topic:
        try:
            return self._topics[name]
        except KeyError:
            raise EngineError(UNKNOWN_TOPIC, f"there is no topic {name!r}") from None

    def _log(self, topic: str, partition: int) -> PartitionLog:
        t = self._topic(topic)
        if not 0 <= partition < len(t.logs):
            raise EngineError(
                UNKNOWN_PARTITION,
                f"topic {topic!r} has partitions 0..{len(t.logs) - 1}; there is no partition "
                f"{partition}",
            )
        return t.logs[partition]

    # --------------------------------------------------------------------- logs

    def append(
        self,
        topic: str,
        partition: int,
        records: Sequence[NewRecord],
        producer: ProducerBatch | None = None,
        *,
        policy: IdempotencePolicy | None = None,
    ) -> AppendResult:
        """Append ``records``; with ``producer``, idempotently under ``policy``.

        ``policy`` is required with a producer (ValueError without one: each front-end
        chooses the rules its document states, STRICT or DEDUPE_ONLY) and ignored without.
        An exact resend of a remembered range is acknowledged with its original offsets
        (``duplicate=True``) and not stored; ``producer_epoch`` is the highest epoch the
        partition has seen for the producer (0 without a producer)."""
        if producer is not None and policy is None:
            raise ValueError(
                "an append with a producer needs an idempotence policy: pass "
                "policy=STRICT (Kafka's rules) or policy=DEDUPE_ONLY (only exact resends "
                "are caught), whichever the front-end's document states"
            )
        log = self._log(topic, partition)
        if not records:
            raise EngineError(INVALID_ARGUMENT, f"an append to {topic}/{partition} needs records")
        if producer is not None and policy is not None:
            duplicate = log.check_producer(f"{topic}/{partition}", producer, len(records), policy)
            if duplicate is not None:
                return duplicate
        base, ts = log.high_watermark, now_ms()
        if producer is None:
            stored = tuple(
                Record(base + i, r.key, r.value, r.headers, _ts(r, ts))
                for i, r in enumerate(records)
            )
        else:
            pid, epoch = producer.producer_id, producer.epoch
            seqs = _sequences(producer, len(records))
            stored = tuple(
                Record(base + i, r.key, r.value, r.headers, _ts(r, ts), pid, epoch, seqs[i])
                for i, r in enumerate(records)
            )
        self._write(Append(topic, partition, base, stored, producer))
        for listener in list(self._listeners):
            listener(topic, partition)
        epoch = log.producers[producer.producer_id].epoch if producer is not None else 0
        return AppendResult(base, base + len(stored) - 1, epoch, duplicate=False)

    def read(self, topic: str, partition: int, offset: int, max_records: int) -> list[Record]:
        """Up to ``max_records`` records from ``offset``, which is in 0..high watermark."""
        return self._log(topic, partition).read(f"{topic}/{partition}", offset, max_records)

    def check_offset(self, topic: str, partition: int, offset: int) -> None:
        """The partition must exist and ``offset`` be a position in its log, 0..2**63-1;
        it may lie past the high watermark (a reader waits there, a commit may name it)."""
        self._log(topic, partition)
        if offset < 0:
            raise EngineError(
                OFFSET_OUT_OF_RANGE,
                f"offset {offset} of {topic}/{partition} is below 0: offsets number the log from 0",
            )
        if offset > MAX_OFFSET:
            raise EngineError(
                OFFSET_OUT_OF_RANGE,
                f"offset {offset} of {topic}/{partition} is past {MAX_OFFSET}, the int64 maximum",
            )

    def high_watermark(self, topic: str, partition: int) -> int:
        return self._log(topic, partition).high_watermark

    def add_listener(self, callback: Listener) -> Callable[[], None]:
        """Call ``callback(topic, partition)`` after every stored append; returns a remover."""
        self._listeners.append(callback)

        def remove() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return remove

    # ------------------------------------------------------------------- groups

    def _group(self, name: str) -> Group:
        try:
            return self._groups[name]
        except KeyError:
            raise EngineError(UNKNOWN_GROUP, f"there is no group {name!r}") from None

    def _member(self, group: Group, member_id: str) -> Member:
        try:
            return group.members[member_id]
        except KeyError:
            raise EngineError(
                UNKNOWN_MEMBER, f"group {group.name!r} has no member {member_id!r}"
            ) from None

    def _check_generation(self, group: Group, member_id: str, generation: int) -> Member:
        member = self._member(group, member_id)
        if generation != group.generation:
            raise EngineError(
                GENERATION_MISMATCH,
                f"member {member_id!r} of group {group.name!r} is at generation {generation}; "
                f"the group is at generation {group.generation}",
            )
        return member

    def subscribe(self, group: str, topic: str) -> None:
        self.expire_members()
        self._topic(topic)
        _need_name("group", group)
        g = self._groups.get(group) or Group(group)
        if group not in self._groups or topic not in g.subscriptions:
            self._write(group_state(g, subscriptions=[*g.subscriptions, topic]))

    def join_group(self, group: str, topic: str, consumer_id: str) -> JoinResult:
        self.expire_members()
        self._topic(topic)
        _need_name("group", group)
        _need_name("consumer id", consumer_id)
        g = self._groups.get(group) or Group(group)
        counter = g.counter + 1
        member_id = f"{consumer_id}-{counter}"
        subscriptions = g.subscriptions if topic in g.subscriptions else [*g.subscriptions, topic]
        members = [(m, x.consumer_id) for m, x in g.members.items()] + [(member_id, consumer_id)]
        generation = g.generation + 1
        self._write(
            group_state(
                g,
                generation=generation,
                counter=counter,
                subscriptions=subscriptions,
                members=members,
            )
        )
        return JoinResult(member_id, generation, tuple(sorted(m for m, _ in members)))

    def members_of(self, group: str, consumer_id: str) -> list[str]:
        self.expire_members()
        g = self._groups.get(group)
        return g.members_of(consumer_id) if g is not None else []

    def leave_group(self, group: str, member_id: str) -> None:
        self.expire_members()
        g = self._group(group)
        self._member(g, member_id)
        self._remove_members(g, [member_id])

    def _remove_members(self, g: Group, gone: list[str]) -> None:
        members = [(m, x.consumer_id) for m, x in g.members.items() if m not in gone]
        self._write(group_state(g, generation=g.generation + 1, members=members))

    def group_generation(self, group: str) -> int:
        self.expire_members()
        return self._group(group).generation

    def sync_group(self, group: str, member_id: str, generation: int) -> dict[str, list[int]]:
        self.expire_members()
        g = self._group(group)
        member = self._check_generation(g, member_id, generation)
        member.last_seen = self._clock()
        members = g.sorted_members()
        return {
            topic: self._assign(len(self._topics[topic].logs), members)[member_id]
            for topic in g.subscriptions
        }

    def heartbeat(self, group: str, member_id: str, generation: int) -> HeartbeatStatus:
        self.expire_members()
        g = self._group(group)
        member = self._member(g, member_id)
        if generation < 0:
            raise EngineError(
                GENERATION_MISMATCH,
                f"member {member_id!r} sent generation {generation}, below 0: no group has "
                f"it ({group!r} is at generation {g.generation})",
            )
        if generation > g.generation:
            raise EngineError(
                GENERATION_MISMATCH,
                f"member {member_id!r} sent generation {generation}, ahead of group "
                f"{group!r} at generation {g.generation}",
            )
        member.last_seen = self._clock()
        if generation < g.generation:
            return HeartbeatStatus.REBALANCE_REQUIRED
        return HeartbeatStatus.OK

    def expire_members(self) -> list[str]:
        """Remove members whose session ran out (one new generation per group touched)."""
        now = self._clock()
        removed: list[str] = []
        for g in list(self._groups.values()):
            gone = g.expired(now, self._timeout)
            if gone:
                self._remove_members(g, gone)
                removed += gone
        return removed

    # ------------------------------------------------------------------ offsets

    def commit(self, group: str, topic: str, partition: int, offset: int) -> None:
        self.expire_members()
        self.check_offset(topic, partition, offset)
        _need_name("group", group)
        self._write(Commit(group, topic, ((partition, offset),)))

    def commit_many(
        self, group: str, topic: str, offsets: dict[int, int], member_id: str, generation: int
    ) -> None:
        """Commit every offset or none: all are checked before anything is written."""
        self.expire_members()
        g = self._group(group)
        self._check_generation(g, member_id, generation)
        self._topic(topic)
        pairs = tuple(sorted(offsets.items()))
        for partition, offset in pairs:
            self.check_offset(topic, partition, offset)
        if pairs:
            self._write(Commit(group, topic, pairs))

    def committed(self, group: str, topic: str, partition: int) -> int | None:
        g = self._groups.get(group)
        return None if g is None else g.offsets.get(topic, {}).get(partition)

    def committed_all(self, group: str) -> dict[str, dict[int, int]]:
        """Every offset ``group`` committed: topic -> partition -> offset."""
        g = self._groups.get(group)
        return {} if g is None else {t: dict(p) for t, p in g.offsets.items() if p}


def _ts(record: NewRecord, now: int) -> int:
    return now if record.timestamp_ms is None else record.timestamp_ms


def _sequences(producer: ProducerBatch, count: int) -> list[int]:
    """The sequence of each record: seq_start, seq_start + 1, ... when the range numbers the
    records, else -1 for every record (a policy that lets such a range through stores the
    batch, but its records have no sequence of their own)."""
    if producer.seq_end - producer.seq_start + 1 == count:
        return [producer.seq_start + i for i in range(count)]
    return [-1] * count


def _need_name(what: str, name: str) -> None:
    if not name:
        raise EngineError(INVALID_ARGUMENT, f"the {what} name must not be empty")
