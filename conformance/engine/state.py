"""The engine's in-memory state and the one function that changes it: ``apply(op)``.

Live requests and recovery both go through ``apply``, so a replayed journal rebuilds exactly
the state that was acknowledged.  ``snapshot`` gives the operations that rebuild the current
state, which is how the journal is compacted.  ``meta`` is the front-ends' key-value store
(PutMeta): only its live keys are in a snapshot.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence

from conformance.engine.groups import Group, Member, Reaping
from conformance.engine.log import REMEMBERED_RANGES, PartitionLog, ProducerState, Topic
from conformance.engine.ops import (
    AddPartitions,
    Append,
    Commit,
    CreateTopic,
    DeleteGroup,
    DeleteTopic,
    GroupState,
    Op,
    ProducerSnapshot,
    PutMeta,
    RemovePartitions,
)
from conformance.engine.records import Record


class Inconsistent(Exception):
    """A journal operation that does not fit the state rebuilt so far."""


MemberEntry = tuple[str, str, Reaping]  # (member id, consumer id, reaping)


def member_entries(g: Group, without: Sequence[str] = ()) -> list[MemberEntry]:
    """``g``'s members as GroupState lists them, leaving out ``without``."""
    return [(m, x.consumer_id, x.reaping) for m, x in g.members.items() if m not in without]


def group_state(
    g: Group,
    *,
    generation: int | None = None,
    counter: int | None = None,
    subscriptions: Sequence[str] | None = None,
    members: Sequence[MemberEntry] | None = None,
    assignor: str | None = None,
) -> GroupState:
    """The GroupState operation for ``g`` with the given fields changed."""
    if members is None:
        members = member_entries(g)
    return GroupState(
        g.name,
        g.generation if generation is None else generation,
        g.counter if counter is None else counter,
        tuple(g.subscriptions if subscriptions is None else subscriptions),
        tuple((m, c) for m, c, _ in members),
        g.assignor if assignor is None else assignor,
        tuple(m for m, _, reaping in members if reaping is Reaping.CONNECTION),
    )


class State:
    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.topics: dict[str, Topic] = {}
        self.groups: dict[str, Group] = {}
        self.meta: dict[str, bytes] = {}

    def apply(self, op: Op) -> None:
        if isinstance(op, Append):
            log = self.topics[op.topic].logs[op.partition]
            if op.base_offset != log.high_watermark:
                raise Inconsistent(f"append at {op.base_offset}, log ends at {log.high_watermark}")
            log.extend(op.records, op.producer)
        elif isinstance(op, Commit):
            group = self.groups.setdefault(op.group, Group(op.group))
            group.offsets.setdefault(op.topic, {}).update(op.offsets)
        elif isinstance(op, GroupState):
            self._apply_group(op)
        elif isinstance(op, DeleteGroup):
            del self.groups[op.name]
        elif isinstance(op, PutMeta):
            if op.value is None:
                self.meta.pop(op.key, None)
            else:
                self.meta[op.key] = op.value
        elif isinstance(op, CreateTopic):
            if op.name in self.topics:
                raise Inconsistent(f"topic {op.name!r} created twice")
            self.topics[op.name] = Topic.new(op.name, op.partitions)
        elif isinstance(op, DeleteTopic):
            del self.topics[op.name]
            for group in self.groups.values():
                group.forget_topic(op.name)
        elif isinstance(op, AddPartitions):
            self.topics[op.name].logs.extend(PartitionLog() for _ in range(op.count))
        elif isinstance(op, RemovePartitions):
            logs = self.topics[op.name].logs
            if op.count > len(logs):
                raise Inconsistent(f"{op.count} partitions removed from {len(logs)}")
            del logs[len(logs) - op.count :]
            for group in self.groups.values():
                group.forget_partitions(op.name, len(logs))
        else:
            log = self.topics[op.topic].logs[op.partition]
            state = ProducerState(op.epoch, deque(op.ranges, maxlen=REMEMBERED_RANGES))
            log.producers[op.producer_id] = state

    def _apply_group(self, op: GroupState) -> None:
        """Install a group's new state; members already present keep their session time,
        new ones (and all of them during recovery) start theirs now."""
        group = self.groups.setdefault(op.name, Group(op.name))
        now = self.clock()
        old = group.members
        group.generation, group.counter = op.generation, op.counter
        group.subscriptions = list(op.subscriptions)
        group.assignor = op.assignor
        bound = set(op.bound)
        group.members = {}
        for mid, cid in op.members:
            reaping = Reaping.CONNECTION if mid in bound else Reaping.SESSION
            was = old.get(mid)
            seen, timeout = (now, None) if was is None else (was.last_seen, was.timeout_s)
            group.members[mid] = Member(cid, seen, reaping, timeout)

    def dead_ops(self, kinds: Counter[type]) -> int:
        """How many of the replayed non-append operations a snapshot would not need."""
        replayed = kinds.total() - kinds[Append]
        live = len(self.topics) + len(self.groups) + len(self.meta)
        live += sum(len(g.offsets) for g in self.groups.values())
        live += sum(len(log.producers) for t in self.topics.values() for log in t.logs)
        return replayed - live

    def snapshot(self) -> Iterator[Op]:
        """Operations that rebuild the current state (for compaction)."""
        for t in self.topics.values():
            yield CreateTopic(t.name, len(t.logs))
            for p, log in enumerate(t.logs):
                yield from _appends(t.name, p, log.records)
                for pid, state in log.producers.items():
                    yield ProducerSnapshot(t.name, p, pid, state.epoch, tuple(state.ranges))
        for g in self.groups.values():
            yield group_state(g)
            for topic, offsets in g.offsets.items():
                yield Commit(g.name, topic, tuple(sorted(offsets.items())))
        for key, value in self.meta.items():
            yield PutMeta(key, value)


def _appends(topic: str, partition: int, records: list[Record]) -> Iterator[Append]:
    """``records`` as Appends for a compacted journal: one per batch, so the boundaries
    (and a batch's written form) survive compaction as they survive replay."""
    at, end = 0, len(records)
    while at < end:
        batch = records[at].batch
        stop = batch.base_offset + batch.count if batch is not None else at + 1
        stop = min(max(stop, at + 1), end)
        yield Append(topic, partition, at, tuple(records[at:stop]), None)
        at = stop
