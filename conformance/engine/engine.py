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

Consumer groups and committed offsets are the group coordinator's (coordinator.py, under
the policies of groups.py, whose docstring explains the one group model); the group
methods here hand each call to it.  Session times are not durable: after a restart every
session member's session starts again at the moment of recovery, and every member bound
to a connection is gone (no connection survives a restart).

Front-end metadata (``put_meta``, ``meta``): a small durable key-value store, journaled like
everything else (PutMeta), where a front-end keeps what its protocol knows and the engine has
no field for.  The engine names no protocol and never reads the values; by convention a
front-end's keys start with its own prefix (``iggy/``).  Each ``put_meta`` is one journal
record: after a crash a write is there whole or not at all, and writes come back in order.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from types import TracebackType

from conformance.engine.coordinator import GroupCoordinator
from conformance.engine.errors import (
    CLOSED,
    INVALID_ARGUMENT,
    INVALID_PARTITIONS,
    OFFSET_OUT_OF_RANGE,
    TOPIC_EXISTS,
    UNKNOWN_PARTITION,
    UNKNOWN_TOPIC,
    EngineError,
)
from conformance.engine.groups import DEFAULT_GROUP_POLICY, GroupPolicy
from conformance.engine.log import IdempotencePolicy, PartitionLog, Topic
from conformance.engine.ops import (
    AddPartitions,
    Append,
    CreateTopic,
    DeleteTopic,
    Op,
    PutMeta,
    RemovePartitions,
)
from conformance.engine.records import (
    AppendResult,
    Batch,
    GroupInfo,
    HeartbeatStatus,
    JoinResult,
    NewRecord,
    ProducerBatch,
    Record,
    TopicInfo,
)
from conformance.engine.state import Inconsistent, State
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
        self.session_timeout_s = session_timeout_s
        """Seconds without a heartbeat before a group member is expired (``serve
        --session-timeout``; a client checker judges heartbeats against it)."""
        self.data_dir = data_dir
        """Where the journal is kept (None: in memory); a front-end may keep its protocol's
        own files beside it (the V1 line protocol's groups.json and offsets.json)."""
        self._state = State(clock)
        self._topics = self._state.topics
        self._coordinator = GroupCoordinator(
            self._state,
            self._write,
            lambda topic: len(self._topic(topic).logs),
            self.check_offset,
            session_timeout_s=session_timeout_s,
            assignor=assignor,
            clock=clock,
        )
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
        dropped = kinds[DeleteTopic] + kinds[RemovePartitions]  # records to cut out
        if dropped or self._state.dead_ops(kinds) > COMPACT_AFTER_DEAD_OPS:
            try:
                journal.rewrite(self._state.snapshot())
            except BaseException:
                journal.close()
                raise
        self._journal = journal
        self._coordinator.forget_connections()

    def close(self) -> None:
        """Close the journal; the engine refuses further changes.  Safe to call twice."""
        self._closed = True
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def flush(self) -> None:
        """Force every acknowledged change to disk (fsync of the journal; nothing to do in
        memory).  A front-end's explicit flush request (mini-Kafka FLUSH) calls it."""
        if self._closed:
            raise EngineError(CLOSED, "the engine is closed and accepts no more changes")
        if self._journal is not None:
            self._journal.sync()

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

    def create_topic(self, name: str, partitions: int, *, min_partitions: int = 1) -> TopicInfo:
        """A new topic; ``min_partitions`` 0 lets a front-end whose protocol has topics
        without partitions (Iggy) create one with none."""
        _need_name("topic", name)
        if name in self._topics:
            raise EngineError(TOPIC_EXISTS, f"topic {name!r} already exists")
        if partitions < min_partitions:
            raise EngineError(
                INVALID_PARTITIONS,
                f"a topic needs at least {_partitions(min_partitions)}; {partitions} were "
                "asked for",
            )
        if partitions > self.max_partitions:
            raise EngineError(
                INVALID_PARTITIONS,
                f"{partitions} partitions were asked for; this broker's limit is "
                f"{self.max_partitions} partitions per topic (serve --max-partitions)",
            )
        self._write(CreateTopic(name, partitions))
        return TopicInfo(name, partitions)

    def add_partitions(self, name: str, count: int) -> TopicInfo:
        """``count`` (>= 1) new empty partitions numbered after the topic's last one."""
        topic = self._topic(name)
        if count < 1:
            raise EngineError(
                INVALID_PARTITIONS, f"at least one partition must be added; {count} were asked for"
            )
        total = len(topic.logs) + count
        if total > self.max_partitions:
            raise EngineError(
                INVALID_PARTITIONS,
                f"topic {name!r} would have {total} partitions; this broker's limit is "
                f"{self.max_partitions} partitions per topic (serve --max-partitions)",
            )
        self._write(AddPartitions(name, count))
        return TopicInfo(name, total)

    def remove_partitions(self, name: str, count: int) -> TopicInfo:
        """Remove the topic's last ``count`` (1..its partitions) partitions, with their
        records and the offsets committed to them; a topic may be left with none."""
        topic = self._topic(name)
        if not 1 <= count <= len(topic.logs):
            raise EngineError(
                INVALID_PARTITIONS,
                f"topic {name!r} has {len(topic.logs)} partitions; {count} cannot be removed",
            )
        self._write(RemovePartitions(name, count))
        return TopicInfo(name, len(topic.logs))

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
        form: str = "",
        data: bytes = b"",
    ) -> AppendResult:
        """Append ``records``; with ``producer``, idempotently under ``policy``.

        ``policy`` is required with a producer (ValueError without one: each front-end
        chooses the rules its document states, STRICT or DEDUPE_ONLY) and ignored without.
        An exact resend of a remembered range is acknowledged with its original offsets
        (``duplicate=True``) and not stored; ``producer_epoch`` is the highest epoch the
        partition has seen for the producer (0 without a producer).  The records form one
        :class:`Batch` (each record's ``batch``), which keeps ``form`` and ``data``: the
        append as the front-end's protocol wrote it, journaled with it, never read here."""
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
        batch = Batch(base, len(records), form, data)
        if producer is None:
            stored = tuple(
                Record(base + i, r.key, r.value, r.headers, _ts(r, ts), batch=batch)
                for i, r in enumerate(records)
            )
        else:
            pid, epoch = producer.producer_id, producer.epoch
            seqs = _sequences(producer, len(records))
            stored = tuple(
                Record(base + i, r.key, r.value, r.headers, _ts(r, ts), pid, epoch, seqs[i], batch)
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

    # ------------------------------------------------------------ front-end metadata

    def put_meta(self, key: str, value: bytes | None) -> None:
        """Set metadata ``key`` (not empty) to ``value``; None removes it.  Setting a key
        to what it holds, or removing one that is not there, writes nothing."""
        _need_name("metadata key", key)
        if self._state.meta.get(key) != value:
            self._write(PutMeta(key, None if value is None else bytes(value)))

    def meta(self, prefix: str = "") -> dict[str, bytes]:
        """Every metadata key starting with ``prefix``, with its value (a copy)."""
        return {k: v for k, v in self._state.meta.items() if k.startswith(prefix)}

    # ------------------------------------------------ groups and offsets (coordinator.py)

    def create_group(
        self, group: str, topic: str, *, policy: GroupPolicy = DEFAULT_GROUP_POLICY
    ) -> GroupInfo:
        return self._coordinator.create_group(group, topic, policy=policy)

    def delete_group(self, group: str) -> None:
        self._coordinator.delete_group(group)

    def group_info(self, group: str) -> GroupInfo:
        return self._coordinator.group_info(group)

    def list_groups(self) -> list[GroupInfo]:
        return self._coordinator.list_groups()

    def subscribe(
        self, group: str, topic: str, *, policy: GroupPolicy = DEFAULT_GROUP_POLICY
    ) -> None:
        self._coordinator.subscribe(group, topic, policy=policy)

    def join_group(
        self,
        group: str,
        topic: str,
        consumer_id: str,
        *,
        policy: GroupPolicy = DEFAULT_GROUP_POLICY,
        assignor: str | None = None,
    ) -> JoinResult:
        return self._coordinator.join_group(
            group, topic, consumer_id, policy=policy, assignor=assignor
        )

    def members_of(self, group: str, consumer_id: str) -> list[str]:
        return self._coordinator.members_of(group, consumer_id)

    def leave_group(self, group: str, member_id: str, generation: int | None = None) -> None:
        self._coordinator.leave_group(group, member_id, generation)

    def disconnect(self, consumer_id: str) -> list[str]:
        return self._coordinator.disconnect(consumer_id)

    def group_generation(self, group: str) -> int:
        return self._coordinator.group_generation(group)

    def sync_group(self, group: str, member_id: str, generation: int) -> dict[str, list[int]]:
        return self._coordinator.sync_group(group, member_id, generation)

    def heartbeat(self, group: str, member_id: str, generation: int) -> HeartbeatStatus:
        return self._coordinator.heartbeat(group, member_id, generation)

    def expire_members(self) -> list[str]:
        return self._coordinator.expire_members()

    def commit(
        self,
        group: str,
        topic: str,
        partition: int,
        offset: int,
        *,
        policy: GroupPolicy = DEFAULT_GROUP_POLICY,
    ) -> None:
        self._coordinator.commit(group, topic, partition, offset, policy=policy)

    def commit_many(
        self,
        group: str,
        topic: str,
        offsets: dict[int, int],
        member_id: str,
        generation: int,
        *,
        policy: GroupPolicy = DEFAULT_GROUP_POLICY,
    ) -> None:
        self._coordinator.commit_many(group, topic, offsets, member_id, generation, policy=policy)

    def committed(self, group: str, topic: str, partition: int) -> int | None:
        return self._coordinator.committed(group, topic, partition)

    def committed_all(self, group: str) -> dict[str, dict[int, int]]:
        """Every offset ``group`` committed: topic -> partition -> offset."""
        return self._coordinator.committed_all(group)


def _ts(record: NewRecord, now: int) -> int:
    return now if record.timestamp_ms is None else record.timestamp_ms


def _sequences(producer: ProducerBatch, count: int) -> list[int]:
    """The sequence of each record: seq_start, seq_start + 1, ... when the range numbers the
    records, else -1 for every record (a policy that lets such a range through stores the
    batch, but its records have no sequence of their own)."""
    if producer.seq_end - producer.seq_start + 1 == count:
        return [producer.seq_start + i for i in range(count)]
    return [-1] * count


def _partitions(n: int) -> str:
    return "one partition" if n == 1 else f"{n} partitions"


def _need_name(what: str, name: str) -> None:
    if not name:
        raise EngineError(INVALID_ARGUMENT, f"the {what} name must not be empty")
