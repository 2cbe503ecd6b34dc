"""Between Kafka's record batches (:mod:`.records`) and the engine's records.

``from_request`` reads the records of one partition of a Produce request into an engine
append: its records, the producer id, epoch and sequence range of an idempotent
producer, and the batch as Kafka's log keeps it (:mod:`.stored_batches`); a v0-2 message
set is one append, as Kafka converts it to one batch.  ``for_fetch`` serves a log for a
Fetch response as Kafka does, in whole batches: a stored Kafka batch as it is kept, and
an append no Kafka producer wrote (another front-end's, a transaction marker) as one
batch built from its records (transactional records and markers with their flags).
Batches are added while they fit the byte limit, the first always when asked (so a
batch larger than the limit cannot block a consumer); a batch is never cut.

Headers (docs/cross-protocol.md): an engine record's headers are Kafka's record headers,
but for the names other front-ends reserve for their own per-message fields
(:data:`RESERVED`: Iggy's id and timestamps, Cursus's message fields), which a Fetch
leaves out.  So that a Kafka producer may still use any name, one of its headers whose
name begins with a reserved prefix or with :data:`ESCAPE` is stored with ``ESCAPE`` in
front, and a Fetch takes one ``ESCAPE`` off again: Kafka's headers read back as sent.
(A stored Kafka batch is served as produced, its header names untouched.)
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Sequence
from typing import NamedTuple

from conformance.engine import NewRecord, ProducerBatch, Record
from conformance.errors import ProtocolError
from conformance.protocols.kafka import records as rec
from conformance.protocols.kafka.compression import TooLarge
from conformance.protocols.kafka.record_types import CONTROL_BIT, TRANSACTIONAL_BIT
from conformance.protocols.kafka.stored_batches import FORM, as_stored, kept, served
from conformance.protocols.kafka.transaction_index import Marker, PartitionTxns

BATCH_RECORDS = 500
"""The most records of a batch this broker builds from records (no Kafka producer wrote)."""
MAX_BATCH_BYTES = 1 << 20
MAX_REQUEST_BYTES = 16 << 20
"""The most record bytes (decompressed) one Produce request may carry over all its
partitions; partitions past it are refused with MESSAGE_TOO_LARGE."""
"""The most a produced batch may take, compressed on the wire or decompressed: a
resource limit of this broker (Kafka's own default, max.message.bytes, is about 1 MiB
too; it refuses with MESSAGE_TOO_LARGE).  Every record costs Python objects, and the
broker decodes on its one event loop: a small compressed batch of a million empty
records must not stall every connection for seconds."""
_I64, _I32, _U32 = struct.Struct(">q"), struct.Struct(">i"), struct.Struct(">I")


class Append(NamedTuple):
    """One engine append: the records, the idempotent producer's range (None without a
    producer id), and the batch as Kafka's log keeps it (b"": a v0-2 message set)."""

    records: list[NewRecord]
    producer: ProducerBatch | None
    written: bytes

    @property
    def form(self) -> str:
        return FORM if self.written else ""


RESERVED = ("iggy.", "cursus.")
"""Prefixes of the header names other front-ends keep their message fields under."""
ESCAPE = "kafka."
"""Put in front of a Kafka header's name that begins with a reserved prefix or with itself."""


def stored_header(name: str) -> str:
    """The engine's name of a Kafka header ``name``."""
    return ESCAPE + name if name.startswith((*RESERVED, ESCAPE)) else name


def fetched_header(name: str) -> str | None:
    """The Kafka name of an engine header ``name``; None: another front-end's field."""
    if name.startswith(RESERVED):
        return None
    return name[len(ESCAPE) :] if name.startswith(ESCAPE) else name


class UnknownCodec(ProtocolError):
    """A batch naming a compression codec id no Kafka knows (5-7)."""


