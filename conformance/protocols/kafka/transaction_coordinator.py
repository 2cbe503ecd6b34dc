"""The transaction coordinator: transactional ids, their producer ids and epochs, and the
transactions they run, as Apache Kafka's ``TransactionCoordinator`` keeps them.

One broker leads every partition and coordinates every transaction, so ending a
transaction writes its markers at once (Kafka's ``TransactionMarkerChannelManager`` sends
them after answering; here they are in the log before the answer goes out), and a
transactional write is checked against the coordinator directly (Kafka 3.6+'s
verification, ``AddPartitionsToTxnManager``).  Answers are error names before any
per-version mapping (PRODUCER_FENCED for old versions is the handlers' business).

The rules, each as Kafka's coordinator applies it (``TransactionCoordinator.scala``):

* InitProducerId: an empty transactional id is INVALID_REQUEST; a timeout outside
  1..``transaction.max.timeout.ms`` (900000) is INVALID_TRANSACTION_TIMEOUT; a new id gets
  a new producer id at epoch 0; a known one has its epoch bumped (a new producer id when
  the epoch is exhausted), which fences the producer before it.  With an ongoing
  transaction the epoch is bumped, the transaction aborted, and the answer is
  CONCURRENT_TRANSACTIONS (the client retries and gets the next epoch).  A producer id
  and epoch given (v3+) must be the current ones (or the last epoch, a retry), else
  PRODUCER_FENCED.
* AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, a transactional write: an unknown
  transactional id or another producer id is INVALID_PRODUCER_ID_MAPPING; another epoch
  PRODUCER_FENCED; the state decides the rest (:mod:`.transaction_state`).
* The timeout: a transaction Ongoing for longer than its timeout is fenced (epoch bumped)
  and aborted by the broker (``abortTimedOutTransactions``), checked whenever a request
  that reads or writes transactional state comes (:meth:`expire`).

State lives in the engine's metadata store (``kafka.txn.id/<transactional id>``), so it
survives a restart with ``--data-dir``; an Ongoing transaction's timeout starts again then.
"""

from __future__ import annotations

import json
import math
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from conformance.engine import EngineError, NewRecord
from conformance.protocols.kafka import transaction_state as ts
from conformance.protocols.kafka.transaction_index import (
    Marker,
    TxnIndex,
    control_key,
    control_value,
)
from conformance.protocols.kafka.transaction_state import Partition, TxnMeta

if TYPE_CHECKING:
    from conformance.protocols.kafka.context import Broker

ID_KEY = "kafka.txn.id/"
MAX_TIMEOUT_MS = 900_000
"""Kafka's default ``transaction.max.timeout.ms`` (15 minutes)."""
COORDINATOR_EPOCH = 0


