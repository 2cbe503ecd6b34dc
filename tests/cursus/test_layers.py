"""The scapy layers for Cursus frames agree with the codec, byte for byte.

Building a layer from a request gives exactly the codec's framed bytes; dissecting
those bytes gives back the request's values; an explicit length or count goes on the
wire as given (a lie) and changes nothing else; ``fuzz()`` is reproducible from a seed.
The batch's declaration on the shared schema machinery (``BATCH``) encodes, decodes and
builds generic layers exactly as the Cursus codec does, and the Cursus annotator is its
annotation under the annotator's names.
"""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest
from hypothesis import given
from scapy.packet import NoPayload, Packet, Padding, fuzz

from conformance.protocols.cursus import codec
from conformance.protocols.cursus import strategies as cs
from conformance.protocols.cursus.annotate import annotate
from conformance.protocols.cursus.layers import (
    CursusBatchHeader,
    CursusFrame,
    CursusMessage,
    CursusText,
    batch_layer,
    batch_value,
    from_request,
    raw,
    scapy_name,
)
from conformance.protocols.cursus.messages import (
    BATCH,
    BATCH_HEADER,
    MAGIC,
    MESSAGE_FIELDS,
    Batch,
    Command,
    Message,
)
from conformance.wire import schema_layers

SAMPLE = Batch(
    topic="orders",
    partition="3",
    acks="-1",
    idempotent=True,
    seq_start=10,
    seq_end=11,
    messages=(Message(offset=5, key="k1", payload=b"hello"), Message(metadata="m")),
)


def _value(v: Any) -> Any:
    return v.encode("utf-8") if isinstance(v, str) else v


def _batch_values(batch: Batch) -> dict[str, Any]:
    """The header fields of ``batch``'s layer, by their scapy names."""
    return {
        "magic": MAGIC,
        "topic": _value(batch.topic),
        "partition": _value(batch.partition),
        "acks": _value(batch.acks),
        "idempotent": int(batch.idempotent),
        "seq_start": batch.seq_start,
        "seq_end": batch.seq_end,
        "messages_count": len(batch.messages),
    }


def _assert_dissects_to(pkt: Packet, batch: Batch) -> None:
    head = pkt[CursusBatchHeader]
    for name, value in _batch_values(batch).items():
        assert getattr(head, name) == value, name
    assert len(head.messages) == len(batch.messages)
    for got, want in zip(head.messages, batch.messages, strict=True):
        for name, _ in MESSAGE_FIELDS:
            assert getattr(got, scapy_name(name)) == _value(getattr(want, name)), name


def test_layer_fields_follow_the_declaration() -> None:
    names = [fl.name for fl in CursusBatchHeader.fields_desc]
    strings = {"topic", "partition", "acks"}
    expected = [n2 for n, _ in BATCH_HEADER for n2 in ([f"{n}_len", n] if n in strings else [n])]
    assert names == [*expected[:-1], "messages_count", "messages"]
    assert [fl.name for fl in CursusMessage.fields_desc][:6] == [
        "offset",
        "seq_num",
        "producer_id_len",
        "producer_id",
        "key_len",
        "key",
    ]
    assert scapy_name("payload") == "payload_"


@given(cs.batches())
def test_batch_layer_builds_the_codec_bytes(batch: Batch) -> None:
    assert raw(from_request(batch)) == codec.frame(codec.encode_request(batch))


@given(cs.commands())
def test_text_layer_builds_the_codec_bytes(cmd: Command) -> None:
    assert raw(from_request(cmd)) == codec.frame(codec.encode_request(cmd))


@given(cs.batches())
def test_batch_bytes_dissect_to_the_same_values(batch: Batch) -> None:
    wire = codec.frame(codec.encode_request(batch))
    pkt = CursusFrame(wire)
    assert pkt.length == len(wire) - 4
    assert CursusText not in pkt
    _assert_dissects_to(pkt, batch)
    assert raw(pkt) == wire


@given(cs.commands())
def test_command_bytes_dissect_to_the_same_text(cmd: Command) -> None:
    wire = codec.frame(codec.encode_request(cmd))
    pkt = CursusFrame(wire)
    assert CursusBatchHeader not in pkt
    assert pkt[CursusText].text == codec.encode_command(cmd)
    assert codec.parse_command(pkt[CursusText].text) == cmd


def test_dissection_stops_at_the_frame_length() -> None:
    first = codec.frame(codec.encode_request(SAMPLE))
    pkt = CursusFrame(first + b"\x00\x00\x00\x04LIST")
    _assert_dissects_to(pkt, SAMPLE)
    assert pkt[Padding].load == b"\x00\x00\x00\x04LIST"
    assert len(pkt[CursusBatchHeader].messages) == len(SAMPLE.messages)


def test_lying_frame_length_changes_only_the_prefix() -> None:
    honest = raw(from_request(SAMPLE))
    pkt = from_request(SAMPLE)
    pkt.length = 7
    lying = raw(pkt)
    assert lying[:4] == struct.pack("!I", 7)
    assert lying[4:] == honest[4:]


