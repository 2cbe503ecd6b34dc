"""Kafka record batches (conformance/protocols/kafka/records.py, compression.py).

Round trips through every codec; interop both ways with kafka-python's record module
(its bytes decoded by ours, ours by it, magic 0 and 1 message sets included); and
hostile input: a bad CRC, a record count or a length that lies, varints too long,
truncation at every byte, random bytes and mutated batches with a valid CRC, and
compression bombs.  Each decoder either returns or raises ProtocolError.
"""

from __future__ import annotations

import contextlib
import struct
import tracemalloc
import zlib
from collections.abc import Iterator
from typing import Any

import lz4.frame
import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from conformance.errors import ProtocolError, TrailingBytes, Truncated
from conformance.protocols.kafka import compression
from conformance.protocols.kafka.records import (
    CorruptRecord,
    Header,
    Record,
    RecordBatch,
    batch_spans,
    decode_batches,
    encode_batch,
    make_batch,
    peek_batch,
)
from conformance.wire.varint import varint as _varint

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def sample(codec: str = "none", **kw: Any) -> RecordBatch:
    """Five records: null key, null value, empty ones, headers (one null-valued, one
    with a non-ASCII key), a value long enough for two-byte varints."""
    return make_batch(
        [b"v0", None, b"", b"x" * 300, b"last"],
        keys=[None, b"k1", b"", b"k3", b"k" * 70],
        headers=[[], [("h", b"1")], [Header("n", None), ("é", b"")], [], [("a", b"b")] * 3],
        timestamps=[1_700_000_000_000, 1_700_000_000_005, 1_699_999_999_999, 1_700_000_009_000,
                    1_700_000_000_001],
        compression=codec, **kw,
    )  # fmt: skip


def fix_crc(batch: bytes) -> bytes:
    """A magic-2 batch with its CRC made right again."""
    return batch[:17] + crc32c(batch[21:]).to_bytes(4, "big") + batch[21:]


def raw_batch(body: bytes, count: int, attributes: int = 0) -> bytes:
    """A magic-2 batch around ``body``, whatever it holds, with a right CRC."""
    tail = struct.pack(">hiqqqhii", attributes, max(count - 1, 0), 0, 0, -1, -1, -1, count)
    return fix_crc(struct.pack(">qiibI", 0, 49 + len(body), -1, 2, 0) + tail + body)


def record_bytes(*fields: bytes) -> bytes:
    """A record: its length varint, then ``fields`` as given."""
    body = b"".join(fields)
    return _varint(len(body)) + body


def kafka_python_view(raw: bytes) -> Iterator[tuple[Any, ...]]:
    """(offset, timestamp, key, value, headers) of every record, as kafka-python reads them."""
    records = MemoryRecords(bytes(raw))
    while (batch := records.next_batch()) is not None:
        if batch.magic == 2:
            assert batch.validate_crc()
        for r in batch:
            yield r.offset, r.timestamp, r.key, r.value, list(r.headers)


def our_view(batches: list[RecordBatch]) -> Iterator[tuple[Any, ...]]:
    for b in batches:
        for r in b.records:
            ts = b.base_timestamp + r.timestamp_delta if b.magic else None
            yield (b.base_offset + r.offset_delta, ts, r.key, r.value,
                   [(h.key, h.value) for h in r.headers])  # fmt: skip


# -- round trips -------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_every_codec(codec: str) -> None:
    batch = sample(codec, base_offset=42, partition_leader_epoch=7)
    raw = encode_batch(batch)
    (back,) = decode_batches(raw)
    assert back == batch
    assert back.compression_name == codec and back.count == 5 and back.last_offset == 46
    assert back.max_timestamp == 1_700_000_009_000 and back.records[2].timestamp_delta == -1
    assert encode_batch(back) == raw  # the same bytes again
    header = peek_batch(raw)
    assert header.crc_ok and header.count == 5 and header.size == len(raw)
    assert (header.base_offset, header.partition_leader_epoch) == (42, 7)


