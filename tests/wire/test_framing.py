"""Unit tests of the shared deframers: LengthPrefixDeframer (both byte orders, with and
without the prefix counting itself, limits, poisoning) and LineDeframer."""

from __future__ import annotations

import contextlib
import struct

import pytest

from conformance.errors import FrameTooLarge, ProtocolError
from conformance.wire.framing import (
    LengthPrefixDeframer,
    LengthPrefixFraming,
    LineDeframer,
    frame_u32,
)
from conformance.wire.primitives import ByteOrder

LAYOUTS = [(">", False), (">", True), ("<", False), ("<", True)]
PAYLOADS = [b"", b"a", b"hello", bytes(range(256)), b"\x00" * 1000]


def prefix(order: ByteOrder, value: int) -> bytes:
    return struct.pack(order + "I", value)


def deframer(order: ByteOrder, includes_self: bool, max_frame: int = 4096) -> LengthPrefixDeframer:
    return LengthPrefixDeframer(order=order, includes_self=includes_self, max_frame=max_frame)


# ------------------------------------------------------------- frame_u32


@pytest.mark.parametrize(
    ("order", "includes_self", "expected"),
    [
        (">", False, "00000003 616263"),
        (">", True, "00000007 616263"),
        ("<", False, "03000000 616263"),
        ("<", True, "07000000 616263"),
    ],
)
def test_frame_u32_layout(order: ByteOrder, includes_self: bool, expected: str) -> None:
    wire = frame_u32(b"abc", order=order, includes_self=includes_self)
    assert wire == bytes.fromhex(expected.replace(" ", ""))
    framing = LengthPrefixFraming(
        limit=4096, order="big" if order == ">" else "little", includes_self=includes_self
    )
    assert framing.frame(b"abc") == wire
    assert framing.deframer().feed(wire) == [b"abc"]


# ------------------------------------------------------ LengthPrefixDeframer


@pytest.mark.parametrize(("order", "includes_self"), LAYOUTS)
def test_frames_come_out_whole(order: ByteOrder, includes_self: bool) -> None:
    d = deframer(order, includes_self)
    stream = b"".join(frame_u32(p, order=order, includes_self=includes_self) for p in PAYLOADS)
    assert d.feed(stream) == PAYLOADS
    assert d.buffered == 0


@pytest.mark.parametrize(("order", "includes_self"), LAYOUTS)
def test_frames_come_out_byte_at_a_time(order: ByteOrder, includes_self: bool) -> None:
    d = deframer(order, includes_self)
    stream = b"".join(frame_u32(p, order=order, includes_self=includes_self) for p in PAYLOADS)
    got: list[bytes] = []
    for i in range(len(stream)):
        got += d.feed(stream[i : i + 1])
    assert got == PAYLOADS


@pytest.mark.parametrize(("order", "includes_self"), LAYOUTS)
def test_split_at_every_position(order: ByteOrder, includes_self: bool) -> None:
    payloads = [b"first", b"", b"third!"]
    stream = b"".join(frame_u32(p, order=order, includes_self=includes_self) for p in payloads)
    for cut in range(len(stream) + 1):
        d = deframer(order, includes_self)
        assert d.feed(stream[:cut]) + d.feed(stream[cut:]) == payloads, f"cut at {cut}"


def test_trailing_bytes_are_kept_for_the_next_feed() -> None:
    d = deframer(">", False)
    assert d.feed(frame_u32(b"one") + b"\x00\x00") == [b"one"]
    assert d.buffered == 2 and d.pending_frame_length is None
    assert d.feed(b"\x00\x02x") == []
    assert d.pending_frame_length == 2 and d.buffered == 1
    assert d.feed(b"y") == [b"xy"]
    assert d.buffered == 0 and d.pending_frame_length is None


def test_empty_feed_returns_nothing() -> None:
    d = deframer(">", False)
    assert d.feed(b"") == []
    assert d.feed(frame_u32(b"")) == [b""]


@pytest.mark.parametrize(("order", "includes_self"), LAYOUTS)
def test_limit_is_inclusive(order: ByteOrder, includes_self: bool) -> None:
    limit = 100
    payload = b"x" * (limit - (4 if includes_self else 0))
    d = deframer(order, includes_self, max_frame=limit)
    assert d.feed(frame_u32(payload, order=order, includes_self=includes_self)) == [payload]


@pytest.mark.parametrize(("order", "includes_self"), LAYOUTS)
def test_oversize_is_refused_from_the_prefix(order: ByteOrder, includes_self: bool) -> None:
    d = deframer(order, includes_self, max_frame=100)
    wire = prefix(order, 101)
    assert d.feed(wire[:3]) == []
    with pytest.raises(FrameTooLarge) as info:
        d.feed(wire[3:])
    assert (info.value.length, info.value.limit) == (101, 100)
    assert "101" in str(info.value) and "100" in str(info.value)


def test_huge_prefix_does_not_wait_for_a_payload() -> None:
    d = deframer(">", False, max_frame=64 * 1024 * 1024)
    with pytest.raises(FrameTooLarge):
        d.feed(b"\xff\xff\xff\xff")


