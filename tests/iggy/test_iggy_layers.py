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
from conformance.protocols.iggy.replies import OPTIONAL_REPLIES

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


CLASSIC_SEND = {
    "stream": {"kind": 1, "value": 1},
    "topic": {"kind": 2, "value": "t"},
    "partitioning": {"kind": 2, "value": 0},
    "messages": [
        {"id": 7, "payload": b"abc", "headers": b"\x02\x01\x00\x00\x00k\x02\x01\x00\x00\x00v"},
        {"id": 8, "payload": b"de", "origin_timestamp": 5},
    ],
}


def test_classic_send_messages_is_a_layer_to_its_last_byte() -> None:
    wire = codec.encode_request("send_messages", CLASSIC_SEND)
    pkt = layers.request_layer("send_messages")(wire)
    assert [m.id for m in pkt.messages] == [7, 8]
    assert [m.payload_ for m in pkt.messages] == [b"abc", b"de"]
    assert pkt.messages_count == 2 and [e.position for e in pkt.index] == [64 + 15, 64 + 15 + 66]
    built = layers.request_packet("send_messages", CLASSIC_SEND)
    del built.messages[0]  # count, index and metadata size follow: still valid
    short = {**CLASSIC_SEND, "messages": CLASSIC_SEND["messages"][1:]}
    assert codec.decode_request_payload(
        "send_messages", bytes(built)
    ) == codec.decode_request_payload("send_messages", codec.encode_request("send_messages", short))
    built.messages[0].payload_ = b"longer payload"  # its length and the index follow
    assert codec.decode_request_payload("send_messages", bytes(built))["messages"][0][
        "payload"
    ] == (b"longer payload")
    built.messages[0].payload_length = 1  # set: it lies (and the index no longer agrees)
    with pytest.raises(codec.IggyError):
        codec.decode_request_payload("send_messages", bytes(built))


def test_a_poll_reply_is_a_layer_to_its_last_byte() -> None:
    body = {"partition_id": 1, "current_offset": 9, "messages": CLASSIC_SEND["messages"]}
    wire = codec.encode_reply("poll_messages", body)
    pkt = layers.reply_layer("poll_messages")(wire)
    assert pkt.messages_count == 2 and pkt.messages[0].user_headers_length == 12
    reply = layers.reply_packet("poll_messages", body)
    reply.messages[0].headers = b""  # its length follows
    assert codec.decode_reply("poll_messages", bytes(reply))["messages"][0]["headers"] == b""


@pytest.mark.parametrize("revision", codec.REVISIONS)
def test_fuzz_builds_bytes(revision: str) -> None:
    for name in sorted(codec.tables(revision)[0]):
        cls = layers.request_layer(name, revision)
        for _ in range(3):
            assert isinstance(bytes(fuzz(cls())), bytes)
