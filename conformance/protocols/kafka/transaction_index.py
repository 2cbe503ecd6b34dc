"""What each partition knows of transactions: open and finished transactional spans and
the control records (markers) in its log, kept beside the engine's records.

The engine stores records with their producer id and epoch but no batch attributes, so
the Kafka front-end keeps, per partition: each producer's transactional spans (first
offset, the marker's offset once it ends, aborted or not) and each marker (producer id,
epoch, commit or abort, coordinator epoch).  From them come, as Apache Kafka's log derives
them (``ProducerStateManager``, ``TransactionIndex``):

* the last stable offset: the first offset of the earliest open transaction, else the
  high watermark;
* the aborted transactions a READ_COMMITTED fetch of ``[start, upper)`` must be told of:
  those whose span ends at or after ``start`` and begins before ``upper``
  (``TransactionIndex.collectAbortedTxns``);
* a stored record's batch attributes when it is fetched: transactional (bit 4) inside a
  span, control (bit 5, and transactional) at a marker.

A marker is stored in the engine as a record whose key and value are the control record's
(key: version 0 and type, 0 abort or 1 commit; value: version 0 and the coordinator
epoch), so other front-ends see a record there too.  Every span and marker is also kept in
the engine's metadata store (``kafka.txn.span/`` and ``kafka.txn.marker/`` keys), so it
survives a restart with ``--data-dir``.  A partition whose log is shorter than what the
index knows was deleted and created again: its index starts over.
"""

from __future__ import annotations

import bisect
import json
import struct
from dataclasses import dataclass, field

from conformance.engine import Engine, Record

SPAN_KEY, MARKER_KEY = "kafka.txn.span/", "kafka.txn.marker/"
ABORT, COMMIT = 0, 1
_CONTROL_KEY, _CONTROL_VALUE = struct.Struct(">hh"), struct.Struct(">hi")


def control_key(committed: bool) -> bytes:
    """A control record's key: version 0, type 0 (abort) or 1 (commit)."""
    return _CONTROL_KEY.pack(0, COMMIT if committed else ABORT)


def control_value(coordinator_epoch: int) -> bytes:
    """An end-transaction marker's value: version 0, the coordinator epoch."""
    return _CONTROL_VALUE.pack(0, coordinator_epoch)


@dataclass(frozen=True)
class Marker:
    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int = 0


@dataclass
class Span:
    """A producer's transactional records in one partition: ``first`` up to ``end`` (the
    marker's offset), ``end`` -1 while the transaction is open."""

    producer_id: int
    first: int
    end: int = -1
    aborted: bool = False


@dataclass
class PartitionTxns:
    open: dict[int, Span] = field(default_factory=dict)
    spans: dict[int, list[Span]] = field(default_factory=dict)
    """Every span of each producer, in offset order."""
    aborted: list[Span] = field(default_factory=list)
    """Finished aborted spans, in marker order."""
    markers: dict[int, Marker] = field(default_factory=dict)
    top: int = -1
    """The highest offset this index names (a log shorter than it was created again)."""

    def last_stable_offset(self, hwm: int) -> int:
        return min((s.first for s in self.open.values()), default=hwm)

    def aborted_in(self, start: int, upper: int) -> list[Span]:
        return [s for s in self.aborted if s.end >= start and s.first < upper]

    def span_at(self, producer_id: int, offset: int) -> Span | None:
        spans = self.spans.get(producer_id)
        if not spans:
            return None
        at = bisect.bisect_right([s.first for s in spans], offset) - 1
        if at < 0:
            return None
        span = spans[at]
        return span if span.end < 0 or offset < span.end else None

    def attributes(self, record: Record) -> tuple[bool, Marker | None]:
        """(transactional, the marker if ``record`` is one) of a stored record."""
        marker = self.markers.get(record.offset)
        if marker is not None:
            return True, marker
        if not record.producer_id.isdigit():
            return False, None
        return self.span_at(int(record.producer_id), record.offset) is not None, None

    def _add_span(self, span: Span) -> None:
        self.spans.setdefault(span.producer_id, []).append(span)
        self.spans[span.producer_id].sort(key=lambda s: s.first)
        self.top = max(self.top, span.first, span.end)
        if span.end < 0:
            self.open[span.producer_id] = span
        elif span.aborted:
            self.aborted.append(span)
            self.aborted.sort(key=lambda s: s.end)