@pytest.mark.parametrize("value", [0, 1, 2, 3])
def test_includes_self_refuses_a_length_below_four(value: int) -> None:
    d = deframer(">", True)
    with pytest.raises(ProtocolError, match="smaller than its own 4 bytes"):
        d.feed(prefix(">", value))


def test_includes_self_accepts_exactly_four() -> None:
    assert deframer(">", True).feed(b"\x00\x00\x00\x04") == [b""]


@pytest.mark.parametrize(
    "bad", [b"\x00\x00\x10\x01", b"\x00\x00\x00\x02"], ids=["oversize", "below-self"]
)
def test_poisoned_after_an_error(bad: bytes) -> None:
    d = deframer(">", True, max_frame=4096)
    with pytest.raises(ProtocolError) as first:
        d.feed(bad)
    for later in (b"", frame_u32(b"ok", includes_self=True)):
        with pytest.raises(ProtocolError) as again:
            d.feed(later)
        assert again.value is first.value


def test_byte_order_matters() -> None:
    wire = frame_u32(b"abc", order="<")
    with pytest.raises(FrameTooLarge):  # 0x03000000 read big-endian
        deframer(">", False).feed(wire)


def test_frames_before_an_oversize_prefix_are_not_lost() -> None:
    d = deframer(">", False, max_frame=100)
    frames: list[bytes] = []
    with contextlib.suppress(FrameTooLarge):
        frames += d.feed(frame_u32(b"good") + prefix(">", 101))
    assert frames == [b"good"]
    with pytest.raises(FrameTooLarge):
        d.feed(b"")


# -------------------------------------------------------------- LineDeframer


def test_lines_whole_and_byte_at_a_time() -> None:
    stream = b"one\n\ntwo three\nlast\n"
    lines = [b"one", b"", b"two three", b"last"]
    assert LineDeframer(max_line=64).feed(stream) == lines
    d = LineDeframer(max_line=64)
    got: list[bytes] = []
    for i in range(len(stream)):
        got += d.feed(stream[i : i + 1])
    assert got == lines


def test_line_split_at_every_position() -> None:
    stream = b"alpha\nbeta\n"
    for cut in range(len(stream) + 1):
        d = LineDeframer(max_line=64)
        assert d.feed(stream[:cut]) + d.feed(stream[cut:]) == [b"alpha", b"beta"], f"cut {cut}"


def test_unterminated_line_is_kept() -> None:
    d = LineDeframer(max_line=64)
    assert d.feed(b"done\npart") == [b"done"]
    assert d.buffered == 4
    assert d.feed(b"ial\n") == [b"partial"]
    assert d.buffered == 0


def test_carriage_return_is_kept() -> None:
    assert LineDeframer(max_line=64).feed(b"crlf\r\n") == [b"crlf\r"]


def test_line_limit_is_inclusive() -> None:
    assert LineDeframer(max_line=8).feed(b"x" * 8 + b"\n") == [b"x" * 8]
    d = LineDeframer(max_line=8)
    assert d.feed(b"x" * 8) == []  # may still end here


def test_long_terminated_line_is_refused() -> None:
    with pytest.raises(FrameTooLarge) as info:
        LineDeframer(max_line=8).feed(b"x" * 9 + b"\n")
    assert (info.value.length, info.value.limit) == (9, 8)


def test_long_line_is_refused_before_its_terminator() -> None:
    d = LineDeframer(max_line=8)
    assert d.feed(b"x" * 5) == []
    with pytest.raises(FrameTooLarge):
        d.feed(b"x" * 4)


def test_lines_before_a_long_one_come_out_first() -> None:
    """The lines complete before an over-long one are handed out, then the error stands."""
    d = LineDeframer(max_line=8)
    assert d.feed(b"one\ntwo\n" + b"x" * 9 + b"\nthree\n") == [b"one", b"two"]
    assert isinstance(d.error, FrameTooLarge)
    with pytest.raises(FrameTooLarge):
        d.feed(b"four\n")
    unterminated = LineDeframer(max_line=8)
    assert unterminated.feed(b"one\n" + b"x" * 9) == [b"one"]
    assert isinstance(unterminated.error, FrameTooLarge)


def test_line_deframer_is_poisoned_after_an_error() -> None:
    d = LineDeframer(max_line=4)
    with pytest.raises(FrameTooLarge):
        d.feed(b"toolong")
    with pytest.raises(FrameTooLarge):
        d.feed(b"\nok\n")


def test_lead_bytes_before_the_length_come_out_in_front_of_the_payload() -> None:
    """``lead``: a status before the length (Iggy's reply), handed out with the payload."""
    raw = b"\x2a\x00\x00\x00" + b"\x02\x00\x00\x00" + b"hi" + b"\x00" * 8
    want = [b"\x2a\x00\x00\x00hi", b"\x00\x00\x00\x00"]
    assert LengthPrefixDeframer(order="<", max_frame=16, lead=4).feed(raw) == want
    drip = LengthPrefixDeframer(order="<", max_frame=16, lead=4)
    assert [f for b in raw for f in drip.feed(bytes([b]))] == want
    oversize = b"\x00" * 4 + b"\x11\x00\x00\x00"
    with pytest.raises(FrameTooLarge):
        LengthPrefixDeframer(order="<", max_frame=16, lead=4).feed(oversize)
