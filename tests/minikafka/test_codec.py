"""Mini-Kafka's codec (conformance.protocols.minikafka.codec), sans-IO.

Oracle: any bytes either decode or raise MiniKafkaError, nothing else (h11's rule).  Every
golden frame below (FACTS.md's bytes, by hand otherwise) goes through ``codec.new_deframer``
whole, one byte at a time (nothing comes out before its last byte) and followed by more
bytes (kept for the next frame); its payload decodes to its message and the message encodes
back to it; bytes after a request's last field are ignored unless ``strict``, and refused
after a reply's.  A Hypothesis round trip covers every request and reply; every malformed
input in the table is refused with the subclass and request type it names.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.errors import FrameTooLarge, ProtocolError
from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m

FEW = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
Message = codec.Request | codec.Reply


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


REQUESTS: list[tuple[codec.Request, str]] = [
    (codec.Flush(), "00000005 05"),  # DESIGN.md, FACTS.md 1.3
    (codec.Consume("ab", 3, 7), "00000017 01 00000002 6162 0000000000000003 00000007"),
    (codec.Consume("", -1, -2147483648), "00000015 01 00000000 ffffffffffffffff 80000000"),
    (codec.Produce("p1", b"abc"), "00000012 03 00000002 7031 00000003 616263"),
    (codec.Produce("p4", b""), "0000000f 03 00000002 7034 00000000"),
    (codec.Produce("café", b"\x00\xff"), "00000014 03 00000005 636166c3a9 00000002 00ff"),
]
REPLIES: list[tuple[codec.Reply, str]] = [
    (codec.FlushOk(), "00000006 06 01"),  # FACTS.md 1.3
    (codec.ProduceOk(0), "0000000e 04 01 0000000000000000"),  # FACTS.md 2.6
    (codec.ProduceOk(2**63 - 1), "0000000e 04 01 7fffffffffffffff"),
    (
        codec.ConsumeOk(2, (codec.Consumed(0, b"hi"), codec.Consumed(1, b""))),  # FACTS.md 2.8
        "0000002c 02 01 0000000000000002 00000002 00000002 0000000000000000 6869"
        " 00000000 0000000000000001",
    ),
    (codec.ConsumeOk(1), "00000012 02 01 0000000000000001 00000000"),  # FACTS.md 2.11
    (codec.Failure(m.CONSUME_RESPONSE, "err"), "0000000d 02 00 00000003 657272"),  # 2.9
    (codec.Failure(m.PRODUCE_RESPONSE, "oops"), "0000000e 04 00 00000004 6f6f7073"),
    (codec.Failure(m.FLUSH_RESPONSE, "é"), "0000000c 06 00 00000002 c3a9"),
]


def deframed_three_ways(frame: bytes) -> bytes:
    """The one payload of ``frame``, checked whole, byte by byte and before more bytes."""
    whole = codec.new_deframer()
    [payload] = whole.feed(frame)
    assert whole.buffered == 0 and whole.error is None
    d = codec.new_deframer()
    for i in range(len(frame) - 1):
        assert d.feed(frame[i : i + 1]) == [], f"a frame came out after {i + 1} bytes"
    assert d.feed(frame[-1:]) == [payload]
    more = codec.new_deframer()
    assert more.feed(frame + frame[:3]) == [payload]
    assert more.buffered == 3
    assert more.feed(frame[3:]) == [payload] and more.buffered == 0
    return payload


# ------------------------------------------------------------------- golden frames


@pytest.mark.parametrize(("request_", "hexed"), REQUESTS, ids=lambda x: str(x)[:40])
def test_a_request_decodes_and_encodes_to_its_bytes(request_: codec.Request, hexed: str) -> None:
    frame = h(hexed)
    payload = deframed_three_ways(frame)
    assert codec.decode_request(payload) == request_
    assert codec.decode_request(payload, strict=False, lenient_utf8=True) == request_
    assert codec.frame(codec.encode_request(request_)) == frame


@pytest.mark.parametrize(("request_", "hexed"), REQUESTS, ids=lambda x: str(x)[:40])
def test_bytes_after_a_requests_last_field(request_: codec.Request, hexed: str) -> None:
    """Ignored when not ``strict`` (the real client pads CONSUME, FACTS.md 2.3), refused
    otherwise, with the request's type so the refusal can be answered."""
    payload = deframed_three_ways(codec.frame(codec.encode_request(request_) + b"\x00" * 10))
    assert codec.decode_request(payload, strict=False) == request_
    with pytest.raises(codec.MiniKafkaError, match="after its last field") as info:
        codec.decode_request(payload)
    assert info.value.type == request_.type


