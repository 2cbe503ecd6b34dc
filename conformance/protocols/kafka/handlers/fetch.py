"""Fetch (key 1): records from partition logs, waiting for data up to ``max_wait_ms``.

Behavior: the response is sent once at least ``min_bytes`` of records are ready or
``max_wait_ms`` has passed (long poll; the server re-polls on every append).  Each
partition gives whole batches as stored (:func:`..batches.for_fetch`), from the one that
holds ``fetch_offset`` (which may begin before it, as in Kafka) up to
``partition_max_bytes``, and the response up to ``max_bytes`` (v3+), but from v3 on the
first batch of the response whatever its size (KIP-74; Kafka's ``minOneMessage``), so a
large batch cannot block a consumer.  A batch that does not fit is left out whole: Kafka
sends the slice of its log file that fits, which may end in a partial batch that
clients drop; this broker never sends one.  A
partition error (or a session error) is answered at once, without waiting.  An offset
below 0 or past the high watermark is OFFSET_OUT_OF_RANGE; an unknown topic or partition
UNKNOWN_TOPIC_OR_PARTITION (v13+, topics by id: UNKNOWN_TOPIC_ID).  Fetch sessions
(v7+, KIP-227) are kept by :mod:`..fetch_sessions`, which says what a request reads
and shapes the answer (session id, incremental answers).  Transactions (Apache Kafka's
``UnifiedLog.read`` and ``LocalLog``): every answer gives the partition's last stable
offset (the first offset of its earliest open transaction, else the high watermark);
isolation_level 1 (READ_COMMITTED, v4+) returns no record at or past it and lists the
aborted transactions (producer id, first offset) that overlap what it returns
(``TransactionIndex.collectAbortedTxns``; an empty list when none does); READ_UNCOMMITTED
returns everything up to the high watermark, and its aborted_transactions is null, as is
an error partition's (``LocalLog.read`` collects them only for READ_COMMITTED, and
``KafkaApis.handleFetchRequest`` sends the missing list as null); the document says
nothing of the field, so ``doc`` answers it as Kafka does.  Transactional records and
markers go out in batches with their flags (:func:`..batches.for_fetch`).  Record format:
revision ``doc`` sends magic-2 batches at every version (as pgcdc does); ``apache`` sends
magic 0 for v0-1 and magic 1 for v2-3.
"""

from __future__ import annotations

from typing import Any

from conformance.engine import EngineError
from conformance.protocols.kafka import batches, fetch_sessions, log_start, topic_configs
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import Broker
from conformance.protocols.kafka.errors import code, from_engine
from conformance.protocols.kafka.handlers.metadata import ZERO_ID
from conformance.protocols.kafka.transaction_coordinator import coordinator_of


def _magic(broker: Broker, version: int) -> int:
    if broker.config.revision == "doc" or version >= 4:
        return 2
    return 0 if version < 2 else 1