def test_flags_producer_fields_and_control_batches() -> None:
    batch = make_batch(
        [b"\x00\x00\x00\x00\x00\x05"], keys=[b"\x00\x00\x00\x01"], control=True,
        transactional=True, producer_id=1234, producer_epoch=3, base_sequence=99,
        log_append_time=True, compression="zstd",
    )  # fmt: skip
    raw = encode_batch(batch)
    (back,) = decode_batches(raw)
    assert back == batch and back.is_control and back.is_transactional
    assert back.timestamp_type == 1 and back.compression == 4
    h = peek_batch(raw)
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (1234, 3, 99)
    assert h.is_control and h.is_transactional and h.last_offset_delta == 0
    theirs = DefaultRecordBatch(bytearray(raw))
    assert theirs.is_control_batch and theirs.is_transactional and theirs.producer_id == 1234
    assert theirs.base_sequence == 99 and theirs.validate_crc()


def test_record_attributes_and_large_deltas() -> None:
    records = (
        Record(0, -(2**40), b"k", b"v", (), -3),
        Record(2**20, 2**40, None, None, (Header("x" * 200, b"y" * 20000),), 5),
    )
    batch = RecordBatch(records=records, last_offset_delta=2**20, base_timestamp=2**41)
    (back,) = decode_batches(encode_batch(batch))
    assert back == batch


def test_several_batches_and_a_partial_one() -> None:
    raws = [encode_batch(sample(c, base_offset=10 * i)) for i, c in enumerate(CODECS)]
    data = b"".join(raws)
    assert [b.base_offset for b in decode_batches(data)] == [0, 10, 20, 30, 40]
    spans, rest = batch_spans(data + raws[0][:30])
    assert len(spans) == 5 and rest == 30
    assert len(decode_batches(data + raws[0][:-1])) == 5
    with pytest.raises(Truncated):
        decode_batches(data + raws[0][:-1], strict=True)
    assert decode_batches(b"") == [] and decode_batches(bytearray(raws[1]))[0].base_offset == 10


def test_encode_refuses_legacy_magic() -> None:
    with pytest.raises(ValueError, match="magic"):
        encode_batch(RecordBatch(records=(), last_offset_delta=-1, magic=1))
    with pytest.raises(ValueError, match="as many"):
        make_batch([b"a", b"b"], keys=[b"k"])


# -- interop with kafka-python -----------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_ours(codec: str) -> None:
    batch = sample(codec, base_offset=100)
    assert list(kafka_python_view(encode_batch(batch))) == list(our_view([batch]))


@pytest.mark.parametrize("codec", CODECS)
def test_we_read_kafka_python(codec: str) -> None:
    builder = MemoryRecordsBuilder(2, CODECS.index(codec), 1 << 20, producer_id=5,
                                   producer_epoch=1, base_sequence=8)  # fmt: skip
    for i in range(50):
        headers = [("trace", b"%d" % i), ("n", None)] if i % 3 else []
        builder.append(1_700_000_000_000 + 7 * i, None if i % 5 == 0 else b"key-%d" % i,
                       None if i % 7 == 0 else b"value-%d " % i * 20, headers)  # fmt: skip
    builder.close()
    raw = bytes(builder.buffer())
    if codec == "snappy":
        assert raw[61:69] == b"\x82SNAPPY\x00"  # kafka-python writes the xerial framing
    batches = decode_batches(raw)
    assert list(our_view(batches)) == list(kafka_python_view(raw))
    assert (batches[0].producer_id, batches[0].producer_epoch, batches[0].base_sequence) == (
        5,
        1,
        8,
    )
    assert batches[0].compression_name == codec


def legacy(magic: int, codec: int, offsets: range, logs: bool = False) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for i in offsets:
        builder.append(i, 1_600_000_000_000 + i, b"k%d" % i if i % 2 else None, b"v%d" % i)
    return bytes(builder.build())


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [0, 1, 2, 3])
def test_legacy_message_sets(magic: int, codec: int) -> None:
    if magic == 0 and codec == 3:  # kafka-python needs xxhash for it: see the next test
        return
    raw = legacy(magic, codec, range(5))
    batches = decode_batches(raw)
    assert list(our_view(batches)) == list(kafka_python_view(raw))
    assert all(b.magic == magic and b.compression == codec for b in batches)
    assert len(batches) == (1 if codec else 5)


