"""The field types of :mod:`.schema` and the cursor they decode from.

Every type encodes and decodes under a :class:`Ctx`: the protocol's
:class:`~.encoding.Encoding`, the message version, and whether that version is flexible
(Kafka's compact form).  The rules of each type:

* :class:`Fixed`: a fixed-width number in the encoding's byte order (:class:`Wide` one
  wider than :mod:`struct` packs, ``uint128``); :class:`Bool`: one
  byte, non-zero is true; :class:`Uuid`: 16 bytes; :class:`Varint`: a zig-zag signed
  (``varint``, ``varlong``) or unsigned (``uvarint``) varint of :mod:`.varint`;
* :class:`String` (UTF-8) and :class:`Bytes`: a length prefix, then that many bytes.  The
  prefix is the encoding's (``string_length``, ``bytes_length``) unless the type names
  its own; in a flexible version it is compact; the encoding's null length is null.

Types made of other types are in :mod:`.schema_compound` (a sized value, a tagged union)
and :mod:`.schema_fields` (structs and arrays, which hold fields).  ``decode`` returns
the value; ``read`` does the same and also appends the
:class:`~conformance.plugin.FieldSpan` of every part when the cursor collects spans (the
frame annotator): a fixed-width length names the bytes it counts, in the encoding's byte
order and sign, so the minimizer can rewrite it.  A *tolerant* cursor (the annotator's
walk over malformed bytes, ``Message.annotate(..., tolerant=True)``) reads a string or
bytes differently: its length's span goes in as soon as the prefix is read; a length that
is negative (not null) or runs past the data makes the rest of the data that field's and
stops the walk; bytes that are not UTF-8 are shown with replacement characters and the
walk goes on.
"""

from __future__ import annotations

import struct
import uuid as _uuid
from dataclasses import dataclass, replace
from typing import Any

from conformance.errors import ProtocolError, Truncated
from conformance.plugin import FieldSpan
from conformance.wire.encoding import Encoding, Prefix
from conformance.wire.varint import max_bytes, read_uvarint, unzigzag, uvarint, varint


@dataclass(frozen=True, slots=True)
class Ctx:
    """What a type is encoded under: the encoding, the version, its flexibility."""

    encoding: Encoding
    version: int
    flexible: bool

    def with_flexible(self, flexible: bool) -> Ctx:
        return self if flexible == self.flexible else replace(self, flexible=flexible)


class In:
    """A bounds-checked cursor; ``spans`` collects the annotation when asked for, and a
    ``tolerant`` one walks malformed bytes as far as they go (see the module doc)."""

    __slots__ = ("data", "pos", "spans", "tolerant")

    def __init__(
        self, data: bytes, pos: int, spans: list[FieldSpan] | None, tolerant: bool = False
    ) -> None:
        self.data = data
        self.pos = pos
        self.spans = spans
        self.tolerant = tolerant and spans is not None

    def take(self, n: int, what: str) -> bytes:
        end = self.pos + n
        if n < 0:
            raise ProtocolError(f"{what}: negative length {n}")
        if end > len(self.data):
            raise Truncated(
                f"{what}: need {n} bytes at offset {self.pos}, {len(self.data) - self.pos} left"
            )
        out = self.data[self.pos : end]
        self.pos = end
        return out

    def unpack(self, s: struct.Struct, what: str) -> Any:
        if self.pos + s.size > len(self.data):
            raise Truncated(f"{what}: need {s.size} bytes at offset {self.pos}")
        (value,) = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return value

    def uvarint(self, what: str, bits: int = 32) -> int:
        value, self.pos = read_uvarint(self.data, self.pos, bits, what)
        return value

    def length(self, ctx: Ctx, prefix: Prefix, what: str) -> int | None:
        """A length or count; a tolerant cursor also returns a negative one."""
        n, self.pos = ctx.encoding.read_length(
            self.data, self.pos, prefix, ctx.flexible, what, tolerant=self.tolerant
        )
        return n

    @property
    def left(self) -> int:
        return len(self.data) - self.pos


