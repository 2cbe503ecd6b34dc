"""The encoding rules a binary protocol gives the schema machinery of :mod:`.schema`.

A message declaration says *what* a message holds; an :class:`Encoding` says *how* its
protocol writes it, so one declaration language serves every binary protocol:

* ``byte_order``: ``"big"`` or ``"little"``, for every fixed-width number (one ``INT32``
  declaration is little-endian in a little-endian protocol) and every fixed-width length;
* the length prefix of a string (``string_length``), of bytes (``bytes_length``) and the
  item count of an array (``array_count``): a :data:`Prefix`, a fixed-width integer
  (``u8``, ``i8``, ``u16``, ``i16``, ``u32``, ``i32``, ``u64``, ``i64``: sign and width)
  or ``uvarint`` (the one varint codec, :mod:`.varint`);
* ``null_length``: -1 when a -1 length means null (Kafka; every prefix must then be
  signed), or None when the protocol has no null (declaring a nullable field is then an
  error);
* ``flexible``: whether messages may declare *flexible* versions, Kafka's second form, in
  which every string, bytes and array prefix is compact (an unsigned varint holding the
  length + 1, 0 for null) and every struct ends in a tagged-field section.

Each protocol declares its own, every rule spelled out (Kafka's is ``KAFKA`` in
:mod:`conformance.protocols.kafka.messages`); this module has no default.  Lengths are
read strictly: a negative one
other than the null value is a :class:`~conformance.errors.ProtocolError` (unless the
reader is tolerant, the annotator's walk, which is handed the negative value to report),
and a value that does not fit its prefix is a ValueError when writing.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field
from typing import Literal

from conformance.errors import ProtocolError, Truncated
from conformance.wire.varint import read_uvarint, uvarint

Prefix = Literal["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "uvarint"]
ByteOrder = Literal["big", "little"]

FORMATS: dict[str, str] = {
    "u8": "B",
    "i8": "b",
    "u16": "H",
    "i16": "h",
    "u32": "I",
    "i32": "i",
    "u64": "Q",
    "i64": "q",
}
"""The :mod:`struct` format letter of each fixed-width prefix."""
PREFIXES: tuple[Prefix, ...] = ("u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "uvarint")


@functools.cache
def packer(order: ByteOrder, fmt: str) -> struct.Struct:
    """The :class:`struct.Struct` of one format letter in ``order``."""
    return struct.Struct((">" if order == "big" else "<") + fmt)


def prefix_range(prefix: Prefix) -> tuple[int, int]:
    """The smallest and largest value a prefix holds."""
    if prefix == "uvarint":
        return 0, (1 << 32) - 1
    bits = 8 * struct.calcsize(FORMATS[prefix])
    if prefix.startswith("i"):
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


@dataclass(frozen=True)
class Encoding:
    """How a protocol writes what a message declaration holds (see the module doc)."""

    name: str
    byte_order: ByteOrder
    string_length: Prefix
    bytes_length: Prefix
    array_count: Prefix
    null_length: int | None
    flexible: bool = False
    _structs: dict[str, struct.Struct] = field(init=False, repr=False, compare=False)
    _prefixes: dict[str, tuple[struct.Struct | None, int, int]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.null_length not in (-1, None):
            raise ValueError(f"{self.name}: null is a -1 length or none, not {self.null_length}")
        if self.byte_order not in ("big", "little"):
            raise ValueError(f"{self.name}: byte order {self.byte_order!r}")
        for prefix in (self.string_length, self.bytes_length, self.array_count):
            if prefix != "uvarint" and prefix not in FORMATS:
                raise ValueError(f"{self.name}: no length prefix {prefix!r}")
            low, high = prefix_range(prefix)
            if self.null_length is not None and not low <= self.null_length <= high:
                raise ValueError(f"{self.name}: null {self.null_length} does not fit {prefix}")
        # worked out once: encoding and decoding look these up for every field
        structs = {fmt: packer(self.byte_order, fmt) for fmt in "bBhHiIqQfd"}
        prefixes = {p: (structs.get(FORMATS.get(p, "")), *prefix_range(p)) for p in PREFIXES}
        object.__setattr__(self, "_structs", structs)
        object.__setattr__(self, "_prefixes", prefixes)

    @property
    def order(self) -> Literal[">", "<"]:
        """The :mod:`struct` byte-order character."""
        return ">" if self.byte_order == "big" else "<"

    def fixed(self, fmt: str) -> struct.Struct:
        """The :class:`struct.Struct` of a fixed-width format letter in this byte order."""
        return self._structs.get(fmt) or packer(self.byte_order, fmt)

    def prefix_struct(self, prefix: Prefix) -> struct.Struct | None:
        """A fixed-width prefix's struct; None for ``uvarint``."""
        return self._prefixes[prefix][0]

    def write_length(self, out: bytearray, prefix: Prefix, n: int | None, compact: bool) -> None:
        """Length or count ``n`` (None: null) as ``prefix``, or compact (flexible form)."""
        if compact:
            out += uvarint(0 if n is None else n + 1)
            return
        if n is None:
            if self.null_length is None:
                raise ValueError(f"{self.name} has no null")
            n = self.null_length
        packed, low, high = self._prefixes[prefix]
        if not low <= n <= high:
            raise ValueError(f"a length of {n} does not fit {prefix}")
        out += uvarint(n) if packed is None else packed.pack(n)

    def read_length(
        self,
        data: bytes,
        pos: int,
        prefix: Prefix,
        compact: bool,
        what: str,
        *,
        tolerant: bool = False,
    ) -> tuple[int | None, int]:
        """The length or count at ``data[pos:]`` (None: null) and the position after it;
        ``tolerant`` returns a negative one (not null) instead of refusing it."""
        if compact:
            raw, end = read_uvarint(data, pos, 32, what)
            return (None if raw == 0 else raw - 1), end
        packed = self._prefixes[prefix][0]
        if packed is None:
            return read_uvarint(data, pos, 32, what)
        end = pos + packed.size
        if end > len(data):
            raise Truncated(f"{what}: need {packed.size} bytes at offset {pos}")
        (n,) = packed.unpack_from(data, pos)
        if self.null_length is not None and n == self.null_length:
            return None, end
        if n < 0 and not tolerant:
            raise ProtocolError(f"{what}: negative {int(n)}")
        return int(n), end
