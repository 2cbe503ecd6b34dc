"""Fixed-width integers and length-prefixed strings, read from and written to bytes.

``Reader`` is a cursor over an immutable buffer; every read checks the bounds and
raises :class:`~conformance.errors.Truncated` instead of returning short data.
``Writer`` accumulates parts and joins them once.  Byte order is a parameter of
each object (``">"`` big-endian, ``"<"`` little-endian) so one implementation
serves every protocol.
"""

from __future__ import annotations

import struct
from typing import Literal

from conformance.errors import ProtocolError, TrailingBytes, Truncated
from conformance.wire.encoding import FORMATS

ByteOrder = Literal[">", "<"]


def _struct(order: ByteOrder, kind: str) -> struct.Struct:
    return struct.Struct(order + FORMATS[kind])


class Reader:
    """Bounds-checked cursor over ``data``."""

    __slots__ = ("_data", "_order", "pos")

    def __init__(self, data: bytes | bytearray | memoryview, order: ByteOrder = ">") -> None:
        self._data = bytes(data)
        self._order: ByteOrder = order
        self.pos = 0

    @property
    def remaining(self) -> int:
        return len(self._data) - self.pos

    def take(self, n: int, what: str = "bytes") -> bytes:
        if n < 0:
            raise ProtocolError(f"negative length {n} for {what}")
        if n > self.remaining:
            raise Truncated(f"{what}: need {n} bytes at offset {self.pos}, {self.remaining} left")
        out = self._data[self.pos : self.pos + n]
        self.pos += n
        return out

    def _int(self, kind: str, what: str) -> int:
        s = _struct(self._order, kind)
        (value,) = s.unpack(self.take(s.size, what))
        return int(value)

    def u8(self, what: str = "u8") -> int:
        return self._int("u8", what)

    def u16(self, what: str = "u16") -> int:
        return self._int("u16", what)

    def i16(self, what: str = "i16") -> int:
        return self._int("i16", what)

    def u32(self, what: str = "u32") -> int:
        return self._int("u32", what)

    def i32(self, what: str = "i32") -> int:
        return self._int("i32", what)

    def u64(self, what: str = "u64") -> int:
        return self._int("u64", what)

    def i64(self, what: str = "i64") -> int:
        return self._int("i64", what)

    def bytes16(self, what: str = "bytes16") -> bytes:
        """A u16 length followed by that many bytes."""
        return self.take(self.u16(f"{what} length"), what)

    def bytes32(self, what: str = "bytes32") -> bytes:
        """An i32 length (negative refused) followed by that many bytes."""
        n = self.i32(f"{what} length")
        if n < 0:
            raise ProtocolError(f"{what}: negative length {n}")
        return self.take(n, what)

    def str16(self, what: str = "str16") -> str:
        return decode_utf8(self.bytes16(what), what)

    def rest(self) -> bytes:
        return self.take(self.remaining)

    def expect_end(self, what: str = "structure") -> None:
        if self.remaining:
            raise TrailingBytes(f"{self.remaining} unexpected bytes after {what}")


class Writer:
    """Accumulates encoded fields; ``getvalue()`` joins them."""

    __slots__ = ("_order", "_parts")

    def __init__(self, order: ByteOrder = ">") -> None:
        self._order: ByteOrder = order
        self._parts: list[bytes] = []

    def raw(self, data: bytes) -> Writer:
        self._parts.append(bytes(data))
        return self

    def _int(self, kind: str, value: int) -> Writer:
        try:
            self._parts.append(_struct(self._order, kind).pack(value))
        except struct.error as exc:
            raise ValueError(f"{value} does not fit in {kind}") from exc
        return self

    def u8(self, v: int) -> Writer:
        return self._int("u8", v)

    def u16(self, v: int) -> Writer:
        return self._int("u16", v)

    def i16(self, v: int) -> Writer:
        return self._int("i16", v)

    def u32(self, v: int) -> Writer:
        return self._int("u32", v)

    def i32(self, v: int) -> Writer:
        return self._int("i32", v)

    def u64(self, v: int) -> Writer:
        return self._int("u64", v)

    def i64(self, v: int) -> Writer:
        return self._int("i64", v)

    def bytes16(self, data: bytes) -> Writer:
        return self.u16(len(data)).raw(data)

    def bytes32(self, data: bytes) -> Writer:
        return self.i32(len(data)).raw(data)

    def str16(self, text: str) -> Writer:
        return self.bytes16(text.encode("utf-8"))

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


def decode_utf8(data: bytes, what: str = "text") -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"{what} is not valid UTF-8 (byte {exc.start})") from exc
