"""The records field annotated batch by batch (conformance/protocols/kafka/record_annotation.py).

Golden tables: a Produce request and a Fetch response carrying two batches (one with
keys and headers, one with a null key), field by field (name, span, value); magic 0 and
1 message sets built by kafka-python; a gzip batch and a gzip wrapper message; a wrong
CRC.  Hostile input: every cut of a frame (strict and tolerant), random bytes and
mutated batches in the records field, annotated without raising and with every span
inside the bytes given.
"""

from __future__ import annotations

import random
import struct
import zlib
from typing import Any

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from conformance.plugin import FieldSpan
from conformance.protocols.kafka import codec
from conformance.protocols.kafka import records as rec
from conformance.protocols.kafka.apis import APIS, REQUEST_HEADER, request_header_version
from conformance.protocols.kafka.plugin import annotate
from conformance.protocols.kafka.record_annotation import record_spans

PRODUCE, FETCH = 0, 1
P = "topic_data[0].partition_data[0].records"
F = "responses[0].partitions[0].records"
Row = tuple[str, int, int, Any]

FIRST = rec.encode_batch(
    rec.make_batch(
        [b"v1", b"v2"],
        keys=[b"k", b"kk"],
        headers=[[("h", b"x"), ("n", None)], []],
        timestamps=[1000, 1003],
        base_offset=7,
        producer_id=42,
        producer_epoch=3,
        base_sequence=9,
    )
)
SECOND = rec.encode_batch(rec.make_batch([b"third"], base_offset=9, base_timestamp=2000))
RECORDS = FIRST + SECOND


def header_rows(i: int, o: int, batch: bytes, values: tuple[int, ...]) -> list[Row]:
    """A batch header's rows; ``values``: base_offset, last_offset_delta .. record count."""
    base, lod, bts, mts, pid, pep, seq, count = values
    b = f"batch[{i}]"
    return [
        (b, o, o + len(batch), f"magic 2, {len(batch)} bytes"),
        (f"{b}.base_offset", o, o + 8, base),
        (f"{b}.batch_length", o + 8, o + 12, len(batch) - 12),
        (f"{b}.partition_leader_epoch", o + 12, o + 16, -1),
        (f"{b}.magic", o + 16, o + 17, 2),
        (f"{b}.crc", o + 17, o + 21, crc32c(batch[21:])),
        (f"{b}.attributes", o + 21, o + 23, 0),
        (f"{b}.attributes.compression", o + 21, o + 23, "none"),
        (f"{b}.attributes.timestamp_type", o + 21, o + 23, "CreateTime"),
        (f"{b}.attributes.transactional", o + 21, o + 23, False),
        (f"{b}.attributes.control", o + 21, o + 23, False),
        (f"{b}.last_offset_delta", o + 23, o + 27, lod),
        (f"{b}.base_timestamp", o + 27, o + 35, bts),
        (f"{b}.max_timestamp", o + 35, o + 43, mts),
        (f"{b}.producer_id", o + 43, o + 51, pid),
        (f"{b}.producer_epoch", o + 51, o + 53, pep),
        (f"{b}.base_sequence", o + 53, o + 57, seq),
        (f"{b}.record count", o + 57, o + 61, count),
    ]