class TransactionCoordinator:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.engine = broker.engine
        self.clock = broker.clock
        self.index = TxnIndex(broker.engine)
        now = self.clock()
        self.txns: dict[str, TxnMeta] = {
            key[len(ID_KEY) :]: TxnMeta.from_json(key[len(ID_KEY) :], json.loads(value), now)
            for key, value in self.engine.meta(ID_KEY).items()
        }
        self._next_deadline = min(
            (d for m in self.txns.values() if (d := m.deadline) is not None), default=math.inf
        )

    # ----------------------------------------------------------------- requests

    def init_producer_id(
        self, tid: str, timeout_ms: int, expected: tuple[int, int] | None
    ) -> tuple[str, int, int]:
        """(error, producer id, epoch) for InitProducerId with transactional id ``tid``."""
        if tid == "":
            return "INVALID_REQUEST", -1, -1
        if not 0 < timeout_ms <= MAX_TIMEOUT_MS:
            return "INVALID_TRANSACTION_TIMEOUT", -1, -1
        self.expire()
        meta = self.txns.get(tid)
        if meta is None:
            meta = self.txns[tid] = TxnMeta(tid, self.broker.new_producer_id())
        if expected is not None and not (
            meta.producer_epoch == -1
            or expected[0] == meta.producer_id
            or (expected[0] == meta.previous_producer_id and ts.epoch_exhausted(expected[1]))
        ):
            return "PRODUCER_FENCED", -1, -1
        answer = ts.INIT_ANSWERS[meta.state]
        if answer == "fence":
            self._fence_and_abort(meta)
            return "CONCURRENT_TRANSACTIONS", -1, -1
        if answer != ts.GO:
            return answer, -1, -1
        if ts.epoch_exhausted(meta.producer_epoch) and (
            expected is None or expected[1] == meta.producer_epoch
        ):
            last = meta.producer_epoch if expected is not None else -1
            meta.previous_producer_id = meta.producer_id
            meta.producer_id, meta.producer_epoch = self.broker.new_producer_id(), 0
            meta.last_producer_epoch = last
        elif expected is None:
            meta.producer_epoch, meta.last_producer_epoch = meta.producer_epoch + 1, -1
        elif meta.producer_epoch == -1 or expected[1] == meta.producer_epoch:
            meta.last_producer_epoch = meta.producer_epoch
            meta.producer_epoch += 1
        elif expected[1] != meta.last_producer_epoch:  # not a retry of the last bump
            return "PRODUCER_FENCED", -1, -1
        meta.fire(ts.INIT)
        meta.timeout_ms = timeout_ms
        meta.partitions.clear()
        self._save(meta)
        return "NONE", meta.producer_id, meta.producer_epoch

    def _current(self, tid: str, pid: int, epoch: int) -> tuple[str, TxnMeta | None]:
        if tid == "":
            return "INVALID_REQUEST", None
        self.expire()
        meta = self.txns.get(tid)
        if meta is None or meta.producer_id != pid:
            return "INVALID_PRODUCER_ID_MAPPING", None
        if meta.producer_epoch != epoch:
            return "PRODUCER_FENCED", None
        return "NONE", meta

    def add_partitions(
        self, tid: str, pid: int, epoch: int, partitions: Iterable[Partition]
    ) -> str:
        """AddPartitionsToTxn (every partition known to exist)."""
        return self._add(tid, pid, epoch, lambda meta: meta.partitions.update(partitions))

    def add_offsets(self, tid: str, pid: int, epoch: int, group: str) -> str:
        """AddOffsetsToTxn: the group's offsets join the transaction."""
        return self._add(tid, pid, epoch, lambda meta: meta.groups.add(group))

    def _add(self, tid: str, pid: int, epoch: int, join: Callable[[TxnMeta], None]) -> str:
        """What AddPartitionsToTxn and AddOffsetsToTxn share: the producer's current
        transaction, in a state that takes additions, begins if it has not and ``join``s."""
        error, meta = self._current(tid, pid, epoch)
        if meta is None:
            return error
        answer = ts.ADD_ANSWERS[meta.state]
        if answer != ts.GO:
            return answer
        self._begin(meta)
        join(meta)
        self._save(meta)
        return "NONE"

    def verify(
        self, tid: str, pid: int, epoch: int, partitions: Iterable[Partition]
    ) -> dict[Partition, str]:
        """AddPartitionsToTxn v4+ with verify_only (``handleVerifyPartitionsInTransaction``)."""
        parts = list(partitions)
        if tid == "":
            return {p: "INVALID_REQUEST" for p in parts}
        error, meta = self._current(tid, pid, epoch)
        if meta is None:
            return {p: error for p in parts}
        if meta.state in (ts.PREPARE_COMMIT, ts.PREPARE_ABORT):
            return {p: "CONCURRENT_TRANSACTIONS" for p in parts}
        return {p: "NONE" if p in meta.partitions else "TRANSACTION_ABORTABLE" for p in parts}

    def store_offsets(
        self,
        tid: str,
        group: str,
        pid: int,
        epoch: int,
        offsets: dict[Partition, tuple[int, str | None]],
    ) -> str:
        """TxnOffsetCommit: the offsets wait for the transaction's end (error for all)."""
        error, meta = self._current(tid, pid, epoch)
        if meta is None:  # the transactional write of the offsets fails Kafka's epoch check
            return "INVALID_PRODUCER_EPOCH" if error == "PRODUCER_FENCED" else error
        if meta.state != ts.ONGOING or group not in meta.groups:
            return "INVALID_TXN_STATE"  # AddOffsetsToTxn did not add the group
        meta.offsets.setdefault(group, {}).update(offsets)
        self._save(meta)
        return "NONE"

    def end_txn(self, tid: str, pid: int, epoch: int, committed: bool) -> str:
        """EndTxn: commit or abort, markers written before the answer."""
        error, meta = self._current(tid, pid, epoch)
        if meta is None:
            return error
        answer = ts.END_ANSWERS[(meta.state, committed)]
        if answer != ts.GO:
            return answer
        self._complete(meta, committed)
        return "NONE"

    def produce_check(self, tid: str, pid: int, epoch: int, partition: Partition) -> str:
        """The coordinator's verdict on a transactional write to ``partition``, as Kafka's
        verification gives it (TRANSACTION_ABORTABLE: not added to the transaction)."""
        return self.verify(tid, pid, epoch, [partition])[partition]

    def pending(self, group: str, topic: str, partition: int) -> bool:
        """Whether an open transaction holds an offset of ``group`` for the partition
        (Kafka's OffsetFetch with require_stable answers such a partition
        UNSTABLE_OFFSET_COMMIT: ``OffsetMetadataManager.fetchOffsets``)."""
        self.expire()
        return any((topic, partition) in m.offsets.get(group, {}) for m in self.txns.values())

    # ------------------------------------------------------------------ the clock

    def expire(self) -> None:
        """Fence and abort every Ongoing transaction past its timeout (the transactions
        are looked at only once the earliest deadline has passed)."""
        now = self.clock()
        if now <= self._next_deadline:
            return
        for meta in list(self.txns.values()):
            deadline = meta.deadline
            if deadline is not None and deadline < now:
                self._fence_and_abort(meta)
        self._next_deadline = min(
            (d for m in self.txns.values() if (d := m.deadline) is not None), default=math.inf
        )

    # ------------------------------------------------------------------ internals

    def _begin(self, meta: TxnMeta) -> None:
        if meta.state != ts.ONGOING:
            meta.started = self.clock()
        meta.fire(ts.ADD)
        self._next_deadline = min(self._next_deadline, meta.started + meta.timeout_ms / 1000)

    def _fence_and_abort(self, meta: TxnMeta) -> None:
        meta.fire(ts.FENCE)
        meta.producer_epoch += 1  # prepareFenceProducerEpoch
        meta.last_producer_epoch = -1
        self._complete(meta, committed=False)

    def _complete(self, meta: TxnMeta, committed: bool) -> None:
        meta.fire(ts.END_COMMIT if committed else ts.END_ABORT)
        marker = Marker(meta.producer_id, meta.producer_epoch, committed, COORDINATOR_EPOCH)
        record = NewRecord(control_key(committed), control_value(COORDINATOR_EPOCH))
        for topic, index in sorted(meta.partitions):
            try:
                offset = self.engine.high_watermark(topic, index)
            except EngineError:  # the topic was deleted meanwhile: no marker to write
                continue
            # the index learns of the marker before the engine's listeners see the record
            self.index.end(topic, index, offset, marker)
            self.engine.append(topic, index, [record])
        if committed:
            for group, offsets in sorted(meta.offsets.items()):
                for (topic, index), (offset, metadata) in sorted(offsets.items()):
                    try:
                        self.engine.commit(group, topic, index, offset)
                    except EngineError:
                        continue
                    self.broker.commit_metadata[(group, topic, index)] = metadata
        meta.fire(ts.MARKERS_WRITTEN)
        meta.partitions.clear()
        meta.groups.clear()
        meta.offsets.clear()
        self._save(meta)
        self.broker.changed()

    def _save(self, meta: TxnMeta) -> None:
        self.engine.put_meta(ID_KEY + meta.transactional_id, json.dumps(meta.to_json()).encode())


_COORDINATORS: weakref.WeakKeyDictionary[Broker, TransactionCoordinator] = (
    weakref.WeakKeyDictionary()
)


def coordinator_of(broker: Broker) -> TransactionCoordinator:
    """The broker's transaction coordinator (made, and loaded from metadata, at first use)."""
    found = _COORDINATORS.get(broker)
    if found is None:
        found = _COORDINATORS[broker] = TransactionCoordinator(broker)
    return found
