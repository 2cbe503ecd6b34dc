"""Declarative binary message schemas: each message declared once, everything derived.

A :class:`Message` is a list of :class:`Field` s.  A field has a type, the versions it
exists in, the versions in which it may be null, and (for Kafka's flexible versions) a
tag and the versions in which it travels as a tagged field.  From one declaration this
module encodes and decodes every version, and records the byte span of every field
while decoding (the frame annotator, :func:`annotate`); strategies and fuzz layers are
derived elsewhere (:mod:`conformance.wire.schema_strategies`) from the same objects.

Rules of the encoding (Kafka's, the first user; byte order is big-endian):

* Fixed-width integers, ``float64``, ``bool`` (one byte, non-zero is true), ``uuid``
  (16 bytes), zig-zag ``varint``/``varlong`` and unsigned ``uvarint``.
* In a version the message declares *flexible*, strings, bytes and arrays are compact
  (unsigned varint length + 1, 0 for null) and every struct ends in a tagged-field
  section; otherwise strings have an int16 length, bytes and arrays an int32 length, and
  -1 is null.  A field may opt out of flexibility (``flexible="none"``: the request
  header's client id).
* A tagged field is written only when its value differs from its default, in tag order,
  as ``uvarint tag, uvarint size, value``; tags a decoder does not know are kept under
  ``"_unknown_tags"`` and written back.

Decoded messages are plain dicts keyed by field name (lists of dicts for struct arrays);
encoding fills any missing field with its default.  Every decoder either returns a
message or raises :class:`~conformance.errors.ProtocolError`: a length is checked against
the bytes actually left before anything is allocated for it.
"""

from __future__ import annotations

import contextlib
import struct
import uuid as _uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.errors import ProtocolError, TrailingBytes, Truncated
from conformance.plugin import FieldSpan

UNKNOWN_TAGS = "_unknown_tags"

# ---------------------------------------------------------------------- versions


@dataclass(frozen=True)
class Versions:
    """A closed range of versions; ``high`` None means "and every later one"."""

    low: int
    high: int | None

    @classmethod
    def parse(cls, text: str | Versions) -> Versions:
        """``"0+"``, ``"3-5"``, ``"2"`` or ``"none"``."""
        if isinstance(text, Versions):
            return text
        t = text.strip()
        if t == "none":
            return NO_VERSIONS
        if t.endswith("+"):
            return cls(int(t[:-1]), None)
        low, _, high = t.partition("-")
        return cls(int(low), int(high or low))

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int):
            return False
        return self.low <= version and (self.high is None or version <= self.high)

    def __str__(self) -> str:
        if self == NO_VERSIONS:
            return "none"
        if self.high is None:
            return f"{self.low}+"
        return f"{self.low}" if self.low == self.high else f"{self.low}-{self.high}"


NO_VERSIONS = Versions(1, 0)
ALL_VERSIONS = Versions(0, None)

# ------------------------------------------------------------------------ cursor


class _In:
    """A bounds-checked cursor; ``spans`` collects the annotation when asked for."""

    __slots__ = ("data", "pos", "spans")

    def __init__(self, data: bytes, pos: int, spans: list[FieldSpan] | None) -> None:
        self.data = data
        self.pos = pos
        self.spans = spans

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

    def uvarint(self, what: str, limit: int = 5) -> int:
        value = shift = 0
        for i in range(limit):
            if self.pos >= len(self.data):
                raise Truncated(f"{what}: varint ends at offset {self.pos}")
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            del i
        raise ProtocolError(f"{what}: varint longer than {limit} bytes")

    @property
    def left(self) -> int:
        return len(self.data) - self.pos