class _Fetch:
    def __init__(self, broker: Broker, request: Request) -> None:
        self.broker = broker
        self.request = request
        body = request.body
        self.min_bytes = int(body.get("min_bytes", 1))
        wait_s = max(int(body.get("max_wait_ms", 0)), 0) / 1000
        self.deadline = broker.clock() + wait_s
        self.error = False
        self.session = fetch_sessions.resolve(broker, request)  # KIP-227, before any read
        self.coordinator = coordinator_of(broker)
        self.coordinator.expire()  # a transaction past its timeout is aborted first
        self.committed = request.api_version >= 4 and int(body.get("isolation_level", 0)) == 1

    def poll(self, now: float) -> dict[str, Any] | None:
        body, size = self.build()
        ready = size >= self.min_bytes or (size > 0 and self.min_bytes <= 0)
        if ready or self.error or now >= self.deadline:
            return self.session.shape(body)
        return None

    def build(self) -> tuple[dict[str, Any], int]:
        broker, version, body = self.broker, self.request.api_version, self.request.body
        budget = int(body.get("max_bytes", 0x7FFFFFFF)) if version >= 3 else 0x7FFFFFFF
        total = 0
        self.error = False  # an error in any partition is answered at once, as Kafka does
        responses = []
        for t in self.session.topics:
            if version >= 13:
                tid = t.get("topic_id", ZERO_ID)
                name = broker.topic_named(tid)
                missing = "UNKNOWN_TOPIC_ID"
            else:
                tid, name, missing = ZERO_ID, t.get("topic", ""), "UNKNOWN_TOPIC_OR_PARTITION"
            parts = []
            for p in t.get("partitions", []):
                index = int(p.get("partition", 0))
                if name is None:
                    entry = _partition(index, missing, -1, b"")
                else:
                    limit = min(int(p.get("partition_max_bytes", 0x7FFFFFFF)), budget - total)
                    first = total == 0 and version >= 3  # KIP-74: v3+ always get a batch
                    offset = int(p.get("fetch_offset", 0))
                    entry = self._read(name, index, offset, limit, first)
                total += len(entry["records"] or b"")
                self.error = self.error or entry["error_code"] != 0
                parts.append(entry)
            responses.append({"topic": t.get("topic", ""), "topic_id": tid, "partitions": parts})
        reply = {
            "throttle_time_ms": 0,
            "error_code": 0,
            "session_id": 0,
            "responses": responses,
        }
        self.error = self.error or self.session.refused  # a session error: at once
        return reply, total

    def _no_zstd(self, topic: str) -> bool:
        """A Fetch below v10 of a topic whose compression.type is zstd, which Kafka refuses
        (``KafkaApis.handleFetchRequest``: UNSUPPORTED_COMPRESSION_TYPE)."""
        if self.request.api_version >= 10 or self.broker.config.revision != "apache":
            return False
        return topic_configs.compression_type(self.broker.engine, topic) == "zstd"

    def _read(self, topic: str, index: int, offset: int, limit: int, first: bool) -> dict[str, Any]:
        engine, magic = self.broker.engine, _magic(self.broker, self.request.api_version)
        committed = self.committed
        try:
            hwm = engine.high_watermark(topic, index)
            txns = self.coordinator.index.known(topic, index)
            if txns is not None:
                txns = self.coordinator.index.partition(topic, index, hwm)
            lso = txns.last_stable_offset(hwm) if txns is not None else hwm
            start = log_start.log_start_offset(engine, topic, index)
            if self._no_zstd(topic):
                return _partition(index, "UNSUPPORTED_COMPRESSION_TYPE", -1, b"")
            if not start <= offset <= hwm:
                return _partition(index, "OFFSET_OUT_OF_RANGE", hwm, b"", lso, start=start)
            end = lso if committed else hwm
            # the log is read a batch at a time, so a fetch costs what it returns, not
            # the length of the log behind it
            data, at = batches.for_fetch(
                lambda start, n: engine.read(topic, index, start, n),
                offset,
                end,
                magic,
                limit,
                first,
                txns,
                self.broker.config.fetch_max_records,
            )
        except EngineError as exc:
            return _partition(index, from_engine(exc.code), -1, b"")
        aborted = None  # READ_UNCOMMITTED: null, as Kafka's UnifiedLog.read gives no list
        if committed:
            aborted = []
            if txns is not None and at > offset:
                aborted = [
                    {"producer_id": s.producer_id, "first_offset": s.first}
                    for s in txns.aborted_in(offset, at)
                ]
        return _partition(index, "NONE", hwm, data, lso, aborted, start=start)


def _partition(
    index: int,
    error: str,
    hwm: int,
    records: bytes,
    lso: int | None = None,
    aborted: list[dict[str, int]] | None = None,
    start: int = 0,
) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code(error),
        "high_watermark": hwm,
        "last_stable_offset": hwm if lso is None else lso,
        "log_start_offset": start if hwm >= 0 else -1,
        "aborted_transactions": aborted,
        "preferred_read_replica": -1,
        "records": records,
    }


def handle(broker: Broker, request: Request, peer: str) -> _Fetch:
    return _Fetch(broker, request)
