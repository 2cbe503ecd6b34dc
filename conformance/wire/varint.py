"""Variable-length integers, written once for every protocol.

Seven bits a byte, least significant group first, the high bit set on every byte but the
last (the "base 128" form of Protocol Buffers, which Kafka's records and flexible versions
use).  A *signed* varint is zig-zag mapped first (0, -1, 1, -2 ... become 0, 1, 2, 3 ...)
so small negative numbers stay short.  ``bits`` is 32 (Kafka's ``varint``, at most 5
bytes) or 64 (``varlong``, at most 10 bytes).

Decoders are sans-IO and strict: they take a buffer and a position, return ``(value,
end)``, and raise :class:`~conformance.errors.Truncated` when the buffer ends inside the
number, or :class:`~conformance.errors.ProtocolError` when it runs over its byte limit or
its bit width.  Encoders raise ValueError for a value that does not fit, except
:func:`uvarint_wrapped`, which writes what a fuzzer asks for (a negative value as its
two's complement, as Java writes an unsigned varint of a negative int).
"""

from __future__ import annotations

from conformance.errors import ProtocolError, Truncated


def max_bytes(bits: int) -> int:
    """The most bytes a varint of ``bits`` bits takes (5 for 32, 10 for 64)."""
    return -(-bits // 7)


def zigzag(value: int, bits: int = 64) -> int:
    """``value`` zig-zag mapped to an unsigned number of ``bits`` bits."""
    return ((value << 1) ^ (value >> (bits - 1))) & ((1 << bits) - 1)


def unzigzag(raw: int) -> int:
    return (raw >> 1) ^ -(raw & 1)


def uvarint(value: int) -> bytes:
    """``value`` (>= 0) as an unsigned varint."""
    if value < 0:
        raise ValueError(f"an unsigned varint cannot hold {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def uvarint_wrapped(value: int, bits: int = 32) -> bytes:
    """Like :func:`uvarint`, but a negative value is written as its two's complement in
    ``bits`` bits (or as many as it needs): what a lying length field puts on the wire."""
    value = int(value)
    if value < 0:
        value &= (1 << max(bits, value.bit_length() + 1)) - 1
    return uvarint(value)


def varint(value: int, bits: int = 64) -> bytes:
    """``value`` as a zig-zag signed varint of ``bits`` bits (ValueError if it does not fit)."""
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not low <= value <= high:
        raise ValueError(f"{value} does not fit in a {bits}-bit varint")
    return uvarint(zigzag(value, bits))


def read_uvarint(data: bytes, pos: int, bits: int = 32, what: str = "varint") -> tuple[int, int]:
    """The unsigned varint at ``data[pos:]`` and the position after it."""
    value = shift = 0
    limit = max_bytes(bits)
    for i in range(pos, pos + limit):
        if i >= len(data):
            raise Truncated(f"{what}: varint ends at offset {i}")
        b = data[i]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            if value >> bits:
                raise ProtocolError(f"{what}: varint at offset {pos} is over {bits} bits")
            return value, i + 1
        shift += 7
    raise ProtocolError(f"{what}: varint at offset {pos} is longer than {limit} bytes")


def read_varint(data: bytes, pos: int, bits: int = 64, what: str = "varint") -> tuple[int, int]:
    """The zig-zag signed varint at ``data[pos:]`` and the position after it."""
    raw, end = read_uvarint(data, pos, bits, what)
    return unzigzag(raw), end
