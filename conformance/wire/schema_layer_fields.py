"""The scapy fields that :mod:`.schema_layers` builds its packet classes from.

Rules they share:

* A length, count, size or presence field is ``None`` by default and then *computed*
  from the field it describes (``of``) when the packet is built; any other value is
  written as is, so a fuzzer can make it lie while the data stays as it was.  ``how``
  says what it describes: ``length`` (the bytes of a string or bytes field), ``count``
  (the items of a list), ``size`` (the bytes any field writes: a sized value), ``kind``
  (a union's: the ``KIND`` of its value's packet class) or ``presence`` (1, or -1 for a
  null struct).  A null target is written as ``null``.
* Fixed-width ones have a :mod:`struct` format with its byte order (``"<H"``); varint
  ones use :mod:`.varint` (a negative value is written as its two's complement, as a
  lying Java peer would).  ``plus`` is added to a varint length: 1 in Kafka's compact
  form, where 0 is null.
* Dissecting is forgiving: a truncated varint reads as what its bytes hold so far, a
  length or count is obeyed as far as the bytes go, and a negative one means null.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from scapy import fields as sf
from scapy.packet import Packet, Raw
from scapy.volatile import RandFloat, RandNum, VolatileValue

from conformance.wire.varint import read_uvarint, unzigzag, uvarint_wrapped, zigzag

_MOST = 10
"""The most bytes a dissected varint takes (a 64-bit one)."""


def read_lenient(s: bytes) -> tuple[int, int]:
    """The unsigned varint at the start of ``s`` and the bytes it takes; one cut short
    (or longer than 64 bits allow) reads as what its first bytes hold."""
    used = next((i + 1 for i, b in enumerate(s[:_MOST]) if not b & 0x80), len(s[:_MOST]))
    if not used:
        return 0, 0
    closed = s[: used - 1] + bytes([s[used - 1] & 0x7F])  # the last byte read ends it
    return read_uvarint(closed, 0, 7 * used)[0], used


class UVarintField(sf.Field[int, int]):
    """An unsigned varint of ``bits`` bits (:mod:`.varint`)."""

    __slots__ = ("bits",)

    def __init__(self, name: str, default: int | None, bits: int = 32) -> None:
        super().__init__(name, default, fmt="B")
        self.bits = bits

    def addfield(self, pkt: Packet, s: bytes, val: int | None) -> bytes:
        return s + uvarint_wrapped(self.i2m(pkt, val), self.bits)

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, int]:
        value, used = read_lenient(s)
        return s[used:], self.m2i(pkt, value)

    def i2len(self, pkt: Packet, x: Any) -> int:
        return len(uvarint_wrapped(self.i2m(pkt, x), self.bits))

    def randval(self) -> VolatileValue[Any]:
        return RandNum(0, (1 << self.bits) - 1)


class ZigZagField(UVarintField):
    """A zig-zag signed varint (``varint``: 32 bits, ``varlong``: 64)."""

    def i2m(self, pkt: Packet | None, x: int | None) -> int:
        return zigzag(int(x or 0), self.bits)

    def m2i(self, pkt: Packet | None, x: int) -> int:
        return unzigzag(x)

    def randval(self) -> VolatileValue[Any]:
        return RandNum(-(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1)


class NullList(list[Any]):
    """A null array: empty, and written as the null count."""

    def copy(self) -> NullList:
        return NullList()

    def __deepcopy__(self, memo: Any) -> NullList:
        return NullList()


NULL = NullList()


def is_null(value: Any) -> bool:
    return value is None or isinstance(value, NullList)


def _computed(fld: Any, pkt: Packet) -> int:
    """What a length, count, size, kind or presence field ``fld`` says of ``fld.of``."""
    target, val = pkt.getfield_and_val(fld.of)
    if fld.how == "kind":
        return int(getattr(val, "KIND", 0))
    if fld.how == "presence":
        return -1 if val is None else 1
    if is_null(val):
        return int(fld.null)
    if fld.how == "count":
        n = len(val)
    elif fld.how == "size":
        n = len(target.addfield(pkt, b"", val))
    else:
        n = len(target.i2m(pkt, val))
    return n + int(fld.plus)


class _Computed:
    """None is computed (:func:`_computed`), anything else is written as is."""

    def i2m(self, pkt: Packet | None, x: int | None) -> int:
        return _computed(self, pkt) if x is None and pkt is not None else int(x or 0)


class LenField(_Computed, sf.FieldLenField):
    """A fixed-width (``fmt``, with its byte order) length, count, size, kind or
    presence of field ``of``; -1 for a null target."""

    def __init__(self, name: str, of: str, fmt: str, how: str = "length") -> None:
        count = how == "count"
        super().__init__(
            name, None, fmt=fmt, length_of=None if count else of, count_of=of if count else None
        )
        self.of, self.how, self.plus, self.null = of, how, 0, -1


class UVarintLenField(_Computed, UVarintField):
    """An unsigned-varint length, count, size or kind of field ``of``, computed as that
    number + ``plus``, or ``null`` for a null target."""

    def __init__(
        self, name: str, of: str, how: str = "length", *, plus: int = 1, null: int = 0
    ) -> None:
        super().__init__(name, None)
        self.of, self.how, self.plus, self.null = of, how, plus, null
        self.length_of = of if how != "count" else None
        self.count_of = of if how == "count" else None


def wire_number(pkt: Packet, name: str, compact: bool) -> int:
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
        n = wire_number(pkt, self.len_name, self.compact)
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
            count_from=lambda pkt: max(0, wire_number(pkt, count_name, compact)),
            max_count=1 << 20,
        )
        self.count_name, self.compact = count_name, compact

    def any2i(self, pkt: Packet | None, x: Any) -> Any:
        return NullList() if is_null(x) else super().any2i(pkt, x)

    def do_copy(self, x: Any) -> Any:
        return NullList() if isinstance(x, NullList) else super().do_copy(x)

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, Any]:
        if wire_number(pkt, self.count_name, self.compact) < 0:
            return s, NullList()
        return super().getfield(pkt, s)


class RestListField(sf.PacketListField):
    """The items of a :class:`~.schema_fields.Repeated` array: no count, as many as the
    bytes left hold."""

    def __init__(self, name: str, default: list[Any], cls: Any) -> None:
        super().__init__(name, default, cls, max_count=1 << 20)

    def any2i(self, pkt: Packet | None, x: Any) -> Any:
        return [] if x is None else super().any2i(pkt, x)


class WideField(sf.Field[int, bytes]):
    """An integer of ``size`` bytes, wider than :mod:`struct` packs (``uint128``), in
    ``order`` (``big`` or ``little``)."""

    __slots__ = ("order", "signed", "size")

    def __init__(self, name: str, default: Any, size: int, order: str, signed: bool) -> None:
        super().__init__(name, default, f"{size}s")
        self.size, self.order, self.signed = size, order, signed

    def i2m(self, pkt: Packet | None, x: int | None) -> bytes:
        value = int(x or 0)
        if not self.signed:
            value &= (1 << (8 * self.size)) - 1
        return value.to_bytes(self.size, cast(Any, self.order), signed=self.signed)

    def m2i(self, pkt: Packet | None, x: bytes) -> int:
        return int.from_bytes(x, cast(Any, self.order), signed=self.signed)

    def randval(self) -> VolatileValue[Any]:
        bits = 8 * self.size
        if self.signed:
            return RandNum(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        return RandNum(0, (1 << bits) - 1)


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


class UnionField(sf.PacketField):
    """A union's value: a packet of the class its kind field ``kind_name`` selects
    (``Raw`` for a kind the union does not have)."""

    __slots__ = ("kind_name", "kinds")

    def __init__(
        self, name: str, default: Any, kinds: dict[Any, type[Packet]], kind_name: str
    ) -> None:
        super().__init__(name, default, Raw)
        self.kinds, self.kind_name = kinds, kind_name

    def m2i(self, pkt: Packet | None, m: bytes) -> Packet:
        cls = self.kinds.get(pkt.getfieldval(self.kind_name)) if pkt is not None else None
        return (cls or Raw)(m)


class TagValueField(sf.PacketLenField):
    """A tagged field's value: a packet of the class its struct declares for the tag,
    ``Raw`` for a tag it does not know."""

    def m2i(self, pkt: Packet | None, m: bytes) -> Packet:
        cls = type(pkt).TAGS.get(int(pkt.getfieldval("tag") or 0)) if pkt else None
        return (cls or Raw)(m)


class _Float64(sf.Field[float, float]):
    """An IEEE double (``fmt`` ``d``) or single (``f``) in a byte order (``order`` ``>``
    or ``<``)."""

    def __init__(self, name: str, default: Any, order: str = ">", fmt: str = "d") -> None:
        super().__init__(name, default, order + fmt)

    def randval(self) -> VolatileValue[Any]:
        return RandFloat(-(10**300), 10**300)


def _le_double(name: str, default: Any) -> sf.Field[Any, Any]:
    return _Float64(name, default, "<")


def _be_single(name: str, default: Any) -> sf.Field[Any, Any]:
    return _Float64(name, default, ">", "f")


def _le_single(name: str, default: Any) -> sf.Field[Any, Any]:
    return _Float64(name, default, "<", "f")


FIXED: dict[tuple[str, str], Callable[[str, Any], sf.Field[Any, Any]]] = {
    ("big", "b"): sf.SignedByteField,
    ("big", "B"): sf.ByteField,
    ("big", "h"): sf.SignedShortField,
    ("big", "H"): sf.ShortField,
    ("big", "i"): sf.SignedIntField,
    ("big", "I"): sf.IntField,
    ("big", "q"): sf.SignedLongField,
    ("big", "Q"): sf.LongField,
    ("big", "d"): _Float64,
    ("big", "f"): _be_single,
    ("little", "b"): sf.SignedByteField,
    ("little", "B"): sf.ByteField,
    ("little", "h"): sf.LESignedShortField,
    ("little", "H"): sf.LEShortField,
    ("little", "i"): sf.LESignedIntField,
    ("little", "I"): sf.LEIntField,
    ("little", "q"): sf.LESignedLongField,
    ("little", "Q"): sf.LELongField,
    ("little", "d"): _le_double,
    ("little", "f"): _le_single,
}
"""The scapy field of each (byte order, fixed-width struct format)."""


class GroupSizeField(sf.Field[int, int]):
    """The size in bytes of the fields ``of`` (an inline sized struct's), computed when
    None, written as is otherwise; dissecting reads it and goes on with those fields."""

    __slots__ = ("of",)

    def __init__(self, name: str, of: tuple[str, ...], fmt: str) -> None:
        super().__init__(name, None, fmt)
        self.of = of

    def i2m(self, pkt: Packet | None, x: int | None) -> int:
        if x is not None or pkt is None:
            return int(x or 0)
        total = 0
        for name in self.of:
            fld, val = pkt.getfield_and_val(name)
            total += len(fld.addfield(pkt, b"", val))
        return total


class ComputedList(list[Any]):
    """A derived array left to be computed: empty (so that scapy can walk it)."""

    def copy(self) -> ComputedList:
        return ComputedList()

    def __deepcopy__(self, memo: Any) -> ComputedList:
        return ComputedList()


class DerivedListField(ListField):
    """An array computed by ``compute`` from the packet it is in while it is a
    :class:`ComputedList` (its default; ``None`` assigned turns into one), written as is
    otherwise (a derived field of :mod:`.schema_linked`)."""

    __slots__ = ("compute",)

    def __init__(
        self, name: str, cls: Any, count_name: str, compute: Callable[[Packet], list[Any]]
    ) -> None:
        super().__init__(name, ComputedList(), cls, count_name, False)
        self.compute = compute

    def any2i(self, pkt: Packet | None, x: Any) -> Any:
        return ComputedList() if x is None or isinstance(x, ComputedList) else super().any2i(pkt, x)

    def do_copy(self, x: Any) -> Any:
        return ComputedList() if isinstance(x, ComputedList) else super().do_copy(x)

    def addfield(self, pkt: Packet, s: bytes, val: Any) -> bytes:
        if val is None or isinstance(val, ComputedList):
            val = self.compute(pkt)
        return super().addfield(pkt, s, val)
