"""Scapy layers derived from the message declarations of :mod:`.schema`, for the
structure-aware fuzzer.

``layer(message, version)`` is a Packet class (``ProduceRequest_v9``) whose fields are
the message's at that version, in wire order; ``packet(message, version, value)``
builds one from a value as :meth:`~.schema.Message.encode` takes it, and
``bytes(packet(m, v, value)) == m.encode(value, v)``.  ``layer(m, v)(data)`` dissects
an encoding back into fields.  What each schema field becomes:

* fixed-width integers: scapy's big-endian field of that size and sign; ``float64``:
  an IEEE double; ``bool``: a byte (0 or 1); ``uuid``: 16 raw bytes; ``varint`` and
  ``varlong``: :class:`ZigZagField`; ``uvarint``: :class:`UVarintField`;
* ``string``/``bytes`` field ``x``: a length field ``x_len`` and then ``x``, the bytes
  (UTF-8 for a string; ``None`` is null).  In a classic version the length is an int16
  (strings) or int32 (bytes), -1 for null; in a flexible one an unsigned varint holding
  the length + 1, 0 for null;
* array ``x``: a count field ``x_count`` (int32, -1 for null; or uvarint count + 1, 0
  for null) and ``x``, a list of packets: the element struct's class, or for other
  element types an item class with one field ``value``.  A null array is
  :data:`NULL` (an empty list that writes the null count; ``None`` assigned turns into
  it, so that ``fuzz`` can walk every list);
* struct ``x``: a packet of the struct's own class; if the version lets it be null, a
  presence byte ``x_present`` (1, or -1 for null) goes first;
* a struct in a flexible version ends in ``tagged_fields_count`` (uvarint) and
  ``tagged_fields``, packets of ``tag`` (uvarint), ``value_len`` (uvarint) and
  ``value``: a packet of the tagged field's own fields (``Raw`` for a tag the struct
  does not declare, as ``"_unknown_tags"`` holds them).

Every length, count and presence field is ``None`` by default and computed when the
packet is built, so framing stays valid; set one and exactly that (possibly lying)
value goes on the wire while the data stays as it is (an unsigned varint given a
negative value writes its 32-bit two's complement, as Java does).

Names are the schema's snake_case names, except a name scapy's ``Packet`` already uses
(``name``, ``payload``, ``fields``, ``time``, ``underlayer``, ``original``, ... any
attribute of ``Packet``), which gets a trailing underscore (``name_``): see
:func:`scapy_name`.  Length, count and presence fields are named after the schema name
(``name_len``).  Classes are built on first use and cached per message or struct,
version and flexibility.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, cast

from scapy import fields as sf
from scapy.packet import Packet, Raw
from scapy.volatile import RandFloat, RandNum, VolatileValue

from conformance.wire.schema import (
    ALL_VERSIONS,
    UNKNOWN_TAGS,
    Array,
    Bool,
    Bytes,
    Field,
    Fixed,
    Message,
    String,
    Struct,
    Type,
    Uuid,
    Varint,
)

TAGGED_COUNT = "tagged_fields_count"
TAGGED = "tagged_fields"


def scapy_name(field_name: str) -> str:
    """The scapy field name of a schema field: its own, with ``_`` appended when scapy's
    ``Packet`` already has an attribute of that name (``name`` -> ``name_``)."""
    return field_name + "_" if hasattr(Packet, field_name) else field_name


# ------------------------------------------------------------------ field types


def _uvarint(value: int, bits: int) -> bytes:
    value = int(value)
    if value < 0:
        value &= (1 << max(bits, value.bit_length() + 1)) - 1
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class UVarintField(sf.Field[int, int]):
    """An unsigned varint (7 bits a byte, least significant first) of ``bits`` bits; a
    truncated one dissects to what it holds so far."""

    __slots__ = ("bits",)

    def __init__(self, name: str, default: int | None, bits: int = 32) -> None:
        super().__init__(name, default, fmt="B")
        self.bits = bits

    def addfield(self, pkt: Packet, s: bytes, val: int | None) -> bytes:
        return s + _uvarint(self.i2m(pkt, val), self.bits)

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, int]:
        value = shift = used = 0
        for b in s[:10]:
            used += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        return s[used:], self.m2i(pkt, value)

    def i2len(self, pkt: Packet, x: Any) -> int:
        return len(_uvarint(self.i2m(pkt, x), self.bits))

    def randval(self) -> VolatileValue[Any]:
        return RandNum(0, (1 << self.bits) - 1)


class ZigZagField(UVarintField):
    """A zig-zag signed varint (``varint``: 32 bits, ``varlong``: 64)."""

    def i2m(self, pkt: Packet | None, x: int | None) -> int:
        v = int(x or 0)
        return ((v << 1) ^ (v >> (self.bits - 1))) & ((1 << self.bits) - 1)

    def m2i(self, pkt: Packet | None, x: int) -> int:
        return (x >> 1) ^ -(x & 1)

    def randval(self) -> VolatileValue[Any]:
        return RandNum(-(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1)


class NullList(list[Any]):
    """A null array: empty, and written as the null count."""

    def copy(self) -> NullList:
        return NullList()

    def __deepcopy__(self, memo: Any) -> NullList:
        return NullList()


NULL = NullList()


def _is_null(value: Any) -> bool:
    return value is None or isinstance(value, NullList)


def _computed(fld: Any, pkt: Packet) -> int:
    """What a length, count or presence field ``fld`` says of ``fld.of`` in ``pkt``."""
    target, val = pkt.getfield_and_val(fld.of)
    if fld.how == "presence":
        return -1 if val is None else 1
    if _is_null(val):
        return int(fld.null)
    n = len(val) if fld.how == "count" else len(target.i2m(pkt, val))
    return n + int(fld.plus)


class _Computed:
    """A length, count or presence field: None is computed (:func:`_computed`), anything
    else is written as is."""

    def i2m(self, pkt: Packet | None, x: int | None) -> int:
        return _computed(self, pkt) if x is None and pkt is not None else int(x or 0)


class LenField(_Computed, sf.FieldLenField):
    """A fixed-width (``fmt``) length (``how="length"``), count or presence byte of
    field ``of``; -1 for a null target."""

    def __init__(self, name: str, of: str, fmt: str, how: str = "length") -> None:
        count = how == "count"
        super().__init__(
            name, None, fmt=fmt, length_of=None if count else of, count_of=of if count else None
        )
        self.of, self.how, self.plus, self.null = of, how, 0, -1


class UVarintLenField(_Computed, UVarintField):
    """An unsigned-varint length (``how="length"``) or count of field ``of``, computed
    as that number + ``plus``, or ``null`` for a null target."""

    def __init__(
        self, name: str, of: str, how: str = "length", *, plus: int = 1, null: int = 0
    ) -> None:
        super().__init__(name, None)
        self.of, self.how, self.plus, self.null = of, how, plus, null
        self.length_of = of if how == "length" else None
        self.count_of = of if how == "count" else None


def _wire_number(pkt: Packet, name: str, compact: bool) -> int:
    """The length or count dissected into ``name``; negative means null."""
    n = int(pkt.getfieldval(name) or 0)
    return n - 1 if compact else n


class SizedField(sf.StrLenField):
    """The bytes of a string or bytes field, as many as its length field ``len_name``
    says (None when that says null)."""

    __slots__ = ("compact", "len_name")

    def __init__(self, name: str, default: bytes | None, len_name: str, compact: bool) -> None:
        super().__init__(name, cast(Any, default), max_length=64)
        self.len_name, self.compact = len_name, compact

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, bytes | None]:  # type: ignore[override]
        n = _wire_number(pkt, self.len_name, self.compact)
        return (s, None) if n < 0 else (s[n:], s[:n])


class ListField(sf.PacketListField):
    """The elements of an array, as many as its count field ``count_name`` says
    (:data:`NULL` when that says null)."""

    __slots__ = ("compact", "count_name")

    def __init__(self, name: str, default: list[Any], cls: Any, count_name: str, compact: bool):
        super().__init__(
            name,
            default,
            cls,
            count_from=lambda pkt: max(0, _wire_number(pkt, count_name, compact)),
            max_count=1 << 20,
        )
        self.count_name, self.compact = count_name, compact

    def any2i(self, pkt: Packet | None, x: Any) -> Any:
        return NullList() if _is_null(x) else super().any2i(pkt, x)

    def do_copy(self, x: Any) -> Any:
        return NullList() if isinstance(x, NullList) else super().do_copy(x)

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, Any]:
        if _wire_number(pkt, self.count_name, self.compact) < 0:
            return s, NullList()
        return super().getfield(pkt, s)


class StructField(sf.PacketField):
    """A struct; with ``presence`` (a nullable struct) absent when that byte is < 0."""

    __slots__ = ("presence",)

    def __init__(self, name: str, default: Any, cls: Any, presence: str | None) -> None:
        super().__init__(name, default, cls)
        self.presence = presence

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, Any]:
        if self.presence is not None and int(pkt.getfieldval(self.presence) or 0) < 0:
            return s, None
        return super().getfield(pkt, s)


class _Float64(sf.IEEEDoubleField):
    def randval(self) -> VolatileValue[Any]:
        return RandFloat(-(10**300), 10**300)


class TagValueField(sf.PacketLenField):
    """A tagged field's value: a packet of the class its struct declares for the tag,
    ``Raw`` for a tag it does not know."""

    def m2i(self, pkt: Packet | None, m: bytes) -> Packet:
        cls = type(pkt).TAGS.get(int(pkt.getfieldval("tag") or 0)) if pkt else None
        return (cls or Raw)(m)


_FIXED: dict[str, Callable[[str, Any], sf.Field[Any, Any]]] = {
    "b": sf.SignedByteField,
    "B": sf.ByteField,
    "h": sf.SignedShortField,
    "H": sf.ShortField,
    "i": sf.SignedIntField,
    "I": sf.IntField,
    "q": sf.SignedLongField,
    "Q": sf.LongField,
    "d": _Float64,
}
"""The scapy field of each fixed-width struct format (all big-endian)."""


# ---------------------------------------------------------------------- classes


class _Part(Packet):
    """A struct, array item or tagged value inside a message: the bytes after it are
    not its payload but the rest of the enclosing message."""

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class TaggedField(_Part):
    """One entry of a tagged-field section: ``tag``, ``value_len``, ``value``."""

    TAGS: ClassVar[dict[int, type[Packet]]] = {}
    fields_desc: ClassVar[list[Any]] = [
        UVarintField("tag", 0),
        UVarintLenField("value_len", "value", plus=0),
        TagValueField("value", cast(Any, None), Raw, length_from=lambda pkt: pkt.value_len),
    ]


_CLASSES: dict[tuple[Any, ...], tuple[Any, type[Packet]]] = {}
_LOCK = threading.RLock()


def _cached(key: tuple[Any, ...], owner: Any, build: Callable[[], type[Packet]]) -> type[Packet]:
    with _LOCK:
        hit = _CLASSES.get(key)
        if hit is None:
            hit = _CLASSES[key] = (owner, build())
        return hit[1]


def _new(name: str, base: type[Packet], fields: list[Any], **extra: Any) -> type[Packet]:
    names = [f.name for f in fields]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"{name}: scapy field names used twice: {', '.join(dupes)}")
    return type(name, (base,), {"name": name, "fields_desc": fields, **extra})


def layer(message: Message, version: int) -> type[Packet]:
    """The Packet class of ``message`` at ``version`` (``ProduceRequest_v9``)."""
    message.check_version(version)
    flexible = message.is_flexible(version)
    key = ("message", id(message), version)
    name = f"{message.name}_v{version}"
    return _cached(
        key, message, lambda: _new(name, Packet, _struct_fields(message.body, version, flexible))
    )


def struct_layer(struct: Struct, version: int, flexible: bool) -> type[Packet]:
    """The Packet class of a struct nested in a message (``TopicProduceData_v9``)."""
    name = f"{struct.name}_v{version}"
    key = ("struct", id(struct), version, flexible)
    return _cached(
        key, struct, lambda: _new(name, _Part, _struct_fields(struct, version, flexible))
    )


def _item_layer(element: Type, version: int, flexible: bool) -> type[Packet]:
    if isinstance(element, Struct):
        return struct_layer(element, version, flexible)
    fl = Field("value", element, nullable=ALL_VERSIONS)
    name = f"{element.name.replace('[]', 'array_')}_item_v{version}"
    key = ("item", id(element), version, flexible)
    return _cached(key, element, lambda: _new(name, _Part, _fields(fl, version, flexible)))


def _holder(struct: Struct, fl: Field, version: int, flexible: bool) -> type[Packet]:
    name = f"{struct.name}_v{version}_{fl.name}"
    key = ("tagged", id(fl), version, flexible)
    return _cached(key, fl, lambda: _new(name, _Part, _fields(fl, version, flexible)))


def _fx(fl: Field, version: int, flexible: bool) -> bool:
    return flexible if fl.flexible is None else version in fl.flexible


def _struct_fields(struct: Struct, version: int, flexible: bool) -> list[Any]:
    out: list[Any] = []
    for fl in struct.fields:
        if version in fl.versions and not (flexible and version in fl.tagged):
            out += _fields(fl, version, _fx(fl, version, flexible))
    if flexible:
        tag_cls = _tag_layer(struct, version)
        out.append(UVarintLenField(TAGGED_COUNT, TAGGED, "count", plus=0))
        out.append(ListField(TAGGED, [], tag_cls, TAGGED_COUNT, compact=False))
    return out


def _tag_layer(struct: Struct, version: int) -> type[Packet]:
    """The :class:`TaggedField` class of a flexible struct: its ``TAGS`` give the class
    of each tag's value."""

    def build() -> type[Packet]:
        tags = {
            fl.tag: _holder(struct, fl, version, _fx(fl, version, True))
            for fl in struct.fields
            if fl.tag is not None and version in fl.versions and version in fl.tagged
        }
        return type(name, (TaggedField,), {"name": name, "TAGS": tags})

    name = f"{struct.name}_v{version}_tag"
    return _cached(("tags", id(struct), version), struct, build)