def join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def shown(value: Any) -> Any:
    """A value as an annotation shows it (long bytes are summarised)."""
    if isinstance(value, bytes) and len(value) > 64:
        return f"<{len(value)} bytes>"
    return value


def length_span(
    ctx: Ctx, prefix: Prefix, name: str, start: int, end: int, value: int, **structure: Any
) -> FieldSpan:
    """The span of a length or count prefix; its structure (``counts``, ``items``) only
    when it is fixed-width, the one kind the minimizer can rewrite in place."""
    fixed = not ctx.flexible and prefix != "uvarint"
    if not fixed:
        structure = {}
    signed = ctx.flexible or prefix.startswith("i")
    order = ctx.encoding.byte_order
    return FieldSpan(name, start, end, value, order=order, signed=signed, **structure)


def rest(r: In, path: str) -> None:
    """Where a tolerant walk stops: the rest of the data is ``path``'s (its raw bytes)."""
    if r.spans is not None:
        r.spans.append(FieldSpan(path, r.pos, len(r.data), shown(r.data[r.pos :])))
    r.pos = len(r.data)


def past(what: str, n: int, at: int) -> ProtocolError:
    """The error a tolerant walk stops with at a length or count ``n`` (read at ``at``)
    that is negative or points past the data."""
    if n < 0:
        return ProtocolError(f"{what}: negative {n} at offset {at}")
    return Truncated(f"{what}: {n} at offset {at} runs past the data")


# ------------------------------------------------------------------------- types


class Type:
    """A field type.  ``name`` is the schema's spelling (``int32``, ``[]Partition``)."""

    name = "?"
    nullable_kind = False
    """Whether a null can be encoded at all (strings, bytes, arrays, structs)."""

    def default(self, nullable: bool) -> Any:
        raise NotImplementedError

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        raise NotImplementedError

    def decode(self, r: In, ctx: Ctx, path: str) -> Any:
        raise NotImplementedError

    def read(self, r: In, ctx: Ctx, path: str) -> Any:
        """:meth:`decode`, appending the span of the value to ``r.spans``."""
        start = r.pos
        value = self.decode(r, ctx, path)
        if r.spans is not None:
            r.spans.append(FieldSpan(path, start, r.pos, shown(value)))
        return value

    def min_size(self, ctx: Ctx) -> int:
        """The fewest bytes a value of this type takes (an array's count check)."""
        return 1


class Fixed(Type):
    """A fixed-width number, ``fmt`` a :mod:`struct` letter, in the encoding's order."""

    def __init__(self, name: str, fmt: str, low: float, high: float) -> None:
        self.name = name
        self.fmt = fmt
        self.size = struct.calcsize(fmt)
        self.low = low
        self.high = high

    def default(self, nullable: bool) -> Any:
        return 0.0 if self.fmt in "df" else 0

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        try:
            out += ctx.encoding.fixed(self.fmt).pack(value)
        except struct.error as exc:
            raise ValueError(f"{value!r} does not fit in {self.name}") from exc

    def decode(self, r: In, ctx: Ctx, path: str) -> Any:
        return r.unpack(ctx.encoding.fixed(self.fmt), path)

    def min_size(self, ctx: Ctx) -> int:
        return self.size


class Wide(Type):
    """A fixed-width integer wider than :mod:`struct` packs (``uint128``: 16 bytes), in
    the encoding's byte order."""

    def __init__(self, name: str, size: int, signed: bool = False) -> None:
        self.name = name
        self.size = size
        self.signed = signed
        bits = 8 * size
        self.low = -(1 << (bits - 1)) if signed else 0
        self.high = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1

    def default(self, nullable: bool) -> Any:
        return 0

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        try:
            out += int(value).to_bytes(self.size, ctx.encoding.byte_order, signed=self.signed)
        except (OverflowError, TypeError, ValueError) as exc:
            raise ValueError(f"{value!r} does not fit in {self.name}") from exc

    def decode(self, r: In, ctx: Ctx, path: str) -> Any:
        raw = r.take(self.size, path)
        return int.from_bytes(raw, ctx.encoding.byte_order, signed=self.signed)

    def min_size(self, ctx: Ctx) -> int:
        return self.size


