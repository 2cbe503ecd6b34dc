"""Produce (key 0): record batches appended to partition logs.

Behavior: acks must be -1, 0 or 1 (else INVALID_REQUIRED_ACKS for every partition); with
acks=0 the records are appended and no response is sent, as Kafka does (a refused acks=0
produce closes the connection instead, as Kafka does, so the producer notices).  Resource
limits of this broker: a partition's records at most 1 MiB, compressed or decompressed,
and 16 MiB of records per request (MESSAGE_TOO_LARGE past them; see batches.py), and a
batch larger than its topic's max.message.bytes is MESSAGE_TOO_LARGE too (Kafka's
``UnifiedLog.analyzeAndValidateRecords``, per batch, before the CRC), and so is one that
grows past it when the topic's compression.type recompresses it (``UnifiedLog.append``
checks the batch it stores).  A topic or
partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION (Produce never creates
topics).  v3+ carries exactly one magic-2 batch per partition (else INVALID_RECORD);
v0-2 carry magic 0/1 message sets.  A batch whose CRC does not match is CORRUPT_MESSAGE;
one whose length claims bytes that are not there is CORRUPT_MESSAGE in ``doc`` and before
v3, and INVALID_RECORD in ``apache`` from v3 (Kafka's iterator then finds no whole batch,
which ``ProduceRequest.validateRecords`` refuses); one whose record count or record
lengths disagree with its bytes is CORRUPT_MESSAGE in ``doc`` and INVALID_RECORD in
``apache`` (Kafka's record iterator throws InvalidRecordException); a compression codec
5-7 is CORRUPT_MESSAGE in ``doc`` and UNKNOWN_SERVER_ERROR in ``apache`` (Kafka's
catch-all); nothing of a refused partition is stored.  A batch with a producer id is
idempotent under the engine's STRICT policy (Kafka's sequence rules): a resend of a
remembered batch is acknowledged with its first offsets; a sequence gap is
OUT_OF_ORDER_SEQUENCE_NUMBER; a lower epoch is INVALID_PRODUCER_EPOCH.  A control batch
is INVALID_RECORD (Kafka's LogValidator: clients may not write control records), and so
is a batch whose last_offset_delta is not its record count less one, or one with a
producer id and a negative base sequence (``LogValidator.validateBatch``).  A v3+ batch
is stored as Kafka's log keeps it (:mod:`..stored_batches`), so a Fetch returns it as
produced; a v0-2 message set is stored as one batch, as Kafka converts it.

Transactions (Apache Kafka's ``KafkaApis.handleProduceRequest`` and ``ReplicaManager``'s
transaction verification): a request with a transactional batch (attribute bit 4) but no
transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition.  A
transactional batch is checked against the coordinator: an unknown transactional id or
another producer id is INVALID_PRODUCER_ID_MAPPING; another epoch INVALID_PRODUCER_EPOCH
(the coordinator's PRODUCER_FENCED, as ``AddPartitionsToTxnManager`` maps it); a partition
not added to the transaction INVALID_TXN_STATE in v0-10 and TRANSACTION_ABORTABLE in v11.
The first transactional batch of a producer in a partition opens its transaction there
(the last stable offset stays below it until the marker).  A non-transactional batch of a
producer with a transaction open in that partition is INVALID_TXN_STATE
(``ProducerAppendInfo``).
"""

from __future__ import annotations

from typing import Any

from conformance.engine import STRICT, EngineError
from conformance.errors import ProtocolError, TrailingBytes, Truncated
from conformance.protocols.kafka import batches, log_start, topic_configs
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import CLOSE, NO_RESPONSE, Broker, NoResponse
from conformance.protocols.kafka.errors import code, from_engine
from conformance.protocols.kafka.record_types import CorruptRecord, RecordsDisagree
from conformance.protocols.kafka.records import batch_spans
from conformance.protocols.kafka.transaction_coordinator import coordinator_of


