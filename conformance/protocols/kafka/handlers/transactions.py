"""The handlers of transactions: InitProducerId (key 22) with a transactional id,
AddPartitionsToTxn (key 24), AddOffsetsToTxn (key 25), EndTxn (key 26), TxnOffsetCommit
(key 28).

Behavior / version notes (Apache Kafka's ``KafkaApis`` handlers before its transaction
coordinator, :mod:`..transaction_coordinator`, which decides the rest):

* InitProducerId (0-5): without a transactional id it is the idempotent producer's
  (:func:`.admin.init_producer_id`).  A producer id without an epoch, or the reverse, is
  INVALID_REQUEST.  PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v4.
* AddPartitionsToTxn (0-5): v0-3 carry one transaction, v4+ a batch (each answered on its
  own; ``verify_only`` checks without adding).  A partition that does not exist is
  UNKNOWN_TOPIC_OR_PARTITION and every other partition of that transaction
  OPERATION_NOT_ATTEMPTED (nothing is added); otherwise every partition gets the
  coordinator's answer.  PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
* AddOffsetsToTxn (0-4), EndTxn (0-5): the coordinator's answer; PRODUCER_FENCED is
  INVALID_PRODUCER_EPOCH before v2.  EndTxn v5 is transactions V2 (KIP-890 part 2; Kafka's
  ``TransactionVersion.transactionVersionForEndTxn``): the epoch is bumped at every end and
  the answer carries the producer id and the new epoch (-1 and -1 with an error; Kafka's
  ``handleEndTxnRequest`` sets what the coordinator's callback gives).
* TxnOffsetCommit (0-5): :mod:`.txn_offsets`.
"""

from __future__ import annotations

from typing import Any

from conformance.engine import EngineError
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import Broker, Handler
from conformance.protocols.kafka.errors import code
from conformance.protocols.kafka.handlers import admin, txn_offsets
from conformance.protocols.kafka.transaction_coordinator import coordinator_of

_FENCED_FROM = {22: 4, 24: 2, 25: 2, 26: 2}
"""The first version of each API that may answer PRODUCER_FENCED (KIP-588); before it,
Kafka's handlers answer INVALID_PRODUCER_EPOCH."""


def _error(request: Request, error: str) -> int:
    if error == "PRODUCER_FENCED" and request.api_version < _FENCED_FROM[request.api_key]:
        error = "INVALID_PRODUCER_EPOCH"
    return code(error)


def _exists(broker: Broker, topic: str, index: int) -> bool:
    try:
        broker.engine.high_watermark(topic, index)
    except EngineError:
        return False
    return True


def init_producer_id(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body = request.body
    tid = body.get("transactional_id")
    if tid is None:
        return admin.init_producer_id(broker, request, peer)
    reply = {"throttle_time_ms": 0, "error_code": 0, "producer_id": -1, "producer_epoch": -1}
    pid, epoch = int(body.get("producer_id", -1)), int(body.get("producer_epoch", -1))
    if (pid < 0) != (epoch < 0):
        return {**reply, "error_code": code("INVALID_REQUEST")}
    expected = (pid, epoch) if pid >= 0 else None
    error, pid, epoch = coordinator_of(broker).init_producer_id(
        tid, int(body.get("transaction_timeout_ms", 0)), expected
    )
    return {
        **reply,
        "error_code": _error(request, error),
        "producer_id": pid,
        "producer_epoch": epoch,
    }


def _add_one(
    broker: Broker, request: Request, tid: str, pid: int, epoch: int, verify: bool, topics: Any
) -> list[dict[str, Any]]:
    wanted = [(t.get("name", ""), int(p)) for t in topics for p in t.get("partitions", [])]
    missing = {tp for tp in wanted if not _exists(broker, *tp)}
    tx = coordinator_of(broker)
    errors: dict[tuple[str, int], int]
    if missing:
        errors = {
            tp: code("UNKNOWN_TOPIC_OR_PARTITION" if tp in missing else "OPERATION_NOT_ATTEMPTED")
            for tp in wanted
        }
    elif verify:
        errors = {tp: _error(request, e) for tp, e in tx.verify(tid, pid, epoch, wanted).items()}
    else:
        error = _error(request, tx.add_partitions(tid, pid, epoch, wanted))
        errors = dict.fromkeys(wanted, error)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), error_code in errors.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": index, "partition_error_code": error_code}
        )
    return [{"name": t, "results_by_partition": parts} for t, parts in by_topic.items()]


def add_partitions_to_txn(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body = request.body
    if request.api_version < 4:
        results = _add_one(
            broker,
            request,
            body.get("v3_and_below_transactional_id", ""),
            int(body.get("v3_and_below_producer_id", -1)),
            int(body.get("v3_and_below_producer_epoch", -1)),
            False,
            body.get("v3_and_below_topics", []),
        )
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": results}
    out = [
        {
            "transactional_id": t.get("transactional_id", ""),
            "topic_results": _add_one(
                broker,
                request,
                t.get("transactional_id", ""),
                int(t.get("producer_id", -1)),
                int(t.get("producer_epoch", -1)),
                bool(t.get("verify_only", False)),
                t.get("topics", []),
            ),
        }
        for t in body.get("transactions", [])
    ]
    return {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": out}


def add_offsets_to_txn(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body = request.body
    error = coordinator_of(broker).add_offsets(
        body.get("transactional_id", ""),
        int(body.get("producer_id", -1)),
        int(body.get("producer_epoch", -1)),
        body.get("group_id", ""),
    )
    return {"throttle_time_ms": 0, "error_code": _error(request, error)}


V2_END_FROM = 5
"""The first EndTxn version of transactions V2 (an epoch bump at every end)."""


def end_txn(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body = request.body
    end = (
        body.get("transactional_id", ""),
        int(body.get("producer_id", -1)),
        int(body.get("producer_epoch", -1)),
        bool(body.get("committed", False)),
    )
    tx = coordinator_of(broker)
    if request.api_version < V2_END_FROM:
        return {"throttle_time_ms": 0, "error_code": _error(request, tx.end_txn(*end))}
    error, pid, epoch = tx.end_txn_v2(*end)
    return {
        "throttle_time_ms": 0,
        "error_code": _error(request, error),
        "producer_id": pid,
        "producer_epoch": epoch,
    }


HANDLERS: dict[int, Handler] = {
    22: init_producer_id,
    24: add_partitions_to_txn,
    25: add_offsets_to_txn,
    26: end_txn,
    28: txn_offsets.txn_offset_commit,
}