def expected(prefix: str, at: int) -> list[Row]:
    """The sub-fields of ``RECORDS`` (bytes from ``at``): the golden table."""
    r0, r1, o = "batch[0].record[0]", "batch[0].record[1]", len(FIRST)
    rows = header_rows(0, 0, FIRST, (7, 1, 1000, 1003, 42, 3, 9, 2))
    rows += [
        (f"{r0} length", 61, 62, 16),  # 0x20: zig-zag 16
        (r0, 62, 78, "16 bytes"),
        (f"{r0}.attributes", 62, 63, 0),
        (f"{r0}.timestamp_delta", 63, 64, 0),
        (f"{r0}.offset_delta", 64, 65, 0),
        (f"{r0}.key length", 65, 66, 1),
        (f"{r0}.key", 66, 67, b"k"),
        (f"{r0}.value length", 67, 68, 2),
        (f"{r0}.value", 68, 70, b"v1"),
        (f"{r0}.headers count", 70, 71, 2),
        (f"{r0}.headers[0].key length", 71, 72, 1),
        (f"{r0}.headers[0].key", 72, 73, "h"),
        (f"{r0}.headers[0].value length", 73, 74, 1),
        (f"{r0}.headers[0].value", 74, 75, b"x"),
        (f"{r0}.headers[1].key length", 75, 76, 1),
        (f"{r0}.headers[1].key", 76, 77, "n"),
        (f"{r0}.headers[1].value", 77, 78, None),  # 0x01: zig-zag -1, null
        (f"{r1} length", 78, 79, 10),
        (r1, 79, 89, "10 bytes"),
        (f"{r1}.attributes", 79, 80, 0),
        (f"{r1}.timestamp_delta", 80, 81, 3),
        (f"{r1}.offset_delta", 81, 82, 1),
        (f"{r1}.key length", 82, 83, 2),
        (f"{r1}.key", 83, 85, b"kk"),
        (f"{r1}.value length", 85, 86, 2),
        (f"{r1}.value", 86, 88, b"v2"),
        (f"{r1}.headers count", 88, 89, 0),
    ]
    rows += header_rows(1, o, SECOND, (9, 0, 2000, 2000, -1, -1, -1, 1))
    r = "batch[1].record[0]"
    rows += [
        (f"{r} length", o + 61, o + 62, 11),
        (r, o + 62, o + 73, "11 bytes"),
        (f"{r}.attributes", o + 62, o + 63, 0),
        (f"{r}.timestamp_delta", o + 63, o + 64, 0),
        (f"{r}.offset_delta", o + 64, o + 65, 0),
        (f"{r}.key", o + 65, o + 66, None),
        (f"{r}.value length", o + 66, o + 67, 5),
        (f"{r}.value", o + 67, o + 72, b"third"),
        (f"{r}.headers count", o + 72, o + 73, 0),
    ]
    return [(f"{prefix}.{n}", at + a, at + b, v) for n, a, b, v in rows]


def rows(spans: list[FieldSpan], prefix: str) -> list[Row]:
    return [(s.name, s.start, s.end, s.value) for s in spans if s.name.startswith(prefix + ".")]


def named(spans: list[FieldSpan], name: str) -> FieldSpan:
    (span,) = [s for s in spans if s.name == name]
    return span


def produce(records: bytes | None, version: int = 9) -> bytes:
    part = {"index": 0, "records": records}
    body = {"acks": -1, "timeout_ms": 5000, "topic_data": [{"name": "t", "partition_data": [part]}]}
    return codec.encode_request(PRODUCE, version, body, correlation_id=5, client_id="c")


def fetch_reply(records: bytes, version: int) -> tuple[bytes, bytes]:
    topic = {"topic_id": "t"} if version >= 13 else {"topic": "t"}
    body = {"responses": [{**topic, "partitions": [{"partition_index": 0, "records": records}]}]}
    request = codec.encode_request(FETCH, version, {}, correlation_id=3, client_id="c")
    return request, codec.encode_response(FETCH, version, 3, body)


def check_records_field(spans: list[FieldSpan], path: str, data: bytes) -> None:
    whole = named(spans, path)
    assert (whole.end - whole.start, whole.value) == (len(data), f"<{len(data)} bytes>")
    assert named(spans, f"{path} length").value == len(data)
    assert rows(spans, path) == expected(path, whole.start)


@pytest.mark.parametrize("version", [3, 9])
def test_a_produce_requests_two_batches_field_by_field(version: int) -> None:
    spans = annotate(produce(RECORDS, version), "request", []).fields
    check_records_field(spans, P, RECORDS)


@pytest.mark.parametrize("version", [4, 12])
def test_a_fetch_responses_two_batches_field_by_field(version: int) -> None:
    request, reply = fetch_reply(RECORDS, version)
    annotation = annotate(reply, "reply", [request])
    assert annotation.summary.startswith(f"Fetch v{version} response")
    check_records_field(annotation.fields, F, RECORDS)


def test_the_tolerant_walk_gives_the_same_fields_on_a_well_formed_request() -> None:
    payload = produce(RECORDS)
    strict = annotate(payload, "request", []).fields
    _, _, end = _header_end(payload)
    tolerant = APIS[PRODUCE].request.annotate(payload, 9, end, tolerant=True)
    assert rows(tolerant, P) == rows(strict, P)


