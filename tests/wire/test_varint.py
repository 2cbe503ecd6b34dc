"""The one varint codec: known bytes both ways, limits, and a round trip over the range."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.errors import ProtocolError, Truncated
from conformance.wire import varint as v

KNOWN = [  # (signed value, zig-zag varint bytes): the values of Kafka's record fields
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (-2, "03"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (300, "d804"),
    (-(1 << 31), "ffffffff0f"),
]


@pytest.mark.parametrize(("value", "hexed"), KNOWN)
def test_signed_both_ways(value: int, hexed: str) -> None:
    assert v.varint(value, 32).hex() == hexed
    assert v.read_varint(bytes.fromhex(hexed) + b"\xaa", 0, 32) == (value, len(hexed) // 2)


def test_unsigned_known_bytes() -> None:
    assert v.uvarint(0) == b"\x00"
    assert v.uvarint(127) == b"\x7f"
    assert v.uvarint(128) == b"\x80\x01"
    assert v.read_uvarint(b"\xff\x80\x01", 1) == (128, 3)


def test_limits_are_refused() -> None:
    with pytest.raises(Truncated):
        v.read_uvarint(b"\x80\x80", 0)
    with pytest.raises(ProtocolError, match="longer than 5 bytes"):
        v.read_uvarint(b"\x80" * 5 + b"\x01", 0, 32)
    with pytest.raises(ProtocolError, match="over 32 bits"):
        v.read_uvarint(b"\xff\xff\xff\xff\x7f", 0, 32)
    with pytest.raises(ValueError, match="does not fit"):
        v.varint(1 << 31, 32)
    with pytest.raises(ValueError, match="cannot hold"):
        v.uvarint(-1)


def test_wrapped_writes_twos_complement() -> None:
    assert v.uvarint_wrapped(-1, 32) == v.uvarint(0xFFFFFFFF)
    assert v.uvarint_wrapped(5) == b"\x05"


@given(st.integers(-(1 << 63), (1 << 63) - 1))
def test_varlong_round_trip(value: int) -> None:
    data = v.varint(value, 64)
    assert len(data) <= v.max_bytes(64)
    assert v.read_varint(data, 0, 64) == (value, len(data))