class Refused(ProtocolError):
    """Records a broker refuses with ``error`` (a Kafka error name)."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error


def from_request(
    data: bytes, version: int, budget: int = MAX_REQUEST_BYTES, compression: str = "producer"
) -> Append:
    """The append of one partition's ``records`` field of a Produce v``version`` to a
    topic whose ``compression.type`` is ``compression``.

    Raises Refused (INVALID_RECORD: not exactly one magic-2 batch in v3+, a control
    batch, a transactional batch without a producer id, no records, offsets that do not
    number the records, a producer id without a sequence) or ProtocolError
    (CORRUPT_MESSAGE: a bad CRC, a count or length that disagrees with the bytes, a
    partial batch)."""
    if not data:
        raise Refused("INVALID_RECORD", "the partition's records are empty")
    _known_codecs(data)
    limit = min(MAX_BATCH_BYTES, budget)
    if len(data) > limit:
        raise Refused("MESSAGE_TOO_LARGE", f"{len(data)} bytes of records: at most {limit} here")
    try:
        batches = rec.decode_batches(data, strict=True, max_decompressed=limit)
    except TooLarge as exc:
        raise Refused("MESSAGE_TOO_LARGE", str(exc)) from None
    if version < 3:
        if any(b.magic == 2 for b in batches):
            raise Refused("INVALID_RECORD", f"Produce v{version} carries magic 0/1 messages")
        records = [r for b in batches for r in _records(b)]
        if not records:
            raise Refused("INVALID_RECORD", "the message set holds no message")
        return Append(records, None, b"")
    if len(batches) != 1 or batches[0].magic != 2:
        raise Refused(
            "INVALID_RECORD",
            f"Produce v{version} carries exactly one magic-2 batch per partition",
        )
    batch = batches[0]
    _check(batch)
    records = _records(batch)
    producer = None
    if batch.producer_id >= 0:
        first = batch.base_sequence
        producer = ProducerBatch(
            str(batch.producer_id), batch.producer_epoch, first, first + len(records) - 1
        )
    return Append(records, producer, as_stored(data, batch, compression))


def _check(batch: rec.RecordBatch) -> None:
    """Refused as Kafka's ``LogValidator.validateBatch`` refuses a client's batch."""
    if batch.is_control:  # clients may not write control records
        raise Refused("INVALID_RECORD", "a client may not write a control batch")
    if batch.is_transactional and batch.producer_id < 0:
        raise Refused("INVALID_RECORD", "a transactional batch without a producer id")
    if not batch.records:
        raise Refused("INVALID_RECORD", "the batch holds no record")
    if batch.last_offset_delta + 1 != len(batch.records):
        raise Refused(
            "INVALID_RECORD",
            f"last_offset_delta {batch.last_offset_delta} does not number the batch's "
            f"{len(batch.records)} record(s) (it must be the count less one)",
        )
    if batch.producer_id >= 0 and batch.base_sequence < 0:
        raise Refused(
            "INVALID_RECORD",
            f"producer id {batch.producer_id} with base_sequence {batch.base_sequence}",
        )


def transactional(data: bytes) -> tuple[int, int] | None:
    """(producer id, epoch) of a transactional batch; None for any other records (call it
    on records :func:`from_request` took)."""
    try:
        header = rec.peek_batch(data)
    except ProtocolError:
        return None
    if header.magic != 2 or not header.is_transactional:
        return None
    return header.producer_id, header.producer_epoch


def _known_codecs(data: bytes) -> None:
    """UnknownCodec if a whole magic-2 batch of ``data`` names codec 5, 6 or 7 (checked
    before decoding: Apache Kafka answers it otherwise than a batch that does not decode)."""
    try:
        spans, _ = rec.batch_spans(data)
    except ProtocolError:
        return
    for start, end in spans:
        if end - start > 22 and data[start + 16] == 2 and data[start + 22] & 0x07 > 4:
            raise UnknownCodec(f"compression codec {data[start + 22] & 0x07} at byte {start}")


def size(append: Append) -> int:
    """The record bytes of ``append`` (what they cost against a request's budget)."""
    return sum(
        16
        + len(r.key or b"")
        + len(r.value or b"")
        + sum(len(k) + len(v or b"") for k, v in r.headers)
        for r in append.records
    )


def _records(batch: rec.RecordBatch) -> list[NewRecord]:
    base = batch.base_timestamp
    return [
        NewRecord(
            r.key,
            r.value,
            tuple((stored_header(h.key), h.value) for h in r.headers),
            base + r.timestamp_delta if base >= 0 else None,
        )
        for r in batch.records
    ]


Kind = tuple[bool, Marker | None]
"""(transactional, the marker if the record is a control record) of a stored record."""
_PLAIN: Kind = (False, None)


def _batch(run: Sequence[Record], magic: int, kind: Kind = _PLAIN) -> bytes:
    transactional, marker = kind
    if magic < 2:  # a down-converted fetch has no control records (nor their flags)
        return b"" if marker else b"".join(_legacy(r, magic) for r in run)
    first = run[0]
    producer = int(first.producer_id) if first.producer_id.isdigit() else -1
    epoch = first.producer_epoch if producer >= 0 else -1
    sequence = first.sequence if producer >= 0 else -1
    if marker is not None:
        producer, epoch, sequence = marker.producer_id, marker.producer_epoch, -1
    attributes = (TRANSACTIONAL_BIT if transactional else 0) | (CONTROL_BIT if marker else 0)
    base_ts = min(r.timestamp_ms for r in run)
    return rec.encode_batch(
        rec.RecordBatch(
            base_offset=first.offset,
            attributes=attributes,
            base_timestamp=base_ts,
            max_timestamp=max(r.timestamp_ms for r in run),
            producer_id=producer,
            producer_epoch=epoch,
            base_sequence=sequence,
            last_offset_delta=run[-1].offset - first.offset,
            records=tuple(
                rec.Record(
                    offset_delta=r.offset - first.offset,
                    timestamp_delta=r.timestamp_ms - base_ts,
                    key=r.key,
                    value=r.value,
                    headers=tuple(
                        rec.Header(name, v)
                        for k, v in r.headers
                        if (name := fetched_header(k)) is not None
                    ),
                )
                for r in run
            ),
        )
    )


def _legacy(r: Record, magic: int) -> bytes:
    """One uncompressed magic 0/1 message (a Fetch v0-3 response in revision apache)."""
    body = bytes((magic, 0)) + (_I64.pack(r.timestamp_ms) if magic else b"")
    for part in (r.key, r.value):
        body += _I32.pack(-1) if part is None else _I32.pack(len(part)) + part
    crc = zlib.crc32(body)
    return _I64.pack(r.offset) + _I32.pack(len(body) + 4) + _U32.pack(crc) + body


def for_fetch(
    read: Callable[[int, int], Sequence[Record]],
    offset: int,
    end: int,
    magic: int,
    limit: int,
    first: bool,
    txns: PartitionTxns | None = None,
    max_records: int = 1 << 31,
) -> tuple[bytes, int]:
    """A log's batches for a Fetch from ``offset``, and the offset after the last record
    they hold.

    ``read(at, n)`` gives the log's records from ``at``; ``end`` is where reading stops
    (the high watermark, or the last stable offset); ``magic`` the record format (0 and 1
    are a down-converted fetch); batches are added while they fit ``limit`` bytes, the
    first whatever its size when ``first`` is set (Kafka's ``minOneMessage``), and until
    ``max_records`` records are passed; ``txns`` are the partition's transactions (the
    flags of built batches).

    A batch a Kafka producer wrote is served whole, from its base (which may lie before
    ``offset``, as in Kafka); down-converted, it is its records' legacy messages, those
    before ``offset`` left out.  Records no Kafka producer wrote (another front-end's
    appends, transaction markers, a v0-2 message set, appends an older version of the
    journal joined) have no Kafka batch: they are built into batches from ``offset`` on,
    one per run of one producer and kind (:func:`_built`), cut to what fits."""
    out: list[bytes] = []
    size, at = 0, offset
    while at < end and at - offset < max_records:
        (head,) = read(at, 1)
        stored = kept(head)
        room, whole = limit - size, first and not out
        if stored is None:
            batch = head.batch
            stop = batch.base_offset + batch.count if batch is not None else at + 1
            chunk = read(at, max(1, min(stop, end, at + BATCH_RECORDS) - at))
            data, count = _built(chunk, magic, room, whole, txns)
            if not count:
                break
            out.append(data)
            size += len(data)
            at += count
            if count < len(chunk):
                break
            continue
        stop = min(stored.base_offset + stored.count, end)
        # down-converted, Kafka leaves out the records before the offset
        data = _batch(read(at, stop - at), magic) if magic < 2 else served(stored)
        if len(data) > room and not whole:
            break
        out.append(data)
        size += len(data)
        at = stop
    return b"".join(out), at


def _built(
    records: Sequence[Record], magic: int, limit: int, first: bool, txns: PartitionTxns | None
) -> tuple[bytes, int]:
    """``records`` (of one append that kept no Kafka batch) as built batches of ``magic``,
    up to ``limit`` bytes (``first``: at least one record whatever its size), and how many
    of the records they hold.  A run that does not fit is cut to the records that do: these
    batches are this broker's, and no Kafka answer says where they end."""
    out: list[bytes] = []
    size = count = 0
    for kind, run in _runs(records, txns):
        data = _batch(run, magic, kind)
        if size + len(data) > limit:
            cut = _fitting(run, magic, kind, limit - size)
            if cut == 0 and not out and first:
                cut = 1
            if cut:
                data = _batch(run[:cut], magic, kind)
                out.append(data)
                size += len(data)
                count += cut
            break
        out.append(data)
        size += len(data)
        count += len(run)
    return b"".join(out), count


def _runs(records: Sequence[Record], txns: PartitionTxns | None) -> list[tuple[Kind, list[Record]]]:
    """``records`` in runs a batch can hold: one producer, epoch and kind, consecutive
    sequences, a control record alone, at most :data:`BATCH_RECORDS` records."""
    runs: list[tuple[Kind, list[Record]]] = []
    for r in records:
        kind = txns.attributes(r) if txns is not None else _PLAIN
        last = runs[-1][1][-1] if runs else None
        same = (
            last is not None
            and kind[1] is None  # a control record is a batch of its own
            and runs[-1][0] == kind
            and (last.producer_id, last.producer_epoch) == (r.producer_id, r.producer_epoch)
            and len(runs[-1][1]) < BATCH_RECORDS
            and (not r.producer_id or r.sequence == last.sequence + 1)
        )
        if same:
            runs[-1][1].append(r)
        else:
            runs.append((kind, [r]))
    return runs


def _fitting(run: list[Record], magic: int, kind: Kind, room: int) -> int:
    """How many of ``run``'s first records make a batch of at most ``room`` bytes (the
    whole run does not fit)."""
    low, high = 0, len(run) - 1
    while low < high:
        mid = (low + high + 1) // 2
        if len(_batch(run[:mid], magic, kind)) <= room:
            low = mid
        else:
            high = mid - 1
    return low