def test_the_real_clients_padded_consume() -> None:
    """FACTS.md 2.3 [run]: topic "ab", offset 3, batch 7, 3N+4 = 10 zero bytes counted."""
    frame = h("00000021 01 00000002 6162 0000000000000003 00000007") + bytes(10)
    payload = deframed_three_ways(frame)
    assert codec.decode_request(payload, strict=False) == codec.Consume("ab", 3, 7)


@pytest.mark.parametrize(("reply", "hexed"), REPLIES, ids=lambda x: str(x)[:40])
def test_a_reply_decodes_and_encodes_to_its_bytes(reply: codec.Reply, hexed: str) -> None:
    frame = h(hexed)
    payload = deframed_three_ways(frame)
    assert codec.decode_reply(payload) == reply
    assert codec.frame(codec.encode_reply(reply)) == frame


@pytest.mark.parametrize(("reply", "hexed"), REPLIES, ids=lambda x: str(x)[:40])
def test_bytes_after_a_replys_last_field_are_refused(reply: codec.Reply, hexed: str) -> None:
    payload = deframed_three_ways(codec.frame(codec.encode_reply(reply) + b"\x00"))
    with pytest.raises(codec.MiniKafkaError, match="unexpected bytes"):
        codec.decode_reply(payload)


def test_a_topic_that_is_not_utf8() -> None:
    """Refused (with the request's type) unless ``lenient_utf8``, which reads each bad
    byte as U+FFFD as the real server does (FACTS.md 2.10): 0xff and 0xfe are one topic."""
    for raw in (b"\xff", b"\xfe"):
        payload = deframed_three_ways(codec.frame(codec.encode_request(codec.Consume(raw, 0, 1))))
        with pytest.raises(codec.MiniKafkaError, match="not valid UTF-8") as info:
            codec.decode_request(payload)
        assert info.value.type == m.CONSUME_REQUEST
        assert codec.decode_request(payload, lenient_utf8=True) == codec.Consume("\ufffd", 0, 1)
    produce = codec.encode_request(codec.Produce(b"a\xc3", b"x"))
    assert codec.decode_request(produce, lenient_utf8=True) == codec.Produce("a\ufffd", b"x")


def test_failure_for_answers_with_the_reply_type() -> None:
    for request, reply in m.REPLY_TYPE.items():
        assert codec.failure_for(request, "e") == codec.Failure(reply, "e")


# ----------------------------------------------------------------------- framing


@pytest.mark.parametrize("length", [0, 1, 2, 3])
def test_a_length_below_4_is_refused_from_the_prefix(length: int) -> None:
    d = codec.new_deframer()
    with pytest.raises(ProtocolError, match="smaller than its own 4 bytes"):
        d.feed(struct.pack(">I", length))
    with pytest.raises(ProtocolError):  # poisoned
        d.feed(codec.frame(b"\x05"))


def test_a_length_of_4_is_an_empty_payload_refused_by_the_decoders() -> None:
    assert deframed_three_ways(h("00000004")) == b""
    with pytest.raises(codec.EmptyPayload):
        codec.decode_request(b"")
    with pytest.raises(codec.EmptyPayload):
        codec.decode_reply(b"")


@pytest.mark.parametrize("length", [codec.DEFAULT_MAX_FRAME + 1, 0x7FFFFFFF, 0x80000000, 2**32 - 1])
def test_a_length_over_the_limit_is_refused_from_the_prefix(length: int) -> None:
    d = codec.new_deframer()
    with pytest.raises(FrameTooLarge):
        d.feed(struct.pack(">I", length))
    assert d.buffered <= 4


