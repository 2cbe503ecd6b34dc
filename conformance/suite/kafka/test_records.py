"""Kafka record batches (SPEC.md, area "records")."""

from __future__ import annotations

import struct
import zlib
from typing import Any

from crc32c import crc32c

from conformance.errors import ProtocolError
from conformance.protocols.kafka import records
from conformance.suite.case import Violation, case, require
from conformance.suite.kafka.steps import (
    Located,
    batch,
    create_topic,
    fetch,
    produce,
    produce_parts,
)
from conformance.suite.kafka.verify import KafkaClient, expect_code, need
from conformance.suite.shown import joined, show, show_all, show_fields
from conformance.suite.target import CaseContext

REFUSED = ["CORRUPT_MESSAGE", "INVALID_RECORD"]


def _recrc(data: bytearray) -> bytes:
    """The batch with its CRC computed again (so only the lie we meant is there)."""
    data[17:21] = crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def _nothing_stored(target: CaseContext, k: KafkaClient, topic: str, requirement: str) -> None:
    got = fetch(target, k, topic, 0, 0, requirement=requirement)
    require(
        not got.data,
        requirement,
        f"the refused batch was stored: a Fetch returned {len(got.data)} bytes of records, "
        "expected none",
        got.records_at(),
    )


def _refused(
    target: CaseContext,
    data: bytes,
    requirement: str,
    what: str,
    codes: list[str] | None = None,
    base: str = "refused",
) -> None:
    with KafkaClient(target) as k:
        topic = create_topic(target, k, base)
        p = produce_parts(target, k, topic, {0: data}, requirement=requirement)[0]
        expect_code(p, "error_code", codes or REFUSED, requirement, what)
        _nothing_stored(target, k, topic, requirement)


def _records(rows: list[tuple[Any, ...]]) -> str:
    """Records ``(key, value[, headers])`` as ``key 'k1' value null header 'h'='x'; ...``."""
    shown = []
    for key, value, *rest in rows:
        heads = [f"header {show(h)}={show(v)}" for h, v in (rest[0] if rest else ())]
        shown.append(" ".join([show_fields(key=key, value=value), *heads]))
    return joined(shown, sep="; ", empty="no records")


def _differing(
    found: list[Located],
    back: list[Any],
    want: list[Any],
    fields: tuple[str, ...] = ("key", "value", "headers"),
) -> list[str]:
    """The names of the fields of the records read back that differ from those expected
    (every record's, when the counts differ)."""
    if len(back) != len(want):
        return [f"{x.name}.{f}" for x in found for f in fields]
    return [
        f"{x.name}.{f}"
        for x, got, expected in zip(found, back, want, strict=True)
        for f, a, b in zip(fields, got, expected, strict=True)
        if a != b
    ]


@case("kafka/records/1", "KAF-REC-1")
def test_a_produced_batch_reads_back_as_record_batch_v2(target: CaseContext) -> None:
    """Records travel as RecordBatch v2: a produced batch reads back with the same records.

    KAF-REC-1: "records travel as RecordBatch v2 (magic 2) ..."
    """
    sent = records.make_batch(
        [b"v1", None, b""],
        keys=[b"k1", b"k2", None],
        headers=[[("h", b"x")], [], [("n", None)]],
        base_timestamp=1_700_000_000_000,
    )
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "v2")
        produce(target, k, topic, records.encode_batch(sent), requirement="KAF-REC-1")
        fetched = fetch(target, k, topic, 0, 0, requirement="KAF-REC-1")
        got = fetched.batches("KAF-REC-1")
    require(
        got and all(b.magic == 2 for b in got),
        "KAF-REC-1",
        f"the fetch holds {len(got)} batch(es), of magic {show_all(b.magic for b in got)}; "
        "expected one or more, of magic 2",
        fetched.records_at(*(f"batch[{i}].magic" for i in range(len(got)))),
    )
    found = fetched.located("KAF-REC-1")
    back = [(x.record.key, x.record.value, tuple(x.record.headers)) for x in found]
    want = [(r.key, r.value, tuple(r.headers)) for r in sent.records]
    require(
        back == want,
        "KAF-REC-1",
        f"records read back: {_records(back)}; expected {_records(want)}",
        fetched.records_at(*_differing(found, back, want)),
    )