def _fields(fl: Field, version: int, flexible: bool) -> list[Any]:
    """The scapy fields of one schema field: its length, count or presence first."""
    typ, name = fl.type, scapy_name(fl.name)
    nullable = version in fl.nullable
    default = _to_scapy(typ, fl.default_at(version), version, flexible, nullable)
    if isinstance(typ, Fixed):
        return [_FIXED[typ.struct.format[-1]](name, default)]
    if isinstance(typ, Bool):
        return [sf.ByteField(name, default)]
    if isinstance(typ, Uuid):
        return [sf.StrFixedLenField(name, default, 16)]
    if isinstance(typ, Varint):
        return [(ZigZagField if typ.signed else UVarintField)(name, default, typ.bits)]
    if isinstance(typ, String | Bytes):
        lname = scapy_name(f"{fl.name}_len")
        return [
            UVarintLenField(lname, name) if flexible else LenField(lname, name, typ.classic.format),
            SizedField(name, default, lname, flexible),
        ]
    if isinstance(typ, Array):
        cname = scapy_name(f"{fl.name}_count")
        cls = _item_layer(typ.element, version, flexible)
        return [
            UVarintLenField(cname, name, "count")
            if flexible
            else LenField(cname, name, ">i", "count"),
            ListField(name, default, cls, cname, flexible),
        ]
    if isinstance(typ, Struct):
        cls = struct_layer(typ, version, flexible)
        if not nullable:
            return [StructField(name, default, cls, None)]
        pname = scapy_name(f"{fl.name}_present")
        return [LenField(pname, name, "b", "presence"), StructField(name, default, cls, pname)]
    raise TypeError(f"no scapy field for schema type {typ.name!r} ({type(typ).__name__})")


