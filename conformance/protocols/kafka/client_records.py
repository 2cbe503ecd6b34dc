"""What a client's produced records must be (KAF-CLI-7, -8), read from a Produce's bytes.

Sans-IO: :func:`check_records` reads one partition's ``records`` field of a Produce at its
version and returns the violations found and the batches it could read (for the
idempotence checks of :mod:`.validation`).
"""

from __future__ import annotations

from conformance.errors import ProtocolError
from conformance.protocols.kafka import records as rec
from conformance.protocols.kafka.record_types import RecordBatch
from conformance.validate.contract import Violation

CRC = "KAF-CLI-7"
LAYOUT = "KAF-CLI-8"


def check_records(
    data: bytes | None, version: int, path: str
) -> tuple[list[Violation], list[RecordBatch]]:
    """Violations in the records field ``path`` of a Produce v``version``, and its batches."""
    if not data:
        return [Violation(LAYOUT, f"{path} holds no record batch", (path,))], []
    try:
        spans, rest = rec.batch_spans(data)
    except ProtocolError as exc:
        return [Violation(LAYOUT, f"{path}: {exc}", (path,))], []
    if rest:
        return [Violation(LAYOUT, f"{path}: the last {rest} bytes are a cut batch", (path,))], []
    found: list[Violation] = []
    batches: list[RecordBatch] = []
    for i, (start, end) in enumerate(spans):
        where = f"{path}.batch[{i}]"
        magic = data[start + 16]
        if version >= 3 and magic != 2:
            found.append(Violation(CRC, f"{where}: magic {magic} in Produce v{version}", (where,)))
            continue
        if version < 3 and magic == 2:
            found.append(Violation(CRC, f"{where}: magic 2 in Produce v{version}", (where,)))
            continue
        if magic == 2:
            try:
                header = rec.peek_batch(data, start)
            except ProtocolError as exc:
                found.append(Violation(LAYOUT, f"{where}: {exc}", (where,)))
                continue
            if not header.crc_ok:
                found.append(
                    Violation(
                        CRC,
                        f"{where}: crc {header.crc:#010x} does not match the batch's bytes",
                        (f"{where}.crc",),
                    )
                )
                continue
        try:
            (batch,) = rec.decode_batches(data[start:end], strict=True)
        except rec.CorruptRecord as exc:
            found.append(Violation(CRC, f"{where}: {exc}", (where,)))
            continue
        except ProtocolError as exc:
            found.append(Violation(LAYOUT, f"{where}: {exc}", (where,)))
            continue
        found += _layout(batch, where)
        batches.append(batch)
    if version >= 3 and len(spans) > 1:
        found.append(
            Violation(CRC, f"{path}: {len(spans)} batches; Produce v3+ carries one", (path,))
        )
    return found, batches


def _layout(batch: RecordBatch, where: str) -> list[Violation]:
    if batch.magic != 2:
        return []
    count = len(batch.records)
    if count == 0:
        return [Violation(LAYOUT, f"{where}: a batch with no record", (where,))]
    if batch.last_offset_delta != count - 1:
        return [
            Violation(
                LAYOUT,
                f"{where}: last offset delta {batch.last_offset_delta} with {count} records",
                (f"{where}.last_offset_delta",),
            )
        ]
    deltas = [r.offset_delta for r in batch.records]
    if deltas != list(range(count)):
        bad = next(i for i, d in enumerate(deltas) if d != i)
        return [
            Violation(
                LAYOUT,
                f"{where}: record {bad} has offset delta {deltas[bad]}, expected {bad}",
                (f"{where}.record[{bad}].offset_delta",),
            )
        ]
    return []
