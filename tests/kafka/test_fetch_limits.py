"""A Fetch serves the log as Kafka does: the produced batches whole, as Kafka's log keeps
them (``LogValidator``), the first of an answer whatever its size (``LogSegment.read``'s
``minOneMessage``), never a part of one."""

from __future__ import annotations

import pytest

from conformance.engine import STRICT, Engine, NewRecord
from conformance.protocols.kafka import batches
from conformance.protocols.kafka import records as rec
from conformance.protocols.kafka.records import decode_batches, encode_batch, make_batch, peek_batch


def _produce(e: Engine, batch: rec.RecordBatch, compression: str = "producer") -> bytes:
    data = encode_batch(batch)
    app = batches.from_request(data, 9, compression=compression)
    e.append("t", 0, app.records, app.producer, policy=STRICT, form=app.form, data=app.written)
    return data


def _fetch(e: Engine, offset: int, limit: int, first: bool = True) -> tuple[bytes, int]:
    return batches.for_fetch(
        lambda at, n: e.read("t", 0, at, n), offset, e.high_watermark("t", 0), 2, limit, first
    )


def _three(**kw: object) -> rec.RecordBatch:
    return make_batch([b"a", b"b", b"c"], timestamps=[5, 9, 7], **kw)  # type: ignore[arg-type]


@pytest.fixture
def engine() -> Engine:
    e = Engine()
    e.create_topic("t", 1)
    return e


def test_a_produced_batch_comes_back_whole_past_a_limit_of_one(engine: Engine) -> None:
    sent = _produce(engine, _three(producer_id=7, producer_epoch=2, base_sequence=4))
    data, at = _fetch(engine, 0, 1)
    assert at == 3
    assert data[16:] == sent[16:]  # magic, CRC, attributes, producer, records: as produced
    (batch,) = decode_batches(data, strict=True)
    assert [r.value for r in batch.records] == [b"a", b"b", b"c"]
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 2, 4)
    assert batch.partition_leader_epoch == 0  # what Kafka's setPartitionLeaderEpoch writes


def test_a_batch_that_is_not_the_first_is_left_out_whole(engine: Engine) -> None:
    _produce(engine, _three())
    assert _fetch(engine, 0, 10, first=False) == (b"", 0)


@pytest.mark.parametrize("limit", [1, 80, 100, 150, 200, 10_000])
def test_batches_are_added_while_they_fit_and_never_cut(engine: Engine, limit: int) -> None:
    sizes = [len(_produce(engine, _three())) for _ in range(3)]
    data, at = _fetch(engine, 0, limit)
    got = decode_batches(data)
    assert len(data) == sum(sizes[: len(got)])  # whole batches only
    assert at == 3 * len(got)
    fit = max(1, max((n for n in range(4) if sum(sizes[:n]) <= limit), default=1))
    assert len(got) == fit


def test_a_fetch_inside_a_batch_gets_the_batch_from_its_start(engine: Engine) -> None:
    _produce(engine, _three())
    _produce(engine, _three())
    data, at = _fetch(engine, 4, 1 << 20)
    (batch,) = decode_batches(data)
    assert (batch.base_offset, at) == (3, 6)


def test_a_compressed_batch_is_kept_compressed_as_produced(engine: Engine) -> None:
    sent = _produce(engine, _three(compression="gzip"))
    data, _ = _fetch(engine, 0, 1)
    assert data[16:] == sent[16:]
    assert peek_batch(data).compression == 1


def test_a_topic_codec_recompresses_keeping_the_producer(engine: Engine) -> None:
    _produce(engine, _three(producer_id=7, producer_epoch=1, base_sequence=0), "gzip")
    (batch,) = decode_batches(_fetch(engine, 0, 1)[0], strict=True)
    assert batch.compression == 1
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 1, 0)
    assert [r.value for r in batch.records] == [b"a", b"b", b"c"]
    assert [batch.base_timestamp + r.timestamp_delta for r in batch.records] == [5, 9, 7]