class Bool(Type):
    name = "bool"

    def default(self, nullable: bool) -> Any:
        return False

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        out.append(1 if value else 0)

    def decode(self, r: In, ctx: Ctx, path: str) -> Any:
        return r.take(1, path)[0] != 0


class Uuid(Type):
    name = "uuid"
    ZERO = str(_uuid.UUID(int=0))

    def default(self, nullable: bool) -> Any:
        return self.ZERO

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        out += _uuid.UUID(str(value)).bytes

    def decode(self, r: In, ctx: Ctx, path: str) -> Any:
        return str(_uuid.UUID(bytes=r.take(16, path)))

    def min_size(self, ctx: Ctx) -> int:
        return 16


class Varint(Type):
    """Zig-zag signed varint (``varint``: 32 bits, ``varlong``: 64) or ``uvarint``."""

    def __init__(self, name: str, bits: int, signed: bool) -> None:
        self.name = name
        self.bits = bits
        self.signed = signed
        self.limit = max_bytes(bits)

    def default(self, nullable: bool) -> Any:
        return 0

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        v = int(value)
        if self.signed:
            out += varint(v, self.bits)
            return
        if not 0 <= v < 1 << self.bits:
            raise ValueError(f"{v} does not fit in {self.name}")
        out += uvarint(v)

    def decode(self, r: In, ctx: Ctx, path: str) -> Any:
        raw = r.uvarint(path, self.bits)
        return unzigzag(raw) if self.signed else raw


class _Sized(Type):
    """Strings and bytes: a length prefix (the encoding's unless ``prefix`` is given),
    compact in flexible versions, then the bytes."""

    nullable_kind = True
    prefix: Prefix | None = None

    def prefix_of(self, encoding: Encoding) -> Prefix:
        raise NotImplementedError

    def to_bytes(self, value: Any) -> bytes:
        raise NotImplementedError

    def from_bytes(self, data: bytes, path: str) -> Any:
        raise NotImplementedError

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        prefix = self.prefix_of(ctx.encoding)
        if value is None:
            ctx.encoding.write_length(out, prefix, None, ctx.flexible)
            return
        data = self.to_bytes(value)
        ctx.encoding.write_length(out, prefix, len(data), ctx.flexible)
        out += data

    def decode(self, r: In, ctx: Ctx, path: str) -> Any:
        n = r.length(ctx, self.prefix_of(ctx.encoding), f"{path} length")
        return None if n is None else self.from_bytes(r.take(n, path), path)

    def read(self, r: In, ctx: Ctx, path: str) -> Any:
        if r.tolerant:
            return self._walk(r, ctx, path)
        start = r.pos
        value = self.decode(r, ctx, path)
        if r.spans is None:
            return value
        head = start
        if value is not None:
            # the length prefix as its own span: a fixed-width one says what it counts,
            # so the minimizer can empty the field; a varint one is only named
            size = len(self.to_bytes(value))
            head = r.pos - size
            prefix = self.prefix_of(ctx.encoding)
            r.spans.append(
                length_span(ctx, prefix, f"{path} length", start, head, size, counts=(head, r.pos))
            )
        r.spans.append(FieldSpan(path, head, r.pos, shown(value)))
        return value

    def _walk(self, r: In, ctx: Ctx, path: str) -> Any:
        """The tolerant read: the spans of the strict one, the length's recorded before
        its bytes are looked at (see the module doc)."""
        assert r.spans is not None
        start, prefix = r.pos, self.prefix_of(ctx.encoding)
        n = r.length(ctx, prefix, f"{path} length")
        head = r.pos
        if n is None:
            r.spans.append(FieldSpan(path, start, head, None))
            return None
        counts = (head, min(head + n, len(r.data))) if n >= 0 else None
        r.spans.append(length_span(ctx, prefix, f"{path} length", start, head, n, counts=counts))
        if n < 0 or n > r.left:
            rest(r, path)
            raise past(f"{path} length", n, start)
        data = r.take(n, path)
        try:
            value = self.from_bytes(data, path)
        except ProtocolError:  # not UTF-8: shown as well as it can be, and the walk goes on
            value = data.decode("utf-8", "replace")
        r.spans.append(FieldSpan(path, head, r.pos, shown(value)))
        return value