@case("kafka/records/2", "KAF-REC-2")
def test_a_stale_crc_is_corrupt_and_nothing_is_stored(target: CaseContext) -> None:
    """A batch whose CRC does not match is refused with CORRUPT_MESSAGE (2).

    KAF-REC-2: "... a broker refuses a produced batch whose CRC does not match with CORRUPT_MESSAGE
    (2) and stores none of it."
    """
    data = bytearray(batch([b"one", b"two"]))
    data[-2] ^= 0x01  # "two" becomes "twn" (the last byte is the header count); CRC kept
    _refused(target, bytes(data), "KAF-REC-2", "a batch with a stale CRC", ["CORRUPT_MESSAGE"])


@case("kafka/records/3", "KAF-REC-3")
def test_a_record_count_that_lies_is_refused(target: CaseContext) -> None:
    """A batch whose record count disagrees with its records is refused, nothing stored.

    KAF-REC-3: "a produced batch whose record count ... disagree with its bytes is refused
    (CORRUPT_MESSAGE or INVALID_RECORD) and none of it is stored ..."
    """
    data = bytearray(batch([b"one", b"two"]))
    data[57:61] = (5).to_bytes(4, "big")  # count 5, two records follow; CRC recomputed
    _refused(target, _recrc(data), "KAF-REC-3", "a record count of 5 over 2 records")


@case("kafka/records/4", "KAF-REC-3")
def test_a_record_length_that_overruns_is_refused(target: CaseContext) -> None:
    """A record whose varint length runs past the batch is refused, nothing stored.

    KAF-REC-3: "a produced batch whose ... lengths or varints disagree with its bytes is refused
    (CORRUPT_MESSAGE or INVALID_RECORD) and none of it is stored ..."
    """
    data = bytearray(batch([b"one"]))
    data[61] = 0x7E  # the record's length: zigzag 63, far more than the bytes left
    _refused(target, _recrc(data), "KAF-REC-3", "a record length of 63 over 10 bytes")


@case("kafka/records/5", "KAF-REC-3")
def test_a_batch_length_that_lies_is_refused(target: CaseContext) -> None:
    """A batch whose length claims more bytes than were sent is refused, nothing stored.

    KAF-REC-3: "a produced batch whose ... lengths ... disagree with its bytes is refused
    (CORRUPT_MESSAGE or INVALID_RECORD) and none of it is stored; the broker never allocates by a
    length the sender claims beyond the bytes it sent."
    """
    data = bytearray(batch([b"one"]))
    data[8:12] = (len(data) + 1000).to_bytes(4, "big")
    _refused(target, bytes(data), "KAF-REC-3", "a batch length 1000 bytes too long")


def _codec_round_trip(target: CaseContext, codec_name: str) -> None:
    values = [f"{codec_name}-{i}".encode() * 20 for i in range(5)]
    with KafkaClient(target) as k:
        topic = create_topic(target, k, codec_name)
        base = produce(
            target, k, topic, batch(values, compression=codec_name), requirement="KAF-REC-4"
        )["base_offset"]
        fetched = fetch(target, k, topic, 0, base, requirement="KAF-REC-4")
        got = fetched.values("KAF-REC-4")
    require(
        [v for _, v in got] == values,
        "KAF-REC-4",
        f"{codec_name}: read back {show_all((v for _, v in got), limit=12)}, expected the 5 "
        f"values {show_all(values, limit=12)}",
        fetched.values_at("KAF-REC-4"),
    )


@case("kafka/records/6", "KAF-REC-4")
def test_gzip_records_read_back_as_produced(target: CaseContext) -> None:
    """Records compressed with gzip (codec 1) are accepted and read back exactly.

    KAF-REC-4: "records compressed with gzip ... are accepted and read back exactly as produced."
    """
    _codec_round_trip(target, "gzip")


@case("kafka/records/7", "KAF-REC-4")
def test_snappy_records_read_back_as_produced(target: CaseContext) -> None:
    """Records compressed with snappy (codec 2) are accepted and read back exactly.

    KAF-REC-4: "records compressed with ... snappy ... are accepted and read back exactly as
    produced."
    """
    _codec_round_trip(target, "snappy")