def test_a_compressed_batch_with_other_inner_offsets_is_rebuilt(engine: Engine) -> None:
    """Kafka rewrites a compressed batch whose records are not at offsets 0, 1, 2, ..."""
    _produce(engine, _three(compression="gzip", base_offset=40))
    (batch,) = decode_batches(_fetch(engine, 0, 1)[0], strict=True)
    assert batch.base_offset == 0 and [r.offset_delta for r in batch.records] == [0, 1, 2]


def test_a_wrong_max_timestamp_is_set_right_with_a_new_crc(engine: Engine) -> None:
    wrong = _three()
    object.__setattr__(wrong, "max_timestamp", 3)
    _produce(engine, wrong)
    data, _ = _fetch(engine, 0, 1)
    header = peek_batch(data)
    assert header.crc_ok and header.max_timestamp == 9


def test_another_front_ends_appends_are_one_batch_each(engine: Engine) -> None:
    engine.append("t", 0, [NewRecord(b"", b"x"), NewRecord(b"", b"y")])
    engine.append("t", 0, [NewRecord(b"", b"z")])
    got = decode_batches(_fetch(engine, 0, 1 << 20)[0], strict=True)
    assert [[r.value for r in b.records] for b in got] == [[b"x", b"y"], [b"z"]]


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [("last_offset_delta", 5, "does not number"), ("base_sequence", -1, "base_sequence")],
)
def test_a_batch_kafka_validate_batch_refuses(field: str, value: int, why: str) -> None:
    batch = _three(producer_id=7, producer_epoch=0, base_sequence=0)
    object.__setattr__(batch, field, value)
    with pytest.raises(batches.Refused, match=why) as info:
        batches.from_request(encode_batch(batch), 9)
    assert info.value.error == "INVALID_RECORD"


def test_an_old_joined_append_is_served_in_runs_of_one_kind() -> None:
    """An append an older journal compacted (records of several producers and a marker in
    one type-3 Append) is built into batches by producer and kind, the marker alone."""
    from conformance.engine.ops import Append as Op
    from conformance.engine.ops import decode, encode
    from conformance.engine.records import Record
    from conformance.protocols.kafka.transaction_index import (
        Marker,
        PartitionTxns,
        Span,
        control_key,
        control_value,
    )

    e = Engine()
    e.create_topic("t", 1)
    old = (
        Record(0, None, b"tx0", (), 1, "5", 0, 0),
        Record(1, None, b"tx1", (), 1, "5", 0, 1),
        Record(2, control_key(False), control_value(0), (), 1),
        Record(3, None, b"plain", (), 1),
    )
    e._state.apply(decode(encode(Op("t", 0, 0, old, None))))
    txns = PartitionTxns()
    txns._add_span(Span(5, 0, 2, True))
    txns.markers[2] = Marker(5, 0, False)
    data, at = batches.for_fetch(lambda a, n: e.read("t", 0, a, n), 0, 4, 2, 1 << 20, True, txns)
    got = [(b.producer_id, b.is_transactional, b.is_control) for b in decode_batches(data)]
    assert got == [(5, True, False), (5, True, True), (-1, False, False)] and at == 4


def test_another_front_ends_append_is_cut_to_what_fits(engine: Engine) -> None:
    """Records no Kafka producer wrote have no Kafka batch: a Fetch that is not the first
    (or v0-2, without minOneMessage) still gets the ones that fit."""
    engine.append("t", 0, [NewRecord(b"", b"x" * 100) for _ in range(3)])
    data, at = _fetch(engine, 0, 250, first=False)
    assert at in (1, 2) and len(data) <= 250
    assert [r.value for b in decode_batches(data) for r in b.records] == [b"x" * 100] * at


def test_a_batch_marked_log_append_time_keeps_its_max_timestamp(engine: Engine) -> None:
    """Kafka reads every record of such a batch at its max timestamp, so setMaxTimestamp
    (CreateTime) keeps it: only the type bit changes."""
    marked = _three()
    object.__setattr__(marked, "attributes", 0x08)
    object.__setattr__(marked, "max_timestamp", 100)
    _produce(engine, marked)
    header = peek_batch(_fetch(engine, 0, 1)[0])
    assert header.crc_ok and header.max_timestamp == 100 and header.attributes == 0