def legacy_message(offset: int, magic: int, attrs: int, ts: int, key: bytes | None,
                   value: bytes | None) -> bytes:  # fmt: skip
    body = bytes((magic, attrs)) + (struct.pack(">q", ts) if magic else b"")
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def test_legacy_offsets_timestamps_and_magic0_lz4() -> None:
    inner = b"".join(legacy_message(i, 1, 0, 1000 + i, None, b"v%d" % i) for i in range(3))
    wrapper = legacy_message(52, 1, 1, 1002, None, compression.compress(1, inner))
    (b,) = decode_batches(wrapper)  # magic 1: inner offsets relative, wrapper's the last
    assert [b.base_offset + r.offset_delta for r in b.records] == [50, 51, 52]
    assert (b.base_timestamp, b.max_timestamp, b.records[2].timestamp_delta) == (1000, 1002, 2)
    log_append = legacy_message(52, 1, 1 | 8, 5000, None, compression.compress(1, inner))
    (b,) = decode_batches(log_append)
    assert b.timestamp_type == 1 and {r.timestamp_delta for r in b.records} == {0}
    assert b.base_timestamp == 5000
    # magic 0 lz4: Kafka 0.8-0.9 wrote a wrong header checksum, which the reader ignores
    inner0 = b"".join(legacy_message(i, 0, 0, -1, b"k", b"v%d" % i) for i in range(3))
    frame = bytearray(lz4.frame.compress(inner0, block_linked=False))
    frame[14] ^= 0x5A  # content size present: the checksum is byte 14
    (b,) = decode_batches(legacy_message(2, 0, 3, -1, None, bytes(frame)))
    assert [r.value for r in b.records] == [b"v0", b"v1", b"v2"]
    with pytest.raises(ProtocolError):
        decode_batches(legacy_message(2, 1, 3, -1, None, bytes(frame)))  # magic 1: checked


def test_legacy_refusals() -> None:
    good = legacy_message(0, 1, 0, 5, b"k", b"v")
    with pytest.raises(CorruptRecord):
        decode_batches(good[:-1] + b"w")
    nested = legacy_message(0, 1, 1, 5, None, compression.compress(1, legacy_message(
        0, 1, 1, 5, None, compression.compress(1, good))))  # fmt: skip
    with pytest.raises(ProtocolError, match="another magic/codec"):
        decode_batches(nested)
    for bad in (
        legacy_message(0, 1, 4, 5, None, compression.compress(4, good)),  # zstd in magic 1
        legacy_message(0, 1, 1, 5, None, None),  # compressed without a value
        legacy_message(0, 1, 1, 5, None, compression.compress(1, b"")),  # holds nothing
        legacy_message(0, 1, 1, 5, None, compression.compress(1, good[:-3])),  # cut inside
        legacy_message(0, 0, 1, 5, None, compression.compress(1, good)),  # magic differs
    ):
        with pytest.raises(ProtocolError):
            decode_batches(bad)


# -- hostile input -----------------------------------------------------------------------


def test_crc_mismatch_is_corrupt_record() -> None:
    raw = bytearray(encode_batch(sample("gzip")))
    raw[-5] ^= 1
    with pytest.raises(CorruptRecord, match="CRC"):
        decode_batches(bytes(raw))
    assert not peek_batch(bytes(raw)).crc_ok


@pytest.mark.parametrize("delta", [1, -1, 1000, -7])
def test_record_count_that_lies(delta: int) -> None:
    raw = bytearray(encode_batch(sample()))
    struct.pack_into(">i", raw, 57, 5 + delta)
    with pytest.raises(ProtocolError) as info:
        decode_batches(fix_crc(bytes(raw)))
    assert not isinstance(info.value, CorruptRecord)
    if delta == -1:
        assert isinstance(info.value, TrailingBytes)


