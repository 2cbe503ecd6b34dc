"""The deframer checks every protocol's golden vectors go through, for a u32 BE length
prefix that does not count itself (Cursus, Kafka): the whole frame, one byte at a time
(nothing comes out early; an oversize prefix is refused on its last byte), and with
trailing bytes (the next frame's prefix is read, its payload waited for)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conformance.errors import FrameTooLarge
from conformance.vectors import Vector

GARBAGE = b"\x00\x00\x00\x10junk"
"""Bytes after a frame: a prefix announcing 16 bytes, and 4 of them."""


def announced(v: Vector) -> int:
    return int.from_bytes(v.frame[:4], "big")


def check_whole(new_deframer: Callable[[], Any], v: Vector) -> None:
    d = new_deframer()
    if v.truncated and v.error:
        assert v.error == "FRAME_TOO_LARGE"
        with pytest.raises(FrameTooLarge):
            d.feed(v.frame)
        with pytest.raises(FrameTooLarge):  # poisoned: the stream cannot resynchronise
            d.feed(b"")
    elif v.truncated:
        assert d.feed(v.frame) == []
        assert d.pending_frame_length == announced(v)
    else:
        assert d.feed(v.frame) == [v.payload]
        assert d.buffered == 0
        assert d.pending_frame_length is None


def check_byte_at_a_time(new_deframer: Callable[[], Any], v: Vector) -> None:
    d = new_deframer()
    got: list[bytes] = []
    for i in range(len(v.frame)):
        byte = v.frame[i : i + 1]
        if v.error and v.truncated and i == 3:  # refused on the last prefix byte, not later
            with pytest.raises(FrameTooLarge):
                d.feed(byte)
            return
        got += d.feed(byte)
        if i < len(v.frame) - 1:
            assert got == [], f"a frame came out after {i + 1} of {len(v.frame)} bytes"
    assert got == ([] if v.truncated else [v.payload])


def check_trailing(new_deframer: Callable[[], Any], v: Vector) -> None:
    d = new_deframer()
    assert d.feed(v.frame + GARBAGE) == [v.payload]
    assert d.buffered == len(GARBAGE) - 4
    assert d.pending_frame_length == 16