def test_a_null_records_field_has_no_sub_fields() -> None:
    spans = annotate(produce(None), "request", []).fields
    assert named(spans, P).value is None
    assert rows(spans, P) == []


def legacy(magic: int, codec_: int = 0) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, codec_, 1 << 20)
    builder.append(0, 1_600_000_000_000, b"key", b"one")
    builder.append(1, 1_600_000_000_001, None, b"two")
    return bytes(builder.build())


@pytest.mark.parametrize("magic", [0, 1])
def test_a_legacy_message_set_field_by_field(magic: int) -> None:
    data = legacy(magic)
    t = 8 if magic else 0  # magic 1 has a timestamp
    m0 = 8 + 4 + 4 + 1 + 1 + t + 4 + 3 + 4 + 3  # the first message's bytes, all of them
    got = rows(record_spans(data, "R"), "R")
    want: list[Row] = []
    for i, (o, key) in enumerate([(0, b"key"), (m0, None)]):
        m = f"R.message[{i}]"
        size = m0 - 12 if key else m0 - 12 - 3
        v = o + 18 + t
        msg = data[o : o + 12 + size]
        want += [
            (m, o, o + 12 + size, f"magic {magic}, {12 + size} bytes"),
            (f"{m}.offset", o, o + 8, i),
            (f"{m}.message_size", o + 8, o + 12, size),
            (f"{m}.crc", o + 12, o + 16, zlib.crc32(msg[16:])),
            (f"{m}.magic", o + 16, o + 17, magic),
            (f"{m}.attributes", o + 17, o + 18, 0),
            (f"{m}.attributes.compression", o + 17, o + 18, "none"),
        ]
        if magic:
            want += [
                (f"{m}.attributes.timestamp_type", o + 17, o + 18, "CreateTime"),
                (f"{m}.timestamp", o + 18, o + 26, 1_600_000_000_000 + i),
            ]
        if key:
            want += [(f"{m}.key length", v, v + 4, 3), (f"{m}.key", v + 4, v + 7, b"key")]
            v += 7
        else:
            want += [(f"{m}.key", v, v + 4, None)]
            v += 4
        value = [b"one", b"two"][i]
        want += [(f"{m}.value length", v, v + 4, 3), (f"{m}.value", v + 4, v + 7, value)]
    assert got == want


def test_a_gzip_batch_shows_its_header_and_its_records_decompressed_over_the_compressed_bytes() -> (
    None
):
    data = rec.encode_batch(rec.make_batch([b"a", b"bb"], keys=[b"k", None], compression="gzip"))
    spans = record_spans(data, "R")
    assert named(spans, "R.batch[0].attributes").value == 1
    assert named(spans, "R.batch[0].attributes.compression").value == "gzip"
    assert named(spans, "R.batch[0].record count").value == 2
    compressed = named(spans, "R.batch[0].compressed")
    assert (compressed.start, compressed.end) == (61, len(data))
    assert compressed.value == f"{len(data) - 61} bytes, gzip"
    inner = [s for s in spans if s.name.startswith("R.batch[0].decompressed.")]
    assert {(s.start, s.end) for s in inner} == {(61, len(data))}  # no span made up
    assert not [s for s in spans if s.name.startswith("R.batch[0].record[")]
    values = {s.name.removeprefix("R.batch[0].decompressed."): s.value for s in inner}
    assert values["record[0].key"] == b"k"
    assert values["record[0].value"] == b"a"
    assert values["record[1].key"] is None
    assert values["record[1].value"] == b"bb"
    assert values["record[1].offset_delta"] == 1


def test_a_gzip_wrapper_message_shows_its_inner_messages() -> None:
    data = legacy(1, codec_=1)
    spans = record_spans(data, "R")
    assert named(spans, "R.message[0].attributes.compression").value == "gzip"
    compressed = named(spans, "R.message[0].compressed")
    assert compressed.end == len(data)
    assert named(spans, "R.message[0].value length").value == compressed.end - compressed.start
    prefix = "R.message[0].decompressed.message"
    assert named(spans, f"{prefix}[0].key").value == b"key"
    assert named(spans, f"{prefix}[1].value").value == b"two"
    assert {(s.start, s.end) for s in spans if s.name.startswith(prefix)} == {
        (compressed.start, compressed.end)
    }