# ----------------------------------------------------------------------- values


def packet(message: Message, version: int, value: Mapping[str, Any]) -> Packet:
    """A ``layer(message, version)`` packet carrying ``value`` (missing fields take their
    defaults, as in :meth:`~.schema.Message.encode`); every length and count is None."""
    cls = layer(message, version)
    return cls(**_struct_values(message.body, value, version, message.is_flexible(version)))


def _struct_values(struct: Struct, value: Any, version: int, flexible: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tagged: list[tuple[int, Packet]] = []
    value = {} if value is None else value  # as Struct.encode: a null element is {}
    for fl in struct.fields:
        if version not in fl.versions:
            continue
        v = value.get(fl.name, fl.default_at(version)) if isinstance(value, Mapping) else None
        fx = _fx(fl, version, flexible)
        converted = _to_scapy(fl.type, v, version, fx, version in fl.nullable)
        if flexible and version in fl.tagged:
            assert fl.tag is not None
            if v != fl.default_at(version):
                holder = _holder(struct, fl, version, fx)
                tagged.append((fl.tag, holder(**{scapy_name(fl.name): converted})))
            continue
        out[scapy_name(fl.name)] = converted
    if flexible:
        unknown = (value.get(UNKNOWN_TAGS) or {}) if isinstance(value, Mapping) else {}
        tagged += [(int(t), Raw(bytes(b))) for t, b in unknown.items()]
        tag_cls = _tag_layer(struct, version)
        out[TAGGED] = [tag_cls(tag=t, value=p) for t, p in sorted(tagged, key=lambda x: x[0])]
    return out


def _to_scapy(typ: Type, v: Any, version: int, flexible: bool, nullable: bool) -> Any:
    """A schema value of ``typ`` as the scapy field (or packet) takes it."""
    if isinstance(typ, Bool):
        return 1 if v else 0
    if isinstance(typ, Uuid):
        return uuid.UUID(str(v)).bytes
    if isinstance(typ, String):
        return None if v is None else str(v).encode("utf-8")
    if isinstance(typ, Bytes):
        return None if v is None else bytes(v)
    if isinstance(typ, Array):
        if v is None:
            return NullList()
        cls = _item_layer(typ.element, version, flexible)
        if isinstance(typ.element, Struct):
            return [cls(**_struct_values(typ.element, x, version, flexible)) for x in v]
        return [cls(value=_to_scapy(typ.element, x, version, flexible, True)) for x in v]
    if isinstance(typ, Struct):
        if v is None and nullable:
            return None
        return struct_layer(typ, version, flexible)(**_struct_values(typ, v, version, flexible))
    return v
