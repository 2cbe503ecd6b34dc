"""The mini-Kafka strategies: every drawn request encodes and decodes back equal in both
revisions, whole, one byte at a time and with trailing bytes; every drawn invalid one is
refused with MiniKafkaError; drawn replies read back; the scapy layer writes the codec's
bytes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.fuzz.draw import draw
from conformance.protocols.minikafka import codec, layers, strategies
from conformance.protocols.minikafka import messages as m

REVISIONS = ("doc", "real")


@given(strategies.requests())
def test_a_drawn_request_encodes_and_decodes_back_equal_in_both_revisions(
    request: codec.Request,
) -> None:
    payload = codec.encode_request(request)
    for lenient in (False, True):
        assert codec.decode_request(payload, strict=True, lenient_utf8=lenient) == request


@given(strategies.requests())
def test_a_drawn_request_deframes_whole_and_one_byte_at_a_time(request: codec.Request) -> None:
    framed = codec.frame(codec.encode_request(request))
    whole = codec.new_deframer().feed(framed)
    deframer = codec.new_deframer()
    one_by_one = [p for i in range(len(framed)) for p in deframer.feed(framed[i : i + 1])]
    assert whole == one_by_one
    assert deframer.buffered == 0
    assert [codec.decode_request(p) for p in one_by_one] == [request]


@given(strategies.requests(), st.binary(min_size=1, max_size=16))
def test_trailing_bytes_inside_the_frame_are_refused_strictly_and_ignored_by_a_broker(
    request: codec.Request, extra: bytes
) -> None:
    payload = codec.encode_request(request) + extra
    with pytest.raises(codec.MiniKafkaError):
        codec.decode_request(payload, strict=True)
    assert codec.decode_request(payload, strict=False) == request


@given(strategies.requests(), strategies.requests())
def test_two_frames_in_one_write_deframe_as_two_requests(
    first: codec.Request, second: codec.Request
) -> None:
    data = codec.frame(codec.encode_request(first)) + codec.frame(codec.encode_request(second))
    deframer = codec.new_deframer()
    payloads = [p for i in range(len(data)) for p in deframer.feed(data[i : i + 1])]
    assert [codec.decode_request(p) for p in payloads] == [first, second]


@pytest.mark.parametrize(
    ("kind", "strategy"),
    [
        (m.CONSUME_REQUEST, codec.Consume),
        (m.PRODUCE_REQUEST, codec.Produce),
        (m.FLUSH_REQUEST, codec.Flush),
    ],
)
def test_each_type_draws_its_own_requests(kind: int, strategy: type) -> None:
    drawn = [draw(f"t:{kind}:{i}", strategies.requests(kind)) for i in range(30)]
    assert all(isinstance(r, strategy) for r in drawn)


def test_consumes_draw_negative_and_huge_numbers_from_the_declared_ranges() -> None:
    drawn = [draw(f"c:{i}", strategies.requests(m.CONSUME_REQUEST)) for i in range(200)]
    consumes = [r for r in drawn if isinstance(r, codec.Consume)]
    assert any(r.offset < 0 for r in consumes) and any(r.batch_size < 1 for r in consumes)
    assert any(r.offset >= 2**32 for r in consumes) and any(r.batch_size > 2**16 for r in consumes)


# ------------------------------------------------------------------ invalid


@given(strategies.invalid_requests())
def test_a_drawn_invalid_request_is_refused_with_minikafka_error(drawn: tuple[str, bytes]) -> None:
    kind, payload = drawn
    with pytest.raises(codec.MiniKafkaError) as refused:
        codec.decode_request(payload, strict=True, lenient_utf8=False)
    if kind in ("empty", "unknown-type"):
        assert refused.value.type is None  # no reply type fits: a broker closes
    else:
        assert refused.value.type == payload[0]  # its type's error path answers it


@pytest.mark.parametrize("kind", strategies.INVALID_KINDS)
def test_each_invalid_kind_is_drawn_and_refused(kind: str) -> None:
    for i in range(30):
        got, payload = draw(f"i:{kind}:{i}", strategies.invalid_requests(kind))
        assert got == kind
        with pytest.raises(codec.MiniKafkaError):
            codec.decode_request(payload, strict=True, lenient_utf8=False)


@given(strategies.invalid_requests("bad-utf8"))
def test_a_topic_that_is_not_utf8_is_read_as_replacement_characters_in_real(
    drawn: tuple[str, bytes],
) -> None:
    _, payload = drawn
    request = codec.decode_request(payload, strict=True, lenient_utf8=True)
    assert isinstance(request, codec.Consume | codec.Produce)
    assert "\ufffd" in str(request.topic)


@given(strategies.invalid_requests())
def test_an_invalid_request_deframes_byte_at_a_time_as_one_frame(drawn: tuple[str, bytes]) -> None:
    _, payload = drawn
    framed = codec.frame(payload)
    deframer = codec.new_deframer()
    assert [p for i in range(len(framed)) for p in deframer.feed(framed[i : i + 1])] == [payload]


# ------------------------------------------------------------------ replies and layers


@given(strategies.replies())
def test_a_drawn_reply_encodes_and_decodes_back_equal(reply: codec.Reply) -> None:
    payload = codec.encode_reply(reply)
    assert codec.decode_reply(payload) == reply
    deframer = codec.new_deframer()
    framed = codec.frame(payload)
    assert [p for i in range(len(framed)) for p in deframer.feed(framed[i : i + 1])] == [payload]


@given(strategies.requests())
def test_the_request_layer_writes_the_codecs_bytes_and_dissects_them(
    request: codec.Request,
) -> None:
    payload = codec.encode_request(request)
    assert bytes(layers.request_packet(request)) == payload
    assert bytes(layers.request_layer()(payload)) == payload