@case("kafka/records/8", "KAF-REC-4")
def test_lz4_records_read_back_as_produced(target: CaseContext) -> None:
    """Records compressed with lz4 (codec 3) are accepted and read back exactly.

    KAF-REC-4: "records compressed with ... lz4 ... are accepted and read back exactly as produced."
    """
    _codec_round_trip(target, "lz4")


@case("kafka/records/9", "KAF-REC-4")
def test_zstd_records_read_back_as_produced(target: CaseContext) -> None:
    """Records compressed with zstd (codec 4) are accepted and read back exactly.

    KAF-REC-4: "records compressed with ... zstd ... are accepted and read back exactly as
    produced."
    """
    _codec_round_trip(target, "zstd")


@case("kafka/records/10", "KAF-REC-5")
def test_fetch_v0_answers_magic_2_batches(target: CaseContext) -> None:
    """Fetch responses carry magic-2 record batches at every version, v0 included.

    KAF-REC-5: "Fetch responses carry magic-2 record batches at every Fetch version, v0 included."
    """
    need(target, "Fetch", 0)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "magic")
        produce(target, k, topic, batch([b"m"]), requirement="KAF-REC-5")
        got = fetch(target, k, topic, 0, 0, version=0, requirement="KAF-REC-5")
    if len(got.data) <= 16:
        raise Violation(
            "KAF-REC-5",
            f"Fetch v0 records are {len(got.data)} bytes, too short to hold a magic; "
            "expected a magic-2 batch",
            got.records_at(),
        )
    magic = got.data[16]
    entry = "message[0]" if magic in (0, 1) else "batch[0]"  # as the annotator names it
    require(
        magic == 2,
        "KAF-REC-5",
        f"Fetch v0 records have magic {magic}, expected 2",
        got.records_at(f"{entry}.magic"),
    )


def _legacy_message(value: bytes) -> bytes:
    """A magic-1 message set of one message: offset, size, crc, magic 1, attributes,
    timestamp, key (null), value; the CRC-32 covers magic to the end."""
    body = struct.pack(">bbq", 1, 0, 1_700_000_000_000) + b"\xff\xff\xff\xff"
    body += len(value).to_bytes(4, "big") + value
    message = zlib.crc32(body).to_bytes(4, "big") + body
    return struct.pack(">qi", 0, len(message)) + message


@case("kafka/records/11", "KAF-REC-6")
def test_a_magic_1_message_set_in_produce_v3_is_refused(target: CaseContext) -> None:
    """Produce v3+ carrying a magic-1 message set is refused and nothing is stored.

    KAF-REC-6: "a Produce request of version 3 or later that carries a batch of magic 0 or 1 is
    refused (INVALID_RECORD (87), UNSUPPORTED_FOR_MESSAGE_FORMAT (43) or CORRUPT_MESSAGE (2)) and
    nothing of it is stored."
    """
    _refused(
        target,
        _legacy_message(b"old"),
        "KAF-REC-6",
        "a magic-1 message in Produce v3+",
        ["INVALID_RECORD", "UNSUPPORTED_FOR_MESSAGE_FORMAT", "CORRUPT_MESSAGE"],
    )


@case("kafka/records/12", "KAF-REC-7")
def test_compression_codecs_5_to_7_are_refused(target: CaseContext) -> None:
    """A batch whose compression codec is 5, 6 or 7 is refused and nothing is stored.

    KAF-REC-7: "a batch whose compression codec (attribute bits 0-2) is 5, 6 or 7 is refused
    (UNSUPPORTED_COMPRESSION_TYPE (76), CORRUPT_MESSAGE (2), INVALID_RECORD (87) or
    UNKNOWN_SERVER_ERROR (-1), the answer Apache Kafka gives) and nothing of it is stored."
    """
    for codec_id in (5, 6, 7):
        data = bytearray(batch([b"x"]))
        data[22] = (data[22] & ~0x07) | codec_id  # attributes low byte
        _refused(
            target,
            _recrc(data),
            "KAF-REC-7",
            f"compression codec {codec_id}",
            [
                "UNSUPPORTED_COMPRESSION_TYPE",
                "CORRUPT_MESSAGE",
                "INVALID_RECORD",
                "UNKNOWN_SERVER_ERROR",
            ],
            base=f"codec{codec_id}",
        )