class String(_Sized):
    name = "string"

    def __init__(self, prefix: Prefix | None = None) -> None:
        self.prefix = prefix

    def prefix_of(self, encoding: Encoding) -> Prefix:
        return self.prefix or encoding.string_length

    def default(self, nullable: bool) -> Any:
        return None if nullable else ""

    def to_bytes(self, value: Any) -> bytes:
        return str(value).encode("utf-8")

    def from_bytes(self, data: bytes, path: str) -> Any:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"{path} is not valid UTF-8 (byte {exc.start})") from None


class Bytes(_Sized):
    name = "bytes"

    def __init__(self, name: str = "bytes", prefix: Prefix | None = None) -> None:
        self.name = name
        self.prefix = prefix

    def prefix_of(self, encoding: Encoding) -> Prefix:
        return self.prefix or encoding.bytes_length

    def default(self, nullable: bool) -> Any:
        return None if nullable else b""

    def to_bytes(self, value: Any) -> bytes:
        return bytes(value)

    def from_bytes(self, data: bytes, path: str) -> Any:
        return data


INT8 = Fixed("int8", "b", -(1 << 7), (1 << 7) - 1)
INT16 = Fixed("int16", "h", -(1 << 15), (1 << 15) - 1)
INT32 = Fixed("int32", "i", -(1 << 31), (1 << 31) - 1)
INT64 = Fixed("int64", "q", -(1 << 63), (1 << 63) - 1)
UINT8 = Fixed("uint8", "B", 0, (1 << 8) - 1)
UINT16 = Fixed("uint16", "H", 0, (1 << 16) - 1)
UINT32 = Fixed("uint32", "I", 0, (1 << 32) - 1)
UINT64 = Fixed("uint64", "Q", 0, (1 << 64) - 1)
UINT128 = Wide("uint128", 16)
INT128 = Wide("int128", 16, signed=True)
FLOAT32 = Fixed("float32", "f", float("-inf"), float("inf"))
FLOAT64 = Fixed("float64", "d", float("-inf"), float("inf"))
BOOL = Bool()
UUID = Uuid()
VARINT = Varint("varint", 32, True)
VARLONG = Varint("varlong", 64, True)
UVARINT = Varint("uvarint", 32, False)
STRING = String()
BYTES = Bytes()


class Linked(Type):
    """A type framed by an earlier sibling field of its struct, or derived from a sibling
    (the rules are in :mod:`.schema_linked`).  A :class:`~.schema_fields.Struct` calls
    these hooks, with itself as ``struct``, instead of :meth:`decode` alone."""

    def earlier(self) -> tuple[str, ...]:
        """The siblings that must come before this field."""
        return ()

    def hidden(self, name: str) -> tuple[str, ...]:
        """The fields (this one, held as ``name``, or siblings) computed from others and
        left out of the value."""
        return ()

    def prepare(self, value: dict[str, Any], name: str, ctx: Ctx, struct: Any) -> None:
        """Before the struct is encoded: put what is computed into its ``value``."""

    def decode_linked(
        self, r: In, ctx: Ctx, path: str, parent: str, siblings: dict[str, Any]
    ) -> Any:
        """The value at ``r`` given the siblings decoded so far (``parent``: the
        struct's path, under which the siblings' spans are named)."""
        raise NotImplementedError

    def finish(self, siblings: dict[str, Any], name: str, ctx: Ctx, path: str, struct: Any) -> None:
        """After the struct is decoded (not in a tolerant walk): a check across its
        fields, a ProtocolError when it fails."""
