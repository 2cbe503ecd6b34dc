"""Unit tests of Reader and Writer: round trips in both byte orders, exact layouts, bounds
and error types."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.errors import ProtocolError, TrailingBytes, Truncated
from conformance.wire.primitives import ByteOrder, Reader, Writer, decode_utf8

RANGES = {
    "u8": (0, 2**8 - 1),
    "i8": None,  # Writer has no i8
    "u16": (0, 2**16 - 1),
    "i16": (-(2**15), 2**15 - 1),
    "u32": (0, 2**32 - 1),
    "i32": (-(2**31), 2**31 - 1),
    "u64": (0, 2**64 - 1),
    "i64": (-(2**63), 2**63 - 1),
}
KINDS = [k for k, r in RANGES.items() if r is not None]
SIZES = {"u8": 1, "u16": 2, "i16": 2, "u32": 4, "i32": 4, "u64": 8, "i64": 8}


@pytest.mark.parametrize("order", [">", "<"])
@pytest.mark.parametrize("kind", KINDS)
def test_integer_bounds_round_trip(order: ByteOrder, kind: str) -> None:
    low, high = RANGES[kind]  # type: ignore[misc]
    for value in (low, high, 0, 1):
        data = getattr(Writer(order), kind)(value).getvalue()
        assert len(data) == SIZES[kind]
        r = Reader(data, order)
        assert getattr(r, kind)() == value
        r.expect_end()


@pytest.mark.parametrize("order", [">", "<"])
@pytest.mark.parametrize("kind", KINDS)
def test_integer_out_of_range_is_a_value_error(order: ByteOrder, kind: str) -> None:
    low, high = RANGES[kind]  # type: ignore[misc]
    for value in (low - 1, high + 1):
        with pytest.raises(ValueError, match=f"does not fit in {kind}"):
            getattr(Writer(order), kind)(value)


def test_exact_layouts() -> None:
    w = Writer(">").u8(1).u16(0x0203).i32(-2).i64(5).str16("hé").bytes32(b"\x00")
    assert (
        w.getvalue().hex(" ")
        == "01 02 03 ff ff ff fe 00 00 00 00 00 00 00 05 00 03 68 c3 a9 00 00 00 01 00"
    )
    w = Writer("<").u16(0x0203).u32(1).str16("a")
    assert w.getvalue().hex(" ") == "03 02 01 00 00 00 01 00 61"


def test_empty_string_is_a_zero_length() -> None:
    assert Writer(">").str16("").getvalue() == b"\x00\x00"
    assert Reader(b"\x00\x00").str16() == ""


@given(
    st.sampled_from([">", "<"]),
    st.lists(
        st.one_of(
            st.tuples(st.just("u8"), st.integers(0, 255)),
            st.tuples(st.just("i16"), st.integers(-(2**15), 2**15 - 1)),
            st.tuples(st.just("u32"), st.integers(0, 2**32 - 1)),
            st.tuples(st.just("i64"), st.integers(-(2**63), 2**63 - 1)),
            st.tuples(st.just("str16"), st.text(max_size=20)),
            st.tuples(st.just("bytes16"), st.binary(max_size=20)),
            st.tuples(st.just("bytes32"), st.binary(max_size=20)),
        ),
        max_size=10,
    ),
)
def test_writer_reader_round_trip(order: ByteOrder, fields: list[tuple[str, object]]) -> None:
    w = Writer(order)
    for kind, value in fields:
        getattr(w, kind)(value)
    r = Reader(w.getvalue(), order)
    assert [(kind, getattr(r, kind)()) for kind, _ in fields] == fields
    r.expect_end()
    assert r.remaining == 0


def test_reader_accepts_bytearray_and_memoryview() -> None:
    assert Reader(bytearray(b"\x00\x07")).u16() == 7
    assert Reader(memoryview(b"\x07\x00"), "<").u16() == 7


def test_short_integer_is_truncated_with_its_name_and_offset() -> None:
    r = Reader(b"\x00\x01\x02")
    r.u8()
    with pytest.raises(Truncated, match=r"seq: need 4 bytes at offset 1, 2 left"):
        r.u32("seq")
    assert r.pos == 1  # a failed read consumes nothing


def test_short_string_is_truncated() -> None:
    with pytest.raises(Truncated, match="topic"):
        Reader(b"\x00\x05abc").str16("topic")
    with pytest.raises(Truncated, match="topic length"):
        Reader(b"\x00").str16("topic")


def test_negative_bytes32_length_is_refused() -> None:
    with pytest.raises(ProtocolError, match="payload: negative length -1"):
        Reader(b"\xff\xff\xff\xff").bytes32("payload")


def test_take_refuses_a_negative_count() -> None:
    with pytest.raises(ProtocolError, match="negative length"):
        Reader(b"abc").take(-1)


def test_invalid_utf8_string_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match=r"key is not valid UTF-8 \(byte 1\)"):
        Reader(b"\x00\x02a\xff").str16("key")


def test_rest_and_remaining() -> None:
    r = Reader(b"\x01rest")
    assert r.u8() == 1 and r.remaining == 4
    assert r.rest() == b"rest" and r.remaining == 0


def test_expect_end_refuses_trailing_bytes() -> None:
    r = Reader(b"\x01\x02\x03")
    r.u8()
    with pytest.raises(TrailingBytes, match="2 unexpected bytes after the header"):
        r.expect_end("the header")


def test_error_types_are_protocol_errors() -> None:
    assert issubclass(Truncated, ProtocolError) and issubclass(TrailingBytes, ProtocolError)


def test_decode_utf8() -> None:
    assert decode_utf8("ß".encode()) == "ß"
    with pytest.raises(ProtocolError, match="text is not valid UTF-8"):
        decode_utf8(b"\xc3")


def test_str16_longer_than_u16_is_refused() -> None:
    with pytest.raises(ValueError, match="does not fit in u16"):
        Writer().str16("x" * 65536)
