"""The log as Apache Kafka keeps it: each produced batch stored as written, served whole.

Kafka's log is a log of batches.  On Produce, ``LogValidator`` (storage module,
``validateMessagesAndAssignOffsets``) keeps a magic-2 batch's bytes and changes only its
header: the base offset (``setLastOffset``), the partition leader epoch
(``setPartitionLeaderEpoch``) and the max timestamp, set to the largest record timestamp
with the CreateTime type (``setMaxTimestamp``, which rewrites the attributes and the CRC
only when they change; a batch the producer marked LogAppendTime keeps its max timestamp,
which Kafka reads as every record's).  It builds a new batch instead
(``buildRecordsAndAssignOffsets``: the topic's codec, offsets and timestamps from the
records, the producer id, epoch, base sequence and transactional flag kept) when the
topic's ``compression.type`` names another codec than the batch's, or when a compressed
batch's records do not carry the offsets 0, 1, 2, ... (``record.offset() !=
expectedOffset``).

The engine keeps those bytes with the append (:class:`conformance.engine.Batch`, form
:data:`FORM`), with base offset 0: :func:`served` writes the stored base offset in when a
Fetch sends the batch.  So a Fetch returns the producer's batch: its CRC, attributes,
producer id, epoch, sequence and compression as Kafka's log holds them.

Not kept here: LogAppendTime (``message.timestamp.type`` is stored and described only,
so every batch keeps CreateTime) and compression levels (a rebuilt batch uses the codec's
default level).
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from conformance.engine import Batch, Record
from conformance.protocols.kafka import records as rec
from conformance.protocols.kafka.compression import NAMES

FORM = "kafka"
"""The engine form of a batch kept as Kafka's log holds it."""

LEADER_EPOCH = 0
"""The partition leader epoch this broker's one replica writes (Metadata says 0 too)."""

_TOPIC_CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
_I32, _I64 = struct.Struct(">i"), struct.Struct(">q")
_KEPT_ATTRIBUTES = 0x77  # codec, transactional, control, delete horizon: what Kafka rewrites
_TIMESTAMP_TYPE = 0x08


def target_codec(compression_type: str, source: int) -> int:
    """The codec Kafka stores a batch of codec ``source`` in, under a topic's
    ``compression.type`` (``producer``: the batch's own)."""
    return _TOPIC_CODECS.get(compression_type, source)


def as_stored(data: bytes, batch: rec.RecordBatch, compression_type: str = "producer") -> bytes:
    """The bytes Kafka's log keeps for the produced magic-2 ``batch`` (whose bytes are
    ``data``), base offset 0; see the module docstring for when they are rebuilt."""
    target = target_codec(compression_type, batch.compression)
    if target != batch.compression or (
        target and any(r.offset_delta + batch.base_offset != i for i, r in enumerate(batch.records))
    ):
        return _rebuilt(batch, target)
    top = max(-1, *_timestamps(batch))
    out = bytearray(data)
    out[0:8] = bytes(8)
    out[12:16] = _I32.pack(LEADER_EPOCH)
    attributes = batch.attributes
    if top != batch.max_timestamp or attributes & _TIMESTAMP_TYPE:
        out[21:23] = (attributes & _KEPT_ATTRIBUTES).to_bytes(2, "big")
        out[35:43] = _I64.pack(top)
        out[17:21] = crc32c(memoryview(out)[21:]).to_bytes(4, "big")
    return bytes(out)


def _timestamps(batch: rec.RecordBatch) -> list[int]:
    """The records' timestamps as Kafka reads them: the batch's max timestamp for every
    record of a batch marked LogAppendTime (``DefaultRecordBatch``), else base + delta."""
    if batch.attributes & _TIMESTAMP_TYPE:
        return [batch.max_timestamp] * len(batch.records)
    return [batch.base_timestamp + r.timestamp_delta for r in batch.records]


def _rebuilt(batch: rec.RecordBatch, codec: int) -> bytes:
    stamps = _timestamps(batch)
    base_ts = stamps[0] if stamps else -1
    transactional = batch.is_transactional
    return rec.encode_batch(
        rec.make_batch(
            [r.value for r in batch.records],
            keys=[r.key for r in batch.records],
            headers=[r.headers for r in batch.records],
            timestamps=stamps,
            base_timestamp=base_ts,
            compression=NAMES[codec],
            partition_leader_epoch=LEADER_EPOCH,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            transactional=transactional,
        )
    )


def served(batch: Batch) -> bytes:
    """A stored batch as a Fetch sends it: its base offset written in."""
    data = batch.data
    return _I64.pack(batch.base_offset) + data[8:]


def kept(record: Record) -> Batch | None:
    """The Kafka batch ``record`` was stored in; None if its append kept no Kafka bytes."""
    batch = record.batch
    return batch if batch is not None and batch.form == FORM else None