@pytest.mark.parametrize(
    "body, match",
    [
        (record_bytes(b"\x00\x00\x00", b"\x03", b"\x02v", b"\x00"), "key length below -1"),
        (record_bytes(b"\x00\x00\x00\x01", b"\x05", b"\x00"), "value length below -1"),
        (record_bytes(b"\x00\x00\x00\x01\x01", b"\x01"), "header count"),
        (record_bytes(b"\x00\x00\x00\x01\x01\x02\x01"), "header key length"),
        (record_bytes(b"\x00\x00\x00\x01\x01\x02\x00\x05"), "header value length"),
        (record_bytes(b"\x00" + b"\x80" * 10 + b"\x00", b"\x00\x01\x01\x00"), "longer than 10"),
        (record_bytes(b"\x00\x00" + b"\x80" * 5 + b"\x00", b"\x01\x01\x00"), "longer than 5"),
        (record_bytes(b"\x00\x00\xff\xff\xff\xff\x7f", b"\x01\x01\x00"), "out of range"),
        (record_bytes(b"\x00\x00\x00\x01\x01\x00\x00"), "disagree with its length"),
        (b"\x0c\x00\x00\x00\x04ab", "bytes end sooner"),
        (b"\x04\x00\x00\x00\x01\x01\x00", "bad length"),
        (b"\x7f" + b"\x00" * 6, "bad length"),
    ],
)
def test_malformed_records(body: bytes, match: str) -> None:
    with pytest.raises(ProtocolError, match=match):
        decode_batches(raw_batch(body, 1))


def test_unknown_magic_and_compression() -> None:
    raw = bytearray(encode_batch(sample()))
    for code in (5, 6, 7):
        raw[22] = code
        with pytest.raises(ProtocolError, match="unknown compression code"):
            decode_batches(fix_crc(bytes(raw)))
    raw[16] = 3
    with pytest.raises(ProtocolError, match="unknown magic 3"):
        decode_batches(bytes(raw))
    with pytest.raises(ProtocolError, match="only magic 2"):
        peek_batch(bytes(raw))
    with pytest.raises(ProtocolError, match="has length"):
        decode_batches(b"\x00" * 8 + b"\xff\xff\xff\xff" + b"\x00" * 20)
    with pytest.raises(Truncated):
        peek_batch(bytes(raw)[:60])


@pytest.mark.parametrize("codec", CODECS)
def test_truncated_at_every_byte(codec: str) -> None:
    raw = encode_batch(sample(codec)) + encode_batch(sample("none", base_offset=5))
    first = len(encode_batch(sample(codec)))
    for cut in range(len(raw)):
        assert len(decode_batches(raw[:cut])) == (cut >= first)
        if cut not in (0, first):
            with pytest.raises(Truncated):
                decode_batches(raw[:cut], strict=True)


@pytest.mark.parametrize("codec", CODECS)
def test_body_cut_inside_with_a_good_crc(codec: str) -> None:
    """The batch length agrees and the CRC holds, yet the records (or the compressed
    block) end early: every cut is a ProtocolError."""
    raw = encode_batch(sample(codec))
    for cut in range(61, len(raw)):
        cropped = bytearray(raw[:cut])
        struct.pack_into(">i", cropped, 8, cut - 12)
        with pytest.raises(ProtocolError):
            decode_batches(fix_crc(bytes(cropped)))


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_any_bytes_decode_or_raise_protocol_error(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decode_batches(data)
    with contextlib.suppress(ProtocolError):
        peek_batch(data)


BATCHES = {c: encode_batch(sample(c)) for c in CODECS}


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(CODECS),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8),
    st.booleans(),
)
def test_mutated_batches_with_a_good_crc(
    codec: str, edits: list[tuple[int, int]], legacy_too: bool
) -> None:
    """Bytes after the CRC changed, the CRC fixed: the decoder meets hostile records
    (and compressed blocks) and must still return or raise ProtocolError."""
    raw = bytearray(BATCHES[codec])
    for where, byte in edits:
        raw[21 + where % (len(raw) - 21)] = byte
    data = fix_crc(bytes(raw))
    if legacy_too:  # the same hostile bytes as a magic 1 wrapper's compressed value
        data = legacy_message(0, 1, max(1, min(CODECS.index(codec), 3)), 0, None, data[61:])
    with contextlib.suppress(ProtocolError):
        decode_batches(data)


header_st = st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=20))


@given(
    st.lists(
        st.tuples(
            st.none() | st.binary(max_size=40),
            st.none() | st.binary(max_size=200),
            st.lists(header_st, max_size=3),
            st.integers(-(2**40), 2**40),
        ),
        max_size=20,
    ),
    st.sampled_from(CODECS),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-1, 2**31 - 1),
)
def test_round_trip_property(
    rows: list[tuple[Any, ...]], codec: str, base_offset: int, producer_id: int
) -> None:
    batch = make_batch(
        [r[1] for r in rows], keys=[r[0] for r in rows], headers=[r[2] for r in rows],
        timestamps=[r[3] for r in rows] if rows else None, compression=codec,
        base_offset=base_offset, producer_id=producer_id,
    )  # fmt: skip
    raw = encode_batch(batch)
    assert decode_batches(raw, strict=True) == [batch]
    if rows and base_offset >= 0:
        assert [row[2:] for row in kafka_python_view(raw)] == [
            (r[0], r[1], [(k, v) for k, v in r[2]]) for r in rows
        ]