@case("kafka/records/13", "KAF-REC-8")
def test_the_broker_assigns_offsets_not_the_producer(target: CaseContext) -> None:
    """The base offset a producer writes is ignored: the batch is stored where the broker says.

    KAF-REC-8: "the broker assigns offsets: the base offset a producer writes into a batch is
    ignored, and the fetched batch starts at the offset the Produce response reported."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "base")
        first = produce(target, k, topic, batch([b"a"], base_offset=1000), requirement="KAF-REC-8")
        require(
            first["base_offset"] == 0,
            "KAF-REC-8",
            f"first batch stored at offset {first['base_offset']}, expected 0",
            first.at("base_offset"),
        )
        fetched = fetch(target, k, topic, 0, 0, requirement="KAF-REC-8")
        got = fetched.batches("KAF-REC-8")
    require(
        got,
        "KAF-REC-8",
        "the Fetch at 0 returned no batch, expected the one produced at 0",
        fetched.records_at(),
    )
    require(
        got[0].base_offset == 0,
        "KAF-REC-8",
        f"fetched batch base offset {got[0].base_offset}, expected 0",
        fetched.records_at("batch[0].base_offset"),
    )


@case("kafka/records/14", "KAF-REC-9")
def test_fetched_batches_are_well_formed(target: CaseContext) -> None:
    """Every fetched batch has magic 2, a matching CRC-32C and length, and a last offset
    delta and count that match its records.

    KAF-REC-9: "every batch in a Fetch response is well formed: magic 2, a CRC-32C that matches, a
    batch length that matches its bytes, a last offset delta and a record count that match its
    records."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "formed")
        for i in range(3):
            produce(target, k, topic, batch([b"r%d" % i] * (i + 1)), requirement="KAF-REC-9")
        got = fetch(target, k, topic, 0, 0, requirement="KAF-REC-9")
    data, at, seen = got.data, 0, 0
    while at + 61 <= len(data):
        name = f"batch[{seen}]"
        try:
            head = records.peek_batch(data, at)
        except ProtocolError as exc:
            raise Violation(
                "KAF-REC-9",
                f"the batch at byte {at} is malformed: {exc}",
                got.records_at(name),
            ) from None
        computed = crc32c(data[at + 21 : at + 12 + head.batch_length])
        require(
            head.crc_ok,
            "KAF-REC-9",
            f"the batch at byte {at} has CRC 0x{head.crc:08x} on the wire, expected "
            f"0x{computed:08x} (the CRC-32C of its bytes from attributes on)",
            got.records_at(f"{name}.crc", f"{name}.crc (computed)"),
        )
        one = got.batches("KAF-REC-9")[seen]
        require(
            len(one.records) == head.count and one.last_offset_delta == head.count - 1,
            "KAF-REC-9",
            f"batch {seen}: record count {head.count}, {len(one.records)} records, "
            f"last offset delta {one.last_offset_delta}; expected the count of records and "
            f"that count minus 1",
            got.records_at(f"{name}.record count", f"{name}.last_offset_delta"),
        )
        at += 12 + head.batch_length
        seen += 1
    require(
        seen >= 1 and at == len(data),
        "KAF-REC-9",
        f"{seen} whole batch(es) in {len(data)} bytes, {len(data) - at} left over; "
        "expected at least one batch and nothing left over",
        got.records_at(),
    )


@case("kafka/records/15", "KAF-REC-10")
def test_null_and_empty_keys_and_values_are_kept_apart(target: CaseContext) -> None:
    """A null key or value reads back null, an empty one empty.

    KAF-REC-10: "a record with a null key or null value (varint length -1) reads back null, and one
    with an empty key or value (length 0) reads back empty: the two are kept apart."
    """
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "nulls")
        sent = records.make_batch([None, b"", b"v"], keys=[b"", None, None])
        produce(target, k, topic, records.encode_batch(sent), requirement="KAF-REC-10")
        fetched = fetch(target, k, topic, 0, 0, requirement="KAF-REC-10")
    found = fetched.located("KAF-REC-10")
    back = [(x.record.key, x.record.value) for x in found]
    want = [(b"", None), (None, b""), (None, b"v")]
    require(
        back == want,
        "KAF-REC-10",
        f"read back: {_records(back)}; expected {_records(want)}",
        fetched.records_at(*_differing(found, back, want, ("key", "value"))),
    )