def _append(
    broker: Broker,
    topic: str,
    index: int,
    data: bytes | None,
    version: int,
    budget: list[int],
    tid: str | None,
) -> tuple[str, int, str | None]:
    """(error, base offset, message) of one partition's records; ``budget[0]`` is what is
    left of the request's record bytes (spent here)."""
    pgcdc = broker.config.revision == "doc"
    try:
        broker.engine.high_watermark(topic, index)
    except EngineError as exc:
        return from_engine(exc.code), -1, str(exc)
    limit = topic_configs.max_message_bytes(broker.engine, topic)
    biggest = _largest_batch(data or b"")
    if biggest > limit:  # Kafka: UnifiedLog.analyzeAndValidateRecords, per batch, before CRCs
        return (
            "MESSAGE_TOO_LARGE",
            -1,
            (f"a {biggest}-byte batch; the topic's max.message.bytes is {limit}"),
        )
    try:
        compression = topic_configs.compression_type(broker.engine, topic)
        append = batches.from_request(data or b"", version, budget[0], compression)
        budget[0] -= max(len(data or b""), batches.size(append))
        if len(append.written) > limit:  # Kafka's UnifiedLog.append checks the stored batch too
            return (
                "MESSAGE_TOO_LARGE",
                -1,
                f"the batch as stored (compression.type {compression}) takes "
                f"{len(append.written)} bytes; the topic's max.message.bytes is {limit}",
            )
    except batches.Refused as exc:
        return exc.error, -1, str(exc)
    except batches.UnknownCodec as exc:  # Kafka: CompressionType.forId's exception, caught
        return ("CORRUPT_MESSAGE" if pgcdc else "UNKNOWN_SERVER_ERROR"), -1, str(exc)
    except CorruptRecord as exc:  # a CRC that does not match
        return "CORRUPT_MESSAGE", -1, str(exc)
    except Truncated as exc:  # the bytes end inside a batch: a length the bytes do not hold
        # Kafka's batch iterator finds no whole batch, and ProduceRequest.validateRecords
        # (v3+) refuses a partition without one: InvalidRecordException
        return ("CORRUPT_MESSAGE" if pgcdc or version < 3 else "INVALID_RECORD"), -1, str(exc)
    except (RecordsDisagree, TrailingBytes) as exc:  # a count or length the records belie
        return ("CORRUPT_MESSAGE" if pgcdc else "INVALID_RECORD"), -1, str(exc)
    except ProtocolError as exc:  # anything else that does not decode (a compressed stream)
        return "CORRUPT_MESSAGE", -1, str(exc)
    txn = batches.transactional(data or b"") if version >= 3 else None
    tx = coordinator_of(broker)
    began = False
    if txn is not None:
        # Produce v12 (transactions V2) adds the partition itself (AddPartitionsToTxnManager
        # .produceRequestVersionToTransactionSupportedOperation: ADD_PARTITION from v12)
        verdict = tx.produce_check(tid or "", txn[0], txn[1], (topic, index), add=version >= 12)
        if verdict != "NONE":
            return _unverified(verdict, version), -1, f"transaction check: {verdict}"
        began = tx.index.begin(topic, index, txn[0], broker.engine.high_watermark(topic, index))
    elif append.producer is not None:
        part = tx.index.known(topic, index)
        if part is not None and int(append.producer.producer_id) in part.open:
            return "INVALID_TXN_STATE", -1, "a non-transactional write inside a transaction"
    try:
        result = broker.engine.append(
            topic,
            index,
            append.records,
            append.producer,
            policy=STRICT,
            form=append.form,
            data=append.written,
        )
    except EngineError as exc:
        if began:
            tx.index.undo_begin(topic, index, txn[0] if txn else -1)
        return from_engine(exc.code), -1, str(exc)
    if began and result.duplicate:
        tx.index.undo_begin(topic, index, txn[0] if txn else -1)
    return "NONE", result.base_offset, None


def _unverified(verdict: str, version: int) -> str:
    """A transaction check's verdict as a Produce answers it (``AddPartitionsToTxnManager``
    and ``ReplicaManager.handleProduceAppend``)."""
    if verdict == "PRODUCER_FENCED":
        return "INVALID_PRODUCER_EPOCH"
    if verdict == "TRANSACTION_ABORTABLE" and version <= 10:
        return "INVALID_TXN_STATE"
    return verdict


def _transactional_records(body: dict[str, Any], version: int) -> bool:
    """Whether any partition carries a transactional batch (Kafka's
    ``RequestUtils.hasTransactionalRecords``)."""
    return version >= 3 and any(
        batches.transactional(p.get("records") or b"") is not None
        for t in body.get("topic_data", [])
        for p in t.get("partition_data", [])
    )


def handle(broker: Broker, request: Request, peer: str) -> dict[str, Any] | NoResponse:
    body, version = request.body, request.api_version
    acks = int(body.get("acks", 1))
    budget = [batches.MAX_REQUEST_BYTES]
    coordinator_of(broker).expire()
    tid = body.get("transactional_id")
    refused = tid is None and _transactional_records(body, version)
    failed = False
    responses = []
    for t in body.get("topic_data", []):
        name = t.get("name", "")
        parts: list[dict[str, Any]] = []
        for p in t.get("partition_data", []):
            index = int(p.get("index", 0))
            message: str | None
            if refused:
                error, base, message = (
                    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                    -1,
                    ("transactional records without a transactional id"),
                )
            elif acks not in (-1, 0, 1):
                error, base, message = "INVALID_REQUIRED_ACKS", -1, f"acks {acks}: -1, 0 or 1"
            else:
                error, base, message = _append(
                    broker, name, index, p.get("records"), version, budget, tid
                )
            failed = failed or error != "NONE"
            parts.append(
                {
                    "index": index,
                    "error_code": code(error),
                    "base_offset": base,
                    "log_append_time_ms": -1,
                    "log_start_offset": (
                        log_start.log_start_offset(broker.engine, name, index)
                        if error == "NONE"
                        else -1
                    ),
                    "record_errors": [],
                    "error_message": message,
                }
            )
        responses.append({"name": name, "partition_responses": parts})
    if acks == 0:
        # no response, as Kafka; but a refused acks=0 produce closes the connection, so
        # the producer sees that something went wrong
        return CLOSE if failed else NO_RESPONSE
    return {"responses": responses, "throttle_time_ms": 0}


def _largest_batch(data: bytes) -> int:
    """The size of the largest whole batch (or legacy message) in ``data``, its offset and
    size fields included (0 when its lengths do not parse: decoding then says what is wrong)."""
    try:
        spans, _ = batch_spans(data)
    except ProtocolError:
        return 0
    return max((end - start for start, end in spans), default=0)