def test_the_limit_counts_the_length_fields_own_bytes() -> None:
    d = codec.new_deframer(max_frame=64)
    assert d.feed(struct.pack(">I", 64)) == []
    with pytest.raises(FrameTooLarge):
        codec.new_deframer(max_frame=64).feed(struct.pack(">I", 65))


def test_pipelined_frames_come_out_in_order() -> None:
    """FACTS.md 1.5: two FLUSH frames in one write."""
    assert codec.new_deframer().feed(h("0000000505 0000000505")) == [b"\x05", b"\x05"]


def test_frame_with_a_length_override() -> None:
    assert codec.frame(b"\x05", length=3) == h("00000003 05")


# --------------------------------------------------------------------- malformed

MALFORMED_REQUESTS: list[tuple[str, type[codec.MiniKafkaError], int | None]] = [
    ("", codec.EmptyPayload, None),
    ("99", codec.UnknownType, None),  # FACTS.md 3.1
    ("00 616263", codec.UnknownType, None),
    ("02 01", codec.UnknownType, None),
    ("04", codec.UnknownType, None),
    ("06", codec.UnknownType, None),
    ("01", codec.MiniKafkaError, m.CONSUME_REQUEST),
    ("01 000000", codec.MiniKafkaError, m.CONSUME_REQUEST),
    ("01 0000000a 6162", codec.MiniKafkaError, m.CONSUME_REQUEST),
    ("01 00000002 6162 0000000000000003", codec.MiniKafkaError, m.CONSUME_REQUEST),
    ("01 00000002 6162 0000000000000003 0000", codec.MiniKafkaError, m.CONSUME_REQUEST),
    ("01 ffffffff 0000000000000000 00000001", codec.MiniKafkaError, m.CONSUME_REQUEST),
    ("01 80000000", codec.MiniKafkaError, m.CONSUME_REQUEST),
    ("03", codec.MiniKafkaError, m.PRODUCE_REQUEST),
    ("03 00000001 61", codec.MiniKafkaError, m.PRODUCE_REQUEST),
    ("03 00000001 61 00000005 6869", codec.MiniKafkaError, m.PRODUCE_REQUEST),
    ("03 00000001 61 ffffffff", codec.MiniKafkaError, m.PRODUCE_REQUEST),
    ("03 7fffffff", codec.MiniKafkaError, m.PRODUCE_REQUEST),
    ("03 00000001 ff 00000000", codec.MiniKafkaError, m.PRODUCE_REQUEST),  # not UTF-8
]
MALFORMED_REPLIES: list[tuple[str, type[codec.MiniKafkaError]]] = [
    ("", codec.EmptyPayload),
    ("07 01", codec.UnknownType),
    ("01", codec.UnknownType),
    ("05", codec.UnknownType),
    ("06", codec.MiniKafkaError),
    ("06 02", codec.MiniKafkaError),
    ("06 01 00", codec.MiniKafkaError),
    ("06 00 00000004 6469", codec.MiniKafkaError),
    ("04 01 00000000", codec.MiniKafkaError),
    ("04 00 00000005 6572726f72 00", codec.MiniKafkaError),  # FACTS.md 2.7's serializer
    ("02 01 0000000000000001", codec.MiniKafkaError),
    ("02 01 0000000000000001 00000001", codec.MiniKafkaError),
    ("02 01 0000000000000001 00000001 00000005 0000000000000000 6869", codec.MiniKafkaError),
    ("02 01 0000000000000001 ffffffff", codec.MiniKafkaError),
    ("02 00 ffffffff", codec.MiniKafkaError),
    ("02 00 00000001 ff", codec.MiniKafkaError),  # an error that is not UTF-8
]


@pytest.mark.parametrize(("hexed", "kind", "type_"), MALFORMED_REQUESTS)
def test_a_malformed_request_is_refused(
    hexed: str, kind: type[codec.MiniKafkaError], type_: int | None
) -> None:
    payload = h(hexed)
    for strict in (True, False):
        with pytest.raises(codec.MiniKafkaError) as info:
            codec.decode_request(payload, strict=strict)
        assert type(info.value) is kind, repr(info.value)
        assert info.value.type == type_ and info.value.message == str(info.value)
    if payload:  # whole, byte by byte and before more bytes, as framed
        assert deframed_three_ways(codec.frame(payload)) == payload