class TxnIndex:
    """Every partition's :class:`PartitionTxns`, loaded from the engine's metadata."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._parts: dict[tuple[str, int], PartitionTxns] = {}
        for key, value in engine.meta(SPAN_KEY).items():
            partition, first, topic = key[len(SPAN_KEY) :].split("/", 2)
            pid, end, aborted = json.loads(value)
            part = self._parts.setdefault((topic, int(partition)), PartitionTxns())
            part._add_span(Span(int(pid), int(first), int(end), bool(aborted)))
        for key, value in engine.meta(MARKER_KEY).items():
            partition, offset, topic = key[len(MARKER_KEY) :].split("/", 2)
            pid, epoch, committed, ce = json.loads(value)
            part = self._parts.setdefault((topic, int(partition)), PartitionTxns())
            part.markers[int(offset)] = Marker(int(pid), int(epoch), bool(committed), int(ce))
            part.top = max(part.top, int(offset))

    def partition(self, topic: str, index: int, hwm: int) -> PartitionTxns:
        """The partition's index (started over if its log is shorter than the index)."""
        part = self._parts.get((topic, index))
        if part is not None and part.top >= hwm:
            self.forget(topic, index)
            part = None
        if part is None:
            part = self._parts[(topic, index)] = PartitionTxns()
        return part

    def known(self, topic: str, index: int) -> PartitionTxns | None:
        return self._parts.get((topic, index))

    def begin(self, topic: str, index: int, producer_id: int, offset: int) -> bool:
        """Open a span of ``producer_id`` at ``offset`` unless one is open (True: opened)."""
        part = self.partition(topic, index, offset)
        if producer_id in part.open:
            return False
        part._add_span(Span(producer_id, offset))
        self._save_span(topic, index, part.open[producer_id])
        return True

    def undo_begin(self, topic: str, index: int, producer_id: int) -> None:
        """Take back a span :meth:`begin` opened for an append that was refused."""
        part = self._parts[(topic, index)]
        span = part.open.pop(producer_id)
        part.spans[producer_id].remove(span)
        part.top = max(
            [s.end for ss in part.spans.values() for s in ss]
            + [s.first for ss in part.spans.values() for s in ss]
            + list(part.markers)
            + [-1]
        )
        self.engine.put_meta(f"{SPAN_KEY}{index}/{span.first}/{topic}", None)

    def end(self, topic: str, index: int, offset: int, marker: Marker) -> None:
        """Record ``marker`` at ``offset`` (the next offset of the log, before it is
        appended there) and close the producer's open span."""
        part = self.partition(topic, index, offset)
        part.markers[offset] = marker
        part.top = max(part.top, offset)
        self.engine.put_meta(
            f"{MARKER_KEY}{index}/{offset}/{topic}",
            json.dumps(
                [
                    marker.producer_id,
                    marker.producer_epoch,
                    marker.committed,
                    marker.coordinator_epoch,
                ]
            ).encode(),
        )
        span = part.open.pop(marker.producer_id, None)
        if span is not None:
            span.end, span.aborted = offset, not marker.committed
            if span.aborted:
                part.aborted.append(span)
            self._save_span(topic, index, span)

    def forget(self, topic: str, index: int | None = None) -> None:
        """Drop a deleted topic's (or one partition's) index and its metadata."""
        for key in [k for k in self._parts if k[0] == topic and index in (None, k[1])]:
            part = self._parts.pop(key)
            for spans in part.spans.values():
                for s in spans:
                    self.engine.put_meta(f"{SPAN_KEY}{key[1]}/{s.first}/{topic}", None)
            for offset in part.markers:
                self.engine.put_meta(f"{MARKER_KEY}{key[1]}/{offset}/{topic}", None)

    def _save_span(self, topic: str, index: int, span: Span) -> None:
        self.engine.put_meta(
            f"{SPAN_KEY}{index}/{span.first}/{topic}",
            json.dumps([span.producer_id, span.end, span.aborted]).encode(),
        )