def test_lying_text_frame_length() -> None:
    pkt = from_request(Command("LIST"))
    pkt.length = 0xFFFFFFFF
    assert raw(pkt) == b"\xff\xff\xff\xffLIST"


def test_lying_topic_length_changes_only_that_field() -> None:
    honest = raw(from_request(SAMPLE))
    layer = batch_layer(SAMPLE)
    layer.topic_len = 999
    lying = raw(CursusFrame() / layer)
    # frame length (4) + magic (2), then the topic length
    assert lying[6:8] == struct.pack("!H", 999)
    assert lying[:6] == honest[:6]
    assert lying[8:] == honest[8:]


def test_lying_message_lengths_and_count_change_only_those_fields() -> None:
    honest = raw(from_request(SAMPLE))
    layer = batch_layer(SAMPLE)
    layer.messages_count = -1
    layer.messages[0].payload_len = 1 << 20
    layer.messages[1].metadata_len = 0
    lying = raw(CursusFrame() / layer)
    assert len(lying) == len(honest)
    diffs = [i for i, (a, b) in enumerate(zip(honest, lying, strict=True)) if a != b]
    header = 4 + 2 + (2 + 6) + (2 + 1) + (2 + 2) + 1 + 16
    count_at = header
    assert lying[count_at : count_at + 4] == struct.pack("!i", -1)
    msg0 = count_at + 4
    payload_len_at = msg0 + 8 + 8 + 2 + (2 + 2) + 8
    assert lying[payload_len_at : payload_len_at + 4] == struct.pack("!i", 1 << 20)
    assert honest[-3:-1] == b"\x00\x01" and lying[-3:-1] == b"\x00\x00"
    allowed = set(range(count_at, count_at + 4))
    allowed |= set(range(payload_len_at, payload_len_at + 4))
    allowed |= {len(honest) - 3, len(honest) - 2}
    assert diffs and set(diffs) <= allowed


def test_default_layers_build_an_empty_batch() -> None:
    wire = raw(CursusFrame() / CursusBatchHeader())
    assert codec.decode_request(codec.new_deframer().feed(wire)[0]) == Batch(
        "", "", "", False, 0, 0, ()
    )


def test_from_request_refuses_other_types() -> None:
    with pytest.raises(TypeError, match="Batch or a Command"):
        from_request("LIST")  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [0, 1, 1234])
def test_fuzz_is_reproducible_from_a_seed(seed: int) -> None:
    def build(n: int) -> bytes:
        random.seed(n)
        return raw(CursusFrame() / fuzz(CursusBatchHeader(messages=[CursusMessage()])))

    a, b = build(seed), build(seed)
    assert a == b
    assert build(seed + 1) != a
    random.seed(seed)
    msg = raw(fuzz(CursusMessage()))
    random.seed(seed)
    assert raw(fuzz(CursusMessage())) == msg
    random.seed(seed)
    text = raw(fuzz(CursusText()))
    random.seed(seed)
    assert raw(fuzz(CursusText())) == text


# ------------------------------------------------------- the schema declaration


def _schema_value(batch: Batch) -> dict[str, Any]:
    """``batch`` as the schema machinery holds it: plain data, snake_case names."""
    head = {name: getattr(batch, name) for name in ("topic", "partition", "acks")}
    return {
        "magic": MAGIC,
        **head,
        "idempotent": int(batch.idempotent),
        "seq_start": batch.seq_start,
        "seq_end": batch.seq_end,
        "messages": [{n: getattr(m, n) for n, _ in MESSAGE_FIELDS} for m in batch.messages],
    }


@given(cs.batches())
def test_the_schema_declaration_is_the_codec_layout(batch: Batch) -> None:
    wire = codec.encode_batch(batch)
    value = _schema_value(batch)
    assert value == batch_value(batch)
    assert BATCH.encode(value, 0) == wire
    assert BATCH.decode(wire, 0) == value
    assert bytes(schema_layers.packet(BATCH, 0, value)) == wire
    dissected = schema_layers.layer(BATCH, 0)(wire)
    assert isinstance(dissected.payload, NoPayload) and bytes(dissected) == wire


def test_the_cursus_annotation_is_the_schema_annotation_renamed() -> None:
    wire = codec.encode_batch(SAMPLE)
    named = annotate(wire)
    ours = BATCH.annotate(wire, 0)
    # one field for one field, named the annotator's way ("message[1].key.len" for the
    # schema's "messages[1].key length")
    assert [(s.start, s.end, s.counts, s.items) for s in named] == [
        (s.start, s.end, s.counts, s.items) for s in ours
    ]
    counts = [s for s in named if s.name == "message_count"]
    assert [s.items for s in ours if s.name == "messages count"] == [c.items for c in counts]
    lengths = {s.name: s.counts for s in ours if s.name.endswith(" length")}
    assert lengths["messages[0].payload length"] == next(
        s.counts for s in named if s.name == "message[0].payload.len"
    )
