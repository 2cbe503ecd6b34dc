"""Iggy's scapy layers (:mod:`conformance.protocols.iggy.layers`) against its codec: for
drawn bodies of every request and reply of both revisions, the layer's bytes are the
codec's; a dissected payload rebuilds to its bytes; a length set by hand lies on the
wire; ``fuzz()`` builds bytes."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.packet import fuzz

from conformance.protocols.iggy import codec, layers, strategies
from conformance.protocols.iggy.messages import OPTIONAL_REPLIES

FEW = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
COMMANDS = [(n, r) for r in codec.REVISIONS for n in sorted(codec.tables(r)[0])]
REPLIES = [(n, r) for r in codec.REVISIONS for n in sorted(codec.tables(r)[1])]


@pytest.mark.parametrize(("name", "revision"), COMMANDS, ids=[f"{r}-{n}" for n, r in COMMANDS])
@FEW
@given(data=st.data())
def test_a_request_layer_builds_the_codec_bytes(
    name: str, revision: str, data: st.DataObject
) -> None:
    body = data.draw(strategies.request_values(name, revision))
    wire = codec.encode_request(name, body, revision)
    assert bytes(layers.request_packet(name, body, revision)) == wire
    if not codec.batched(name, "request", revision):
        assert bytes(layers.request_layer(name, revision)(wire)) == wire


@pytest.mark.parametrize(("name", "revision"), REPLIES, ids=[f"{r}-{n}" for n, r in REPLIES])
@FEW
@given(data=st.data())
def test_a_reply_layer_builds_the_codec_bytes(
    name: str, revision: str, data: st.DataObject
) -> None:
    body = data.draw(strategies.reply_values(name, revision))
    wire = codec.encode_reply(name, body, revision)
    if name in OPTIONAL_REPLIES and not wire:
        return
    assert bytes(layers.reply_packet(name, body, revision)) == wire
    if not codec.batched(name, "reply", revision):
        assert bytes(layers.reply_layer(name, revision)(wire)) == wire


def test_a_length_set_by_hand_lies() -> None:
    body = {"stream": {"kind": 2, "value": "s"}}
    pkt = layers.request_packet("get_stream", body)
    assert bytes(pkt) == bytes.fromhex("02 01 73")
    pkt.stream.value_len = 9
    assert bytes(pkt) == bytes.fromhex("02 09 73")
    pkt.stream_kind = 1  # the kind lies, the string value stays
    assert bytes(pkt)[:1] == b"\x01"


def test_doc_send_messages_dissects_message_by_message() -> None:
    body = {
        "stream": {"kind": 1, "value": 1},
        "topic": {"kind": 1, "value": 2},
        "partitioning": {"kind": 3, "value": b"key"},
        "messages": [{"id": 2**127, "payload": b"a"}, {"id": 1, "payload": b"bc"}],
    }
    wire = codec.encode_request("send_messages", body, "doc")
    pkt = layers.request_layer("send_messages", "doc")(wire)
    assert [m.id for m in pkt.messages] == [2**127, 1]
    assert [m.payload_ for m in pkt.messages] == [b"a", b"bc"]
    pkt.messages[1].payload_len = 7
    assert bytes(pkt)[-6:-2] == struct.pack("<I", 7)


@pytest.mark.parametrize("revision", codec.REVISIONS)
def test_fuzz_builds_bytes(revision: str) -> None:
    for name in sorted(codec.tables(revision)[0]):
        cls = layers.request_layer(name, revision)
        for _ in range(3):
            assert isinstance(bytes(fuzz(cls())), bytes)