def test_compressed_bytes_that_do_not_decompress_say_so() -> None:
    body = b"\x01\x02not gzip at all"
    data = rec.encode_batch(rec.make_batch([b"a"], compression="gzip"))[:61] + body
    data = data[:8] + struct.pack(">i", len(data) - 12) + data[12:]
    spans = record_spans(data, "R")
    assert named(spans, "R.batch[0].decompressed").value == "does not decompress"


def test_a_wrong_crc_is_shown_as_on_the_wire_and_the_computed_one_beside_it() -> None:
    bad = bytearray(RECORDS)
    bad[17:21] = b"\x00\x00\x00\x01"
    spans = annotate(produce(bytes(bad)), "request", []).fields
    crc = named(spans, f"{P}.batch[0].crc")
    assert crc.value == 1
    computed = named(spans, f"{P}.batch[0].crc (computed)")
    assert (computed.start, computed.end) == (crc.start, crc.end)
    assert computed.value == f"{crc32c(FIRST[21:])}, not the 1 on the wire: CRC-32C mismatch"
    assert not [s for s in spans if s.name == f"{P}.batch[1].crc (computed)"]
    assert rows(annotate(produce(RECORDS), "request", []).fields, P) == expected(P, crc.start - 17)


def test_a_legacy_messages_wrong_crc() -> None:
    bad = bytearray(legacy(1))
    bad[12:16] = b"\x00\x00\x00\x02"
    spans = record_spans(bytes(bad), "R")
    assert named(spans, "R.message[0].crc").value == 2
    assert str(named(spans, "R.message[0].crc (computed)").value).endswith("CRC-32 mismatch")
    assert not [s for s in spans if s.name == "R.message[1].crc (computed)"]


def _header_end(payload: bytes) -> tuple[int, int, int]:
    key, version, _ = codec.peek(payload)
    _, end = REQUEST_HEADER.decode_at(payload, request_header_version(key, version))
    return key, version, end


def inside(spans: list[FieldSpan], size: int) -> None:
    for s in spans:
        assert 0 <= s.start <= s.end <= size, s
        assert isinstance(s.value, int | str | bytes | None), s
        assert not (isinstance(s.value, str) and s.value.startswith(("b'", 'b"'))), s


def test_every_cut_of_a_produce_request_and_a_fetch_reply_is_annotated_without_raising() -> None:
    payload = produce(RECORDS)
    _, _, end = _header_end(payload)
    request, reply = fetch_reply(RECORDS + legacy(1, codec_=1), 12)
    for cut in range(len(payload) + 1):
        inside(annotate(payload[:cut], "request", []).fields, cut)
        tolerant = APIS[PRODUCE].request.annotate(payload[:cut], 9, end, tolerant=True)
        inside(tolerant, cut)
        start = named(annotate(payload, "request", []).fields, P).start
        if cut >= start + 8:  # a cut records field is walked as far as it goes
            assert named(tolerant, f"{P}.batch[0].base_offset").value == 7
    for cut in range(len(reply) + 1):
        inside(annotate(reply[:cut], "reply", [request]).fields, cut)
    data = RECORDS + legacy(0) + legacy(1, codec_=1)
    for cut in range(len(data) + 1):
        inside(record_spans(data[:cut], "R"), cut)


@given(st.binary(max_size=300))
def test_random_bytes_in_the_records_field_are_annotated_without_raising(data: bytes) -> None:
    inside(record_spans(data, "R"), len(data))
    payload = produce(data)
    inside(annotate(payload, "request", []).fields, len(payload))


@given(st.lists(st.tuples(st.integers(0, len(RECORDS) - 1), st.integers(0, 255)), max_size=6))
def test_mutated_batches_with_their_crcs_fixed_are_annotated_without_raising(
    flips: list[tuple[int, int]],
) -> None:
    data = bytearray(RECORDS)
    for at, byte in flips:
        data[at] = byte
    for start in (0, len(FIRST)):  # the CRCs made right again, so the records are walked
        data[start + 17 : start + 21] = struct.pack(">I", crc32c(bytes(data[start + 21 :])))
    inside(record_spans(bytes(data), "R"), len(data))


def test_seeded_random_records_fields_of_every_magic() -> None:
    rng = random.Random(20)
    seeds = [RECORDS, legacy(0), legacy(1), legacy(1, codec_=1)]
    for _ in range(3000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        inside(record_spans(bytes(data), "R"), len(data))