def test_header_keys_that_are_not_utf8_survive() -> None:
    body = record_bytes(b"\x00\x00\x00\x01\x01\x02", _varint(2), b"\xff\xfe", b"\x01")
    (batch,) = decode_batches(raw_batch(body, 1))
    assert encode_batch(batch)[61:] == body


# -- compression bounds ------------------------------------------------------------------


def test_gzip_bomb_is_refused_without_its_memory() -> None:
    compressor, zeros = zlib.compressobj(9, zlib.DEFLATED, 31), bytes(1 << 20)
    bomb = b"".join(compressor.compress(zeros) for _ in range(100)) + compressor.flush()
    raw = raw_batch(bomb, 1, attributes=1)  # 100 MB of zeros, in 100 KB
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError, match="more than 67108864 bytes"):
            decode_batches(raw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 << 20


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_every_codec_is_bounded(codec: int) -> None:
    data = bytes(300_000)
    packed = compression.compress(codec, data)
    assert compression.decompress(codec, packed, limit=300_000) == data
    with pytest.raises(ProtocolError, match="more than 299999"):
        compression.decompress(codec, packed, limit=299_999)
    with pytest.raises(ProtocolError, match="more than"):
        decode_batches(raw_batch(packed, 1, attributes=codec), max_decompressed=1000)


def test_lz4_frames_that_lie_about_their_size() -> None:
    frame = bytearray(lz4.frame.compress(bytes(200_000), block_linked=False))
    frame[6:14] = (100).to_bytes(8, "little")  # content size: 100 bytes
    frame[14] = (compression._xxh32_short(bytes(frame[4:14])) >> 8) & 0xFF
    with pytest.raises(ProtocolError):
        compression.decompress(3, bytes(frame), limit=150_000)
    frame[6:14] = (1 << 60).to_bytes(8, "little")
    frame[14] = (compression._xxh32_short(bytes(frame[4:14])) >> 8) & 0xFF
    with pytest.raises(ProtocolError, match="more than"):
        compression.decompress(3, bytes(frame))
    unsized = lz4.frame.compress(bytes(200_000), block_linked=False, store_size=False)
    with pytest.raises(ProtocolError, match="more than"):
        compression.decompress(3, unsized + b"", limit=100_000)
    assert compression.decompress(3, unsized) == bytes(200_000)


def test_snappy_xerial_blocks_and_raw() -> None:
    import cramjam

    chunks = [b"a" * 40_000, b"b" * 10]
    blocks = [bytes(cramjam.snappy.compress_raw(c)) for c in chunks]
    xerial = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    xerial += b"".join(struct.pack(">i", len(b)) + b for b in blocks)
    assert compression.decompress(2, xerial) == b"".join(chunks)
    for bad in (xerial[:12], xerial[:-1], xerial[:16] + b"\x7f\xff\xff\xff"):
        with pytest.raises(ProtocolError):
            compression.decompress(2, bad)


@pytest.mark.parametrize("codec", CODECS)
def test_cramjam_fallback_without_lz4_and_zstandard(
    codec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    made_with_packages = encode_batch(sample(codec))
    monkeypatch.setattr(compression, "_lz4", None)
    monkeypatch.setattr(compression, "_zstd", None)
    raw = encode_batch(sample(codec))
    assert decode_batches(raw) == decode_batches(made_with_packages) == [sample(codec)]
    assert list(kafka_python_view(raw)) == list(our_view([sample(codec)]))
    if codec == "lz4":
        assert raw[61 + 4] & 0x20  # independent blocks, as Kafka wants
    if codec in ("lz4", "zstd"):
        code = CODECS.index(codec)
        bomb = raw_batch(compression.compress(code, bytes(300_000)), 1, attributes=code)
        with pytest.raises(ProtocolError, match="more than"):
            decode_batches(bomb, max_decompressed=1000)