@pytest.mark.parametrize(("hexed", "kind"), MALFORMED_REPLIES)
def test_a_malformed_reply_is_refused(hexed: str, kind: type[codec.MiniKafkaError]) -> None:
    payload = h(hexed)
    with pytest.raises(codec.MiniKafkaError) as info:
        codec.decode_reply(payload)
    assert type(info.value) is kind, repr(info.value)
    assert info.value.type is None


def test_every_prefix_of_a_golden_payload_decodes_or_raises_minikafka_error() -> None:
    decoders: list[Callable[[bytes], object]] = [
        codec.decode_request,
        lambda p: codec.decode_request(p, strict=False, lenient_utf8=True),
        codec.decode_reply,
    ]
    for _, hexed in [*REQUESTS, *REPLIES]:
        payload = h(hexed)[4:]
        for cut in range(len(payload)):
            for decode in decoders:
                with contextlib.suppress(codec.MiniKafkaError):
                    decode(payload[:cut])


# ---------------------------------------------------------------------- properties

topics = st.text(st.characters(codec="utf-8"), max_size=20)
int64 = st.integers(-(2**63), 2**63 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
data = st.binary(max_size=64)
requests: st.SearchStrategy[codec.Request] = st.one_of(
    st.builds(codec.Consume, topics, int64, int32),
    st.builds(codec.Produce, topics, data),
    st.just(codec.Flush()),
)
replies: st.SearchStrategy[codec.Reply] = st.one_of(
    st.builds(
        codec.ConsumeOk,
        int64,
        st.lists(st.builds(codec.Consumed, int64, data), max_size=5).map(tuple),
    ),
    st.builds(codec.ProduceOk, int64),
    st.just(codec.FlushOk()),
    st.builds(
        codec.Failure,
        st.sampled_from(sorted(m.REPLY_TYPE.values())),
        st.text(st.characters(codec="utf-8"), max_size=30),
    ),
)


@FEW
@given(requests, st.binary(max_size=8))
def test_every_request_round_trips(request: codec.Request, trailing: bytes) -> None:
    payload = codec.encode_request(request)
    [got] = codec.new_deframer().feed(codec.frame(payload))
    assert codec.decode_request(got) == request
    assert codec.decode_request(got + trailing, strict=False, lenient_utf8=True) == request


@FEW
@given(replies)
def test_every_reply_round_trips(reply: codec.Reply) -> None:
    payload = codec.encode_reply(reply)
    [got] = codec.new_deframer().feed(codec.frame(payload))
    assert codec.decode_reply(got) == reply
    assert codec.describe(reply)


@FEW
@given(st.binary(max_size=64), st.booleans(), st.booleans())
def test_any_bytes_decode_or_raise_minikafka_error(
    payload: bytes, strict: bool, lenient: bool
) -> None:
    for decode in (
        lambda: codec.decode_request(payload, strict=strict, lenient_utf8=lenient),
        lambda: codec.decode_reply(payload),
    ):
        with contextlib.suppress(codec.MiniKafkaError):
            decode()


@FEW
@given(st.one_of(requests.map(codec.encode_request), replies.map(codec.encode_reply)), st.data())
def test_a_valid_payload_with_one_byte_changed_decodes_or_raises_minikafka_error(
    payload: bytes, draw: st.DataObject
) -> None:
    at = draw.draw(st.integers(0, len(payload) - 1))
    changed = bytearray(payload)
    changed[at] = draw.draw(st.integers(0, 255))
    for decode in (codec.decode_request, codec.decode_reply):
        with contextlib.suppress(codec.MiniKafkaError):
            decode(bytes(changed))


@FEW
@given(st.binary(max_size=40), st.integers(1, 7))
def test_the_deframer_takes_any_bytes_in_any_chunks(raw: bytes, size: int) -> None:
    """Frames out, or one ProtocolError that poisons it; never anything else."""
    d = codec.new_deframer(max_frame=64)
    try:
        for i in range(0, len(raw), size):
            for frame in d.feed(raw[i : i + size]):
                assert len(frame) <= 60
    except ProtocolError:
        assert d.error is not None
