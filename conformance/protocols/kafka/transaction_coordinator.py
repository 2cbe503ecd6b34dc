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
* Transactions V2 (KIP-890 part 2, Kafka 4.0; ``TransactionVersion.TV_2``, which Kafka
  takes from the request version alone: ``transactionVersionForEndTxn`` is EndTxn v5+):
  EndTxn v5 bumps the epoch at every end (:meth:`end_txn_v2`, the markers carry the new
  epoch) and answers the producer id and new epoch; a client of V2 sends no
  AddPartitionsToTxn or AddOffsetsToTxn, the broker adds the partition at a Produce v12+
  and the group at a TxnOffsetCommit v5+ (``AddPartitionsToTxnManager``'s
  ``ADD_PARTITION``: an AddPartitionsToTxn that is not verify-only).

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

    def offsets_check(self, tid: str, group: str, pid: int, epoch: int, add: bool) -> str:
        """The coordinator's verdict before a TxnOffsetCommit writes ``group``'s offsets:
        verified (the group added by AddOffsetsToTxn, else TRANSACTION_ABORTABLE), or, with
        ``add`` (TxnOffsetCommit v5+, transactions V2), the group added now as
        AddOffsetsToTxn would."""
        if add:
            return self.add_offsets(tid, pid, epoch, group)
        error, meta = self._current(tid, pid, epoch)
        if meta is None:
            return error
        if meta.state in (ts.PREPARE_COMMIT, ts.PREPARE_ABORT):
            return "CONCURRENT_TRANSACTIONS"
        return "NONE" if group in meta.groups else "TRANSACTION_ABORTABLE"

    def store_offsets(
        self, tid: str, group: str, offsets: dict[Partition, tuple[int, str | None]]
    ) -> None:
        """TxnOffsetCommit, once :meth:`offsets_check` said NONE: the offsets wait for the
        transaction's end."""
        meta = self.txns[tid]
        meta.offsets.setdefault(group, {}).update(offsets)
        self._save(meta)

    def end_txn(self, tid: str, pid: int, epoch: int, committed: bool) -> str:
        """EndTxn v0-4: commit or abort, markers written before the answer."""
        error, meta = self._current(tid, pid, epoch)
        if meta is None:
            return error
        answer = ts.END_ANSWERS[(meta.state, committed)]
        if answer != ts.GO:
            return answer
        self._complete(meta, committed)
        return "NONE"

    def end_txn_v2(self, tid: str, pid: int, epoch: int, committed: bool) -> tuple[str, int, int]:
        """EndTxn v5 (transactions V2): (error, producer id, epoch).  The epoch goes up by
        one at every end, an abort with nothing under way included, before the markers are
        written (they carry it); a retry of the last end (at the epoch below) answers the
        current id and epoch.  An exhausted epoch gives a new producer id at epoch 0 once
        the markers are written (Kafka's ``prepareComplete``); the answer, as Kafka's
        ``endTransaction`` gives it after PrepareCommit/PrepareAbort, is the bumped epoch."""
        if tid == "":
            return "INVALID_REQUEST", -1, -1
        self.expire()
        meta = self.txns.get(tid)
        if meta is None:
            return "INVALID_PRODUCER_ID_MAPPING", -1, -1
        overflow = (
            meta.previous_producer_id == pid
            and epoch == ts.MAX_EPOCH - 1
            and meta.producer_epoch == 0
        )
        if meta.producer_id != pid and not overflow:
            return "INVALID_PRODUCER_ID_MAPPING", -1, -1
        retry = overflow or meta.producer_epoch == epoch + 1
        answer = ts.end_v2_answer(meta.state, committed, epoch == meta.producer_epoch, retry)
        if answer == "NONE":
            return "NONE", meta.producer_id, meta.producer_epoch
        if answer != ts.BUMP:
            return answer, -1, -1
        rotate = ts.epoch_exhausted(meta.producer_epoch)
        meta.last_producer_epoch, meta.producer_epoch = meta.producer_epoch, meta.producer_epoch + 1
        answered = ("NONE", meta.producer_id, meta.producer_epoch)
        self._complete(meta, committed)
        if rotate:
            meta.previous_producer_id = meta.producer_id
            meta.producer_id, meta.producer_epoch = self.broker.new_producer_id(), 0
            self._save(meta)
        return answered

    def produce_check(
        self, tid: str, pid: int, epoch: int, partition: Partition, add: bool = False
    ) -> str:
        """The coordinator's verdict on a transactional write to ``partition``, as Kafka's
        verification gives it (TRANSACTION_ABORTABLE: not added to the transaction); with
        ``add`` (Produce v12+, transactions V2) the partition is added to the transaction
        first, as AddPartitionsToTxn would (``AddPartitionsToTxnManager.ADD_PARTITION``)."""
        if add:
            return self.add_partitions(tid, pid, epoch, [partition])
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
