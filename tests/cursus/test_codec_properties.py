"""Round-trip and robustness properties of the Cursus codec and deframer.

Invariant (the fuzzers rely on it): any bytes given to ``decode_request`` or
``decode_reply`` either decode or raise ``CursusError``; nothing else escapes.
Round trips: decode(encode(x)) == x for every command, batch, ack and reply the
strategies draw.  The deframer returns the same frames however the stream is cut,
and refuses an oversize length from the four prefix bytes alone.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from conformance.errors import FrameTooLarge
from conformance.protocols.cursus import codec
from conformance.protocols.cursus import strategies as cs
from conformance.protocols.cursus.codec import CursusError
from conformance.protocols.cursus.messages import (
    FRAME_LIMIT,
    Batch,
    BatchAck,
    Command,
    Reply,
    Request,
)

# ------------------------------------------------------------------ round trips


@given(cs.commands())
def test_command_round_trip(cmd: Command) -> None:
    payload = codec.encode_command(cmd)
    assert codec.parse_command(payload) == cmd
    assert codec.decode_request(payload) == cmd
    assert codec.decode_request(payload, compression="gzip") == cmd


@given(cs.batches())
def test_batch_round_trip(batch: Batch) -> None:
    body = codec.encode_batch(batch)
    assert body[:2] == b"\xba\x7c"
    assert codec.decode_batch(body) == batch
    assert codec.decode_request(body) == batch
    assert codec.decode_reply(body) == batch


@given(cs.batches())
def test_gzip_batch_round_trip(batch: Batch) -> None:
    payload = codec.encode_request(batch, compression="gzip")
    assert payload[:2] == b"\x1f\x8b"
    assert codec.decode_request(payload, compression="gzip") == batch


@given(cs.acks())
def test_ack_round_trip(ack: BatchAck) -> None:
    payload = codec.encode_ack(ack)
    assert codec.decode_ack(payload) == ack
    assert codec.decode_reply(payload) == ack
    assert list(json.loads(payload)) == [
        "status",
        "last_offset",
        "producer_epoch",
        "producer_id",
        "seq_start",
        "seq_end",
        "leader",
        "error",
    ]


@given(cs.replies())
def test_reply_round_trip(reply: Reply) -> None:
    assert codec.decode_reply(codec.encode_reply(reply)) == reply


@given(cs.commands())
def test_framed_command_round_trip(cmd: Command) -> None:
    d = codec.new_deframer()
    (payload,) = d.feed(codec.frame(codec.encode_request(cmd)))
    assert codec.decode_request(payload) == cmd


NUMBER_FIELDS = {  # a command with one number field #, and where it is in the arguments
    "CREATE t #": 1,
    "CONSUME t # 0": 1,
    "STREAM t 0 #": 2,
    "COMMIT t g 0 #": 3,
    "SYNC_GROUP t g m #": 3,
    "BATCH_COMMIT t g m 1 #:0": 4,
}


@given(cs.I64, st.integers(0, 3), st.sampled_from(sorted(NUMBER_FIELDS)))
def test_a_number_is_any_int64_in_signed_decimal(n: int, zeros: int, template: str) -> None:
    """-?[0-9]+ with leading zeros ("-007" is -7), over the whole int64 range."""
    text = ("-" if n < 0 else "") + "0" * zeros + str(abs(n))
    got = codec.parse_command(template.replace("#", text).encode()).args[NUMBER_FIELDS[template]]
    assert got == (((n, 0),) if template.startswith("BATCH_COMMIT") else n)


def test_minus_zero_is_zero() -> None:
    assert codec.parse_command(b"CONSUME t -0 -000") == Command("CONSUME", ("t", 0, 0))


@pytest.mark.parametrize("n", [2**63, -(2**63) - 1, 10**40, -(10**40), -(10**4000)])
def test_a_number_outside_int64_is_refused(n: int) -> None:
    for text in (f"COMMIT t g 0 {n}", f"BATCH_COMMIT t g m 1 0:{n}", f"CONSUME t {n} 0"):
        with pytest.raises(CursusError, match="outside the int64 range") as info:
            codec.parse_command(text.encode())
        assert info.value.code == "BAD_ARGUMENT"


# -------------------------------------------------------------- invalid inputs


@given(cs.invalid_commands())
def test_invalid_command_is_refused_with_its_code(case: tuple[bytes, str]) -> None:
    payload, code = case
    with pytest.raises(CursusError) as info:
        codec.parse_command(payload)
    assert info.value.code == code, str(info.value)


@given(cs.invalid_batches())
def test_invalid_batch_is_refused_with_its_code(case: tuple[bytes, str]) -> None:
    payload, code = case
    with pytest.raises(CursusError) as info:
        codec.decode_request(payload)
    assert info.value.code == code, str(info.value)


@given(cs.batches(max_messages=2), st.data())
def test_every_strict_prefix_of_a_batch_is_malformed(batch: Batch, data: st.DataObject) -> None:
    body = codec.encode_batch(batch)
    cut = data.draw(st.integers(2, len(body) - 1))
    with pytest.raises(CursusError) as info:
        codec.decode_batch(body[:cut])
    assert info.value.code == "MALFORMED_BATCH"


def _mutations(base: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """Valid encodings with a byte changed, a slice cut out, or bytes inserted."""
    return cs.mutated(base)


REQUEST_BYTES = st.one_of(
    st.binary(max_size=200),
    _mutations(cs.commands().map(codec.encode_command)),
    _mutations(cs.batches(max_messages=2).map(codec.encode_batch)),
    _mutations(
        cs.batches(max_messages=2).map(lambda b: codec.encode_request(b, compression="gzip"))
    ),
)
REPLY_BYTES = st.one_of(
    st.binary(max_size=200),
    _mutations(cs.replies().map(codec.encode_reply)),
)


def _decodes_or_cursus_error(
    decode: object, payload: bytes, **kw: object
) -> Request | Reply | None:
    try:
        return decode(payload, **kw)  # type: ignore[operator, no-any-return]
    except CursusError as exc:
        assert exc.code and exc.code.isupper(), f"error code {exc.code!r} is not an upper-case word"
        return None


@given(REQUEST_BYTES, st.sampled_from((None, "gzip")))
@example(b"\x1f\x8b", "gzip")
@example(b"\xba\x7c", None)
@example(b"\xba\x7c\x00\x00\x00\x00\x00\x00\x00" + b"\x00" * 16 + b"\x7f\xff\xff\xff", None)
def test_any_request_bytes_decode_or_raise_cursus_error(
    payload: bytes, compression: str | None
) -> None:
    _decodes_or_cursus_error(codec.decode_request, payload, compression=compression)


@given(REPLY_BYTES)
@example(b"{")
@example(b"[")
@example(b'{"status":"OK","last_offset":1e400}')
@example(b'{"status":"OK","last_offset":' + b"9" * 5000 + b"}")
def test_any_reply_bytes_decode_or_raise_cursus_error(payload: bytes) -> None:
    _decodes_or_cursus_error(codec.decode_reply, payload)


@pytest.mark.parametrize("payload", [b"[" * 100_000, b'{"status":' + b"[" * 100_000])
def test_deeply_nested_json_reply_raises_cursus_error(payload: bytes) -> None:
    _decodes_or_cursus_error(codec.decode_reply, payload)


# ----------------------------------------------------------------- the deframer


@given(cs.frames_payloads(), st.data())
def test_deframer_returns_the_same_frames_for_any_chunking(
    payloads: list[bytes], data: st.DataObject
) -> None:
    stream = b"".join(codec.frame(p) for p in payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    d = codec.new_deframer()
    got: list[bytes] = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        got += d.feed(stream[a:b])
    assert got == payloads
    assert d.buffered == 0 and d.pending_frame_length is None


@given(st.integers(FRAME_LIMIT + 1, 2**32 - 1))
def test_deframer_refuses_an_oversize_prefix_from_four_bytes(length: int) -> None:
    d = codec.new_deframer()
    prefix = length.to_bytes(4, "big")
    assert d.feed(prefix[:3]) == []
    with pytest.raises(FrameTooLarge) as info:
        d.feed(prefix[3:])
    assert (info.value.length, info.value.limit) == (length, FRAME_LIMIT)
    with pytest.raises(FrameTooLarge):
        d.feed(b"more")


@given(st.integers(0, FRAME_LIMIT))
def test_deframer_waits_for_a_payload_within_the_limit(length: int) -> None:
    d = codec.new_deframer()
    assert d.feed(length.to_bytes(4, "big")) == ([b""] if length == 0 else [])
    assert d.pending_frame_length == (None if length == 0 else length)


@given(st.integers(1, 1000), st.data())
def test_deframer_limit_is_inclusive(limit: int, data: st.DataObject) -> None:
    d = codec.new_deframer(max_frame=limit)
    payload = data.draw(st.binary(min_size=limit, max_size=limit))
    assert d.feed(codec.frame(payload)) == [payload]
    with pytest.raises(FrameTooLarge):
        codec.new_deframer(max_frame=limit).feed(codec.frame(payload + b"!"))