def uvarint_bytes(value: int) -> bytes:
    """``value`` (>= 0) as an unsigned varint."""
    if value < 0:
        raise ValueError(f"an unsigned varint cannot hold {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def zigzag(value: int, bits: int) -> int:
    return (value << 1) ^ (value >> (bits - 1))


def unzigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


# ------------------------------------------------------------------------- types


class Type:
    """A field type.  ``name`` is the schema's spelling (``int32``, ``[]Partition``)."""

    name = "?"
    nullable_kind = False
    """Whether a null can be encoded at all (strings, bytes, arrays, structs)."""

    def default(self, nullable: bool) -> Any:
        raise NotImplementedError

    def encode(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        raise NotImplementedError

    def decode(self, r: _In, version: int, flexible: bool, path: str) -> Any:
        raise NotImplementedError

    def min_size(self, flexible: bool) -> int:
        """The fewest bytes a value of this type takes (an array's count check)."""
        return 1


class Fixed(Type):
    def __init__(self, name: str, fmt: str, low: float, high: float) -> None:
        self.name = name
        self.struct = struct.Struct(">" + fmt)
        self.low = low
        self.high = high

    def default(self, nullable: bool) -> Any:
        return 0.0 if self.name == "float64" else 0

    def encode(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        try:
            out += self.struct.pack(value)
        except struct.error as exc:
            raise ValueError(f"{value!r} does not fit in {self.name}") from exc

    def decode(self, r: _In, version: int, flexible: bool, path: str) -> Any:
        return r.unpack(self.struct, path)

    def min_size(self, flexible: bool) -> int:
        return self.struct.size


class Bool(Type):
    name = "bool"

    def default(self, nullable: bool) -> Any:
        return False

    def encode(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        out.append(1 if value else 0)

    def decode(self, r: _In, version: int, flexible: bool, path: str) -> Any:
        return r.take(1, path)[0] != 0


class Uuid(Type):
    name = "uuid"
    ZERO = str(_uuid.UUID(int=0))

    def default(self, nullable: bool) -> Any:
        return self.ZERO

    def encode(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        out += _uuid.UUID(str(value)).bytes

    def decode(self, r: _In, version: int, flexible: bool, path: str) -> Any:
        return str(_uuid.UUID(bytes=r.take(16, path)))

    def min_size(self, flexible: bool) -> int:
        return 16


class Varint(Type):
    """Zig-zag signed varint (``varint``: 32 bits, ``varlong``: 64) or ``uvarint``."""

    def __init__(self, name: str, bits: int, signed: bool) -> None:
        self.name = name
        self.bits = bits
        self.signed = signed
        self.limit = 5 if bits == 32 else 10

    def default(self, nullable: bool) -> Any:
        return 0

    def encode(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        v = int(value)
        low, high = (
            (-(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1)
            if self.signed
            else (
                0,
                (1 << self.bits) - 1,
            )
        )
        if not low <= v <= high:
            raise ValueError(f"{v} does not fit in {self.name}")
        out += uvarint_bytes(zigzag(v, self.bits) & ((1 << self.bits) - 1) if self.signed else v)

    def decode(self, r: _In, version: int, flexible: bool, path: str) -> Any:
        raw = r.uvarint(path, self.limit)
        return unzigzag(raw) if self.signed else raw


class _Sized(Type):
    """Strings and bytes: int16/int32 length, or compact in flexible versions."""

    nullable_kind = True
    classic: struct.Struct

    def _length(self, out: bytearray, n: int | None, flexible: bool) -> None:
        if flexible:
            out += uvarint_bytes(0 if n is None else n + 1)
        else:
            out += self.classic.pack(-1 if n is None else n)

    def _read_length(self, r: _In, flexible: bool, path: str) -> int | None:
        n = (
            r.uvarint(f"{path} length") - 1
            if flexible
            else r.unpack(self.classic, f"{path} length")
        )
        if n == -1:
            return None
        if n < -1:
            raise ProtocolError(f"{path}: negative length {n}")
        return int(n)


class String(_Sized):
    name = "string"
    classic = struct.Struct(">h")

    def default(self, nullable: bool) -> Any:
        return None if nullable else ""

    def encode(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        if value is None:
            self._length(out, None, flexible)
            return
        data = str(value).encode("utf-8")
        if not flexible and len(data) > 0x7FFF:
            raise ValueError(f"a string of {len(data)} bytes does not fit an int16 length")
        self._length(out, len(data), flexible)
        out += data

    def decode(self, r: _In, version: int, flexible: bool, path: str) -> Any:
        n = self._read_length(r, flexible, path)
        if n is None:
            return None
        data = r.take(n, path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"{path} is not valid UTF-8 (byte {exc.start})") from None


class Bytes(_Sized):
    name = "bytes"
    classic = struct.Struct(">i")

    def __init__(self, name: str = "bytes") -> None:
        self.name = name

    def default(self, nullable: bool) -> Any:
        return None if nullable else b""

    def encode(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        if value is None:
            self._length(out, None, flexible)
            return
        data = bytes(value)
        self._length(out, len(data), flexible)
        out += data

    def decode(self, r: _In, version: int, flexible: bool, path: str) -> Any:
        n = self._read_length(r, flexible, path)
        return None if n is None else r.take(n, path)


@dataclass(frozen=True)
class Field:
    """One field of a struct.  ``versions``, ``nullable``, ``tagged`` and ``flexible``
    are version ranges (``"0+"``, ``"3-5"``, ``"none"``); ``flexible`` None follows
    the message."""

    name: str
    type: Type
    versions: Versions = ALL_VERSIONS
    nullable: Versions = NO_VERSIONS
    tag: int | None = None
    tagged: Versions = NO_VERSIONS
    default: Any = None
    flexible: Versions | None = None
    doc: str = ""

    def default_at(self, version: int) -> Any:
        if self.default is not None:
            return self.default
        return self.type.default(version in self.nullable)


def f(
    name: str,
    type: Type,
    versions: str = "0+",
    *,
    nullable: str = "none",
    tag: int | None = None,
    tagged: str = "none",
    default: Any = None,
    flexible: str | None = None,
    doc: str = "",
) -> Field:
    """A field, with version ranges spelled as in Kafka's message definitions."""
    return Field(
        name=name,
        type=type,
        versions=Versions.parse(versions),
        nullable=Versions.parse(nullable),
        tag=tag,
        tagged=Versions.parse(tagged) if tag is not None else NO_VERSIONS,
        default=default,
        flexible=None if flexible is None else Versions.parse(flexible),
        doc=doc,
    )


class Struct(Type):
    """A sequence of fields; in a flexible version it ends in tagged fields."""

    nullable_kind = True

    def __init__(self, name: str, fields: Sequence[Field]) -> None:
        self.name = name
        self.fields = tuple(fields)
        tags = [fl.tag for fl in self.fields if fl.tag is not None]
        if len(tags) != len(set(tags)):
            raise ValueError(f"{name}: a tag is used twice")
        names = [fl.name for fl in self.fields]
        if len(names) != len(set(names)):
            raise ValueError(f"{name}: a field name is used twice")

    def default(self, nullable: bool) -> Any:
        return None if nullable else {}

    def min_size(self, flexible: bool) -> int:
        return 1 if flexible else 0

    def encode(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        value = value if value is not None else {}
        tagged: list[tuple[int, bytes]] = []
        for fl in self.fields:
            if version not in fl.versions:
                continue
            v = value.get(fl.name, fl.default_at(version)) if isinstance(value, Mapping) else None
            fx = flexible if fl.flexible is None else version in fl.flexible
            if flexible and version in fl.tagged:
                assert fl.tag is not None
                if v == fl.default_at(version):
                    continue
                part = bytearray()
                _encode_field(part, fl, v, version, fx)
                tagged.append((fl.tag, bytes(part)))
                continue
            _encode_field(out, fl, v, version, fx)
        if flexible:
            unknown = value.get(UNKNOWN_TAGS) or {} if isinstance(value, Mapping) else {}
            tagged += [(int(t), bytes(b)) for t, b in unknown.items()]
            tagged.sort()
            out += uvarint_bytes(len(tagged))
            for tag, body in tagged:
                out += uvarint_bytes(tag)
                out += uvarint_bytes(len(body))
                out += body

    def decode(self, r: _In, version: int, flexible: bool, path: str) -> Any:
        out: dict[str, Any] = {}
        tagged: dict[int, Field] = {}
        for fl in self.fields:
            if version not in fl.versions:
                continue
            if flexible and version in fl.tagged:
                assert fl.tag is not None
                tagged[fl.tag] = fl
                out[fl.name] = fl.default_at(version)
                continue
            fx = flexible if fl.flexible is None else version in fl.flexible
            out[fl.name] = _decode_field(r, fl, version, fx, _join(path, fl.name))
        if flexible:
            self._decode_tags(r, version, path, tagged, out)
        return out

    def _decode_tags(
        self, r: _In, version: int, path: str, known: dict[int, Field], out: dict[str, Any]
    ) -> None:
        start = r.pos
        count = r.uvarint(f"{_join(path, 'tagged fields')} count")
        if count > r.left:
            raise Truncated(f"{path}: {count} tagged fields claimed, {r.left} bytes left")
        if r.spans is not None:
            r.spans.append(FieldSpan(_join(path, "tagged fields"), start, r.pos, count))
        last = -1
        for _ in range(count):
            tag = r.uvarint(f"{path} tag")
            if tag <= last:
                raise ProtocolError(f"{path}: tag {tag} after tag {last} (tags must ascend)")
            last = tag
            size = r.uvarint(f"{path} tag {tag} size")
            body = r.take(size, f"{path} tag {tag}")
            fl = known.get(tag)
            if fl is None:
                out.setdefault(UNKNOWN_TAGS, {})[tag] = body
                continue
            sub = _In(body, 0, None)
            out[fl.name] = _decode_field(sub, fl, version, True, _join(path, fl.name))
            if sub.left:
                raise TrailingBytes(f"{path}: {sub.left} bytes left in tagged field {fl.name}")
            if r.spans is not None:
                r.spans.append(FieldSpan(_join(path, fl.name), r.pos - size, r.pos, out[fl.name]))


class Array(Type):
    nullable_kind = True

    def __init__(self, element: Type, max_items: int = 1 << 20) -> None:
        self.element = element
        self.name = f"[]{element.name}"
        self.max_items = max_items

    def default(self, nullable: bool) -> Any:
        return None if nullable else []

    def encode(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        if value is None:
            out += uvarint_bytes(0) if flexible else b"\xff\xff\xff\xff"
            return
        items = list(value)
        out += uvarint_bytes(len(items) + 1) if flexible else _I32.pack(len(items))
        for item in items:
            self.element.encode(out, item, version, flexible)

    def decode(self, r: _In, version: int, flexible: bool, path: str) -> Any:
        start = r.pos
        n = r.uvarint(f"{path} count") - 1 if flexible else r.unpack(_I32, f"{path} count")
        if n == -1:
            return None
        if n < -1:
            raise ProtocolError(f"{path}: negative count {n}")
        least = self.element.min_size(flexible)
        if n > self.max_items or (least and n * least > r.left):
            raise Truncated(f"{path}: {n} items claimed, {r.left} bytes left")
        counted = r.pos
        items = []
        bounds: list[tuple[int, int]] = []
        for i in range(n):
            a = r.pos
            items.append(self.element.decode(r, version, flexible, f"{path}[{i}]"))
            bounds.append((a, r.pos))
        if r.spans is not None:
            r.spans.append(
                FieldSpan(
                    f"{path} count",
                    start,
                    counted,
                    n,
                    items=tuple(bounds) if not flexible else (),
                    signed=True,
                )
            )
        return items


_I32 = struct.Struct(">i")

INT8 = Fixed("int8", "b", -(1 << 7), (1 << 7) - 1)
INT16 = Fixed("int16", "h", -(1 << 15), (1 << 15) - 1)
INT32 = Fixed("int32", "i", -(1 << 31), (1 << 31) - 1)
INT64 = Fixed("int64", "q", -(1 << 63), (1 << 63) - 1)
UINT8 = Fixed("uint8", "B", 0, (1 << 8) - 1)
UINT16 = Fixed("uint16", "H", 0, (1 << 16) - 1)
UINT32 = Fixed("uint32", "I", 0, (1 << 32) - 1)
FLOAT64 = Fixed("float64", "d", float("-inf"), float("inf"))
BOOL = Bool()
UUID = Uuid()
VARINT = Varint("varint", 32, True)
VARLONG = Varint("varlong", 64, True)
UVARINT = Varint("uvarint", 32, False)
STRING = String()
BYTES = Bytes()
RECORDS = Bytes("records")
"""A Kafka ``records`` field: nullable bytes on the wire, record batches inside."""


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _encode_field(out: bytearray, fl: Field, value: Any, version: int, flexible: bool) -> None:
    if value is None and fl.type.nullable_kind and version not in fl.nullable:
        raise ValueError(f"{fl.name} cannot be null in version {version}")
    if isinstance(fl.type, Struct) and version in fl.nullable:
        out.append(0xFF if value is None else 1)  # a nullable struct's presence byte
        if value is None:
            return
    fl.type.encode(out, value, version, flexible)


def _decode_field(r: _In, fl: Field, version: int, flexible: bool, path: str) -> Any:
    start = r.pos
    typ = fl.type
    if isinstance(typ, Struct) and version in fl.nullable and r.unpack(_I8, f"{path} presence") < 0:
        return None
    value = typ.decode(r, version, flexible, path)
    if value is None and version not in fl.nullable:
        raise ProtocolError(f"{path} is null, which version {version} does not allow")
    if r.spans is not None and not isinstance(typ, Struct | Array):
        head = start
        if isinstance(typ, _Sized) and value is not None:
            # the length prefix as its own span: fixed-width ones say what they count, so
            # the minimizer can empty the field; a compact (varint) one is only named
            size = len(value) if isinstance(value, bytes) else len(value.encode("utf-8"))
            head = r.pos - size
            counted = (head, r.pos) if not flexible else None
            r.spans.append(
                FieldSpan(f"{path} length", start, head, size, counts=counted, signed=True)
            )
        r.spans.append(FieldSpan(path, head, r.pos, _shown(value)))
    return value


_I8 = struct.Struct(">b")


def _shown(value: Any) -> Any:
    if isinstance(value, bytes) and len(value) > 64:
        return f"<{len(value)} bytes>"
    return value


# ---------------------------------------------------------------------- messages


@dataclass(frozen=True)
class Message:
    """A top-level message: a struct with its own version range and flexible versions."""

    name: str
    versions: Versions
    flexible: Versions
    body: Struct
    doc: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def check_version(self, version: int) -> None:
        if version not in self.versions:
            raise ProtocolError(f"{self.name} has no version {version} (knows {self.versions})")

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def encode(self, value: Mapping[str, Any], version: int) -> bytes:
        """``value`` at ``version`` (missing fields take their defaults); ValueError if a
        value does not fit its field."""
        self.check_version(version)
        out = bytearray()
        self.body.encode(out, value, version, self.is_flexible(version))
        return bytes(out)

    def decode(
        self, data: bytes, version: int, *, offset: int = 0, whole: bool = True
    ) -> dict[str, Any]:
        """The message at ``data[offset:]``; with ``whole``, bytes after it are an error."""
        message, end = self.decode_at(data, version, offset)
        if whole and end != len(data):
            raise TrailingBytes(f"{len(data) - end} unexpected bytes after {self.name}")
        return message

    def decode_at(
        self, data: bytes, version: int, offset: int = 0, spans: list[FieldSpan] | None = None
    ) -> tuple[dict[str, Any], int]:
        """The message at ``data[offset:]`` and the offset just after it."""
        self.check_version(version)
        r = _In(data, offset, spans)
        try:
            value = self.body.decode(r, version, self.is_flexible(version), "")
        except RecursionError:
            raise ProtocolError(f"{self.name} nests too deeply") from None
        return value, r.pos

    def annotate(self, data: bytes, version: int, offset: int = 0) -> list[FieldSpan]:
        """Every field of the message at ``data[offset:]`` with its byte span; the fields
        read before a decoding error, if there is one."""
        spans: list[FieldSpan] = []
        with contextlib.suppress(ProtocolError):
            self.decode_at(data, version, offset, spans)
        return sorted(spans, key=lambda s: (s.start, -s.end))


def message(
    name: str, versions: str, flexible: str, fields: Sequence[Field], doc: str = "", **extra: Any
) -> Message:
    """A message declaration, version ranges spelled as in Kafka's definitions."""
    return Message(
        name=name,
        versions=Versions.parse(versions),
        flexible=Versions.parse(flexible),
        body=Struct(name, fields),
        doc=doc,
        extra=extra,
    )


def struct_of(name: str, *fields: Field) -> Struct:
    return Struct(name, fields)


def array_of(element: Type | str, *fields: Field) -> Array:
    """``array_of(INT32)`` or ``array_of("Partition", f(...), f(...))``."""
    if isinstance(element, str):
        return Array(Struct(element, fields))
    return Array(element)


def walk(typ: Type, visit: Callable[[Field, Type], None], seen: set[int] | None = None) -> None:
    """Call ``visit(field, its struct)`` for every field under ``typ``."""
    seen = set() if seen is None else seen
    if id(typ) in seen:
        return
    seen.add(id(typ))
    if isinstance(typ, Array):
        walk(typ.element, visit, seen)
    elif isinstance(typ, Struct):
        for fl in typ.fields:
            visit(fl, typ)
            walk(fl.type, visit, seen)
