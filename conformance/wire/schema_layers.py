"""Scapy layers derived from the message declarations of :mod:`.schema`, for the
structure-aware fuzzer.

``layer(message, version)`` is a Packet class (``ProduceRequest_v9``) whose fields are
the message's at that version, in wire order; ``packet(message, version, value)``
builds one from a value as :meth:`~.schema.Message.encode` takes it, and
``bytes(packet(m, v, value)) == m.encode(value, v)``.  ``layer(m, v)(data)`` dissects
an encoding back into fields.  Everything follows the message's
:class:`~.encoding.Encoding` (byte order, length prefixes, null, flexible versions).
What each schema field becomes (the scapy fields are in :mod:`.schema_layer_fields`):

* fixed-width integers: scapy's field of that size and sign in the encoding's byte
  order; ``float64``/``float32``: an IEEE double/single; ``bool``: a byte (0 or 1);
  ``uuid``: 16 raw bytes;
  ``varint`` and ``varlong``: :class:`ZigZagField`; ``uvarint``: :class:`UVarintField`;
* ``string``/``bytes`` field ``x``: a length field ``x_len`` and then ``x``, the bytes
  (UTF-8 for a string; ``None`` is null).  The length is the encoding's prefix (Kafka:
  int16 for strings, int32 for bytes, -1 for null), or in a flexible version an unsigned
  varint holding the length + 1, 0 for null;
* ``uint128`` (:class:`~.schema_types.Wide`): :class:`WideField`, its bytes in the
  encoding's order;
* a :class:`~.schema_fields.Repeated` array ``x``: ``x`` alone, a list of packets as
  below, with no count: dissecting takes items while bytes are left;
* array ``x``: a count field ``x_count`` (the encoding's prefix; or uvarint count + 1, 0
  for null) and ``x``, a list of packets: the element struct's class, or for other
  element types an item class with one field ``value``.  A null array is
  :data:`NULL` (an empty list that writes the null count; ``None`` assigned turns into
  it, so that ``fuzz`` can walk every list);
* struct ``x``: a packet of the struct's own class; if the version lets it be null, a
  presence byte ``x_present`` (1, or -1 for null) goes first;
* sized value ``x``: a size field ``x_size``, then the value's own field ``x`` (or, when
  the value takes several scapy fields, a packet ``x`` holding them as ``value``);
* union ``x``: its kind ``x_kind``, then ``x``, a packet of the kind's own class (its
  ``KIND``), holding the variant as ``value`` (``Raw`` when dissecting a kind the union
  does not have).  The kind is computed from that class, like a length: put another
  variant's packet in ``x`` and the kind follows, set ``x_kind`` and it lies;
* linked fields (:mod:`.schema_linked`): a ``SizedBy`` field ``x`` is its bytes alone,
  the sibling length it names a :class:`LenField` of it; a ``CountedBy`` array is its
  list alone, the sibling count a :class:`LenField` of it; a ``Derived`` (counted) array
  is a :class:`DerivedListField`, computed from the bytes its sibling's items build;
* an ``inline`` struct's fields are its parent's, a sized one's preceded by its
  :class:`GroupSizeField` ``x_size`` (the bytes of those fields);
* a struct in a flexible version ends in ``tagged_fields_count`` (uvarint) and
  ``tagged_fields``, packets of ``tag`` (uvarint), ``value_len`` (uvarint) and
  ``value``: a packet of the tagged field's own fields (``Raw`` for a tag the struct
  does not declare, as ``"_unknown_tags"`` holds them).

Every length, count, size, kind and presence field is ``None`` by default and computed when
the packet is built, so framing stays valid; set one and exactly that (possibly lying)
value goes on the wire while the data stays as it is (an unsigned varint given a
negative value writes its 32-bit two's complement, as Java does).

Names are the schema's snake_case names, except a name scapy's ``Packet`` already uses
(``name``, ``payload``, ``fields``, ``time``, ``underlayer``, ``original``, ... any
attribute of ``Packet``), which gets a trailing underscore (``name_``): see
:func:`scapy_name`.  Length, count and presence fields are named after the schema name
(``name_len``).  Classes are built on first use and cached per message or struct,
encoding, version and flexibility.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, cast

from scapy import fields as sf
from scapy.packet import Packet, Raw

from conformance.wire.encoding import FORMATS, Prefix
from conformance.wire.schema import (
    ALL_VERSIONS,
    KIND,
    UNKNOWN_TAGS,
    VALUE,
    Array,
    Bool,
    Bytes,
    Ctx,
    Field,
    Fixed,
    Message,
    Repeated,
    Sized,
    String,
    Struct,
    Type,
    Union,
    Uuid,
    Varint,
    Wide,
)
from conformance.wire.schema_fields import inlined_struct
from conformance.wire.schema_layer_fields import (
    FIXED,
    NULL,
    DerivedListField,
    GroupSizeField,
    LenField,
    ListField,
    NullList,
    RestListField,
    SizedField,
    StructField,
    TagValueField,
    UnionField,
    UVarintField,
    UVarintLenField,
    WideField,
    ZigZagField,
)
from conformance.wire.schema_linked import CountedBy, Derived, SizedBy

__all__ = ["NULL", "NullList", "layer", "packet", "scapy_name", "struct_layer"]

TAGGED_COUNT = "tagged_fields_count"
TAGGED = "tagged_fields"


def scapy_name(field_name: str) -> str:
    """The scapy field name of a schema field: its own, with ``_`` appended when scapy's
    ``Packet`` already has an attribute of that name (``name`` -> ``name_``)."""
    return field_name + "_" if hasattr(Packet, field_name) else field_name


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


def nested_packets(pkt: Packet) -> list[Packet]:
    """``pkt`` and every packet nested in its fields (structs, unions, list items)."""
    out = [pkt]
    for value in pkt.fields.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, Packet):
                out += nested_packets(item)
    return out


def layer(message: Message, version: int) -> type[Packet]:
    """The Packet class of ``message`` at ``version`` (``ProduceRequest_v9``)."""
    message.check_version(version)
    ctx = message.ctx(version)
    key = ("message", id(message), version)
    name = f"{message.name}_v{version}"
    return _cached(key, message, lambda: _new(name, Packet, _struct_fields(message.body, ctx)))


def struct_layer(struct: Struct, version: int, ctx: Ctx) -> type[Packet]:
    """The Packet class of a struct nested in a message (``TopicProduceData_v9``) in the
    context it is in (``message.ctx(version)``: the encoding, version and flexibility)."""
    name = f"{struct.name}_v{version}"
    return _cached(
        ("struct", id(struct), ctx), struct, lambda: _new(name, _Part, _struct_fields(struct, ctx))
    )


def _holder(
    name: str, key: tuple[Any, ...], owner: Any, fl: Field, ctx: Ctx, **extra: Any
) -> type[Packet]:
    """A packet class holding one schema field (an array item, a tagged value, ...)."""
    return _cached((*key, ctx), owner, lambda: _new(name, _Part, _fields(fl, ctx), **extra))


def _item_layer(element: Type, ctx: Ctx) -> type[Packet]:
    if isinstance(element, Struct):
        return struct_layer(element, ctx.version, ctx)
    fl = Field("value", element, nullable=ALL_VERSIONS)
    name = f"{element.name.replace('[]', 'array_')}_item_v{ctx.version}"
    return _holder(name, ("item", id(element)), element, fl, ctx)


def _tagged_holder(struct: Struct, fl: Field, ctx: Ctx) -> type[Packet]:
    name = f"{struct.name}_v{ctx.version}_{fl.name}"
    return _holder(name, ("tagged", id(fl)), fl, fl, ctx)


def _variant_layer(union: Union, kind: Any, ctx: Ctx) -> type[Packet]:
    fl = Field(VALUE, union.variants[kind])
    name = f"{union.name}_{kind}_v{ctx.version}"
    return _holder(name, ("variant", id(union), kind), union, fl, ctx, KIND=kind)


def _sized_holder(typ: Sized, ctx: Ctx) -> type[Packet] | None:
    """The packet class a sized value needs when its value takes several scapy fields;
    None when it takes one (it then goes in line)."""
    fl = Field(VALUE, typ.inner)
    if len(_fields(fl, ctx)) == 1:
        return None
    return _holder(f"{typ.name}_v{ctx.version}", ("sized", id(typ)), typ, fl, ctx)


def _struct_fields(struct: Struct, ctx: Ctx) -> list[Any]:
    out: list[Any] = []
    version, flexible = ctx.version, ctx.flexible
    for fl in struct.fields:
        if version in fl.versions and not (flexible and version in fl.tagged):
            out += _inline_fields(fl, fl.ctx_in(ctx)) if fl.inline else _fields(fl, fl.ctx_in(ctx))
    for fl in struct.linked:  # the sibling a linked field names is computed from it
        if version in fl.versions and isinstance(fl.type, SizedBy | CountedBy):
            how = "length" if isinstance(fl.type, SizedBy) else "count"
            link = scapy_name(fl.type.earlier()[0])
            at = next(i for i, x in enumerate(out) if x.name == link)
            out[at] = LenField(link, scapy_name(fl.name), out[at].fmt, how)
    if flexible:
        tag_cls = _tag_layer(struct, ctx)
        out.append(UVarintLenField(TAGGED_COUNT, TAGGED, "count", plus=0))
        out.append(ListField(TAGGED, [], tag_cls, TAGGED_COUNT, compact=False))
    return out


def _inline_fields(fl: Field, ctx: Ctx) -> list[Any]:
    """An inline struct's fields, in its parent's packet; a sized one's size first."""
    inner = inlined_struct(fl)
    assert inner is not None
    fields = _struct_fields(inner, ctx)
    if not isinstance(fl.type, Sized):
        return fields
    prefix = fl.type.prefix
    if prefix == "uvarint":
        raise TypeError(f"{fl.name}: an inline struct's size must be fixed-width")
    of = tuple(x.name for x in fields)
    size = scapy_name(f"{fl.name}_size")
    return [GroupSizeField(size, of, ctx.encoding.order + FORMATS[prefix]), *fields]


def _derived_field(fl: Field, typ: Derived, ctx: Ctx) -> Any:
    """A derived array, computed from the sizes its sibling's items build."""
    inner = typ.inner
    if not isinstance(inner, CountedBy):
        raise TypeError(f"{fl.name}: a derived field in a layer must be a counted array")
    of = scapy_name(typ.of)

    def compute(pkt: Packet) -> list[Any]:
        sizes = [len(bytes(p)) for p in pkt.getfieldval(of) or ()]
        return cast(list[Any], _to_scapy(inner, typ.compute(sizes), ctx, False))

    cls = _item_layer(inner.element, ctx)
    return DerivedListField(scapy_name(fl.name), cls, scapy_name(inner.count), compute)


def _tag_layer(struct: Struct, ctx: Ctx) -> type[Packet]:
    """The :class:`TaggedField` class of a flexible struct: its ``TAGS`` give the class
    of each tag's value."""
    version = ctx.version

    def build() -> type[Packet]:
        tags = {
            fl.tag: _tagged_holder(struct, fl, fl.ctx_in(ctx))
            for fl in struct.fields
            if fl.tag is not None and version in fl.versions and version in fl.tagged
        }
        return type(name, (TaggedField,), {"name": name, "TAGS": tags})

    name = f"{struct.name}_v{version}_tag"
    return _cached(("tags", id(struct), ctx), struct, build)


def _prefix_field(name: str, of: str, prefix: Prefix, ctx: Ctx, how: str) -> Any:
    """The length, count or size field of ``of``: compact in a flexible version."""
    if ctx.flexible and how != "size":
        return UVarintLenField(name, of, how)
    if prefix == "uvarint":
        return UVarintLenField(name, of, how, plus=0)
    return LenField(name, of, ctx.encoding.order + FORMATS[prefix], how)


def _kind_field(name: str, of: str, tag: Type, ctx: Ctx) -> Any:
    """A union's kind field, computed from the class of its value's packet."""
    if isinstance(tag, Fixed) and tag.fmt in "bBhHiIqQ":
        return LenField(name, of, ctx.encoding.order + tag.fmt, "kind")
    if isinstance(tag, Varint) and not tag.signed:
        return UVarintLenField(name, of, "kind", plus=0)
    raise TypeError(f"a union's kind must be an integer, not {tag.name}")


def _fields(fl: Field, ctx: Ctx) -> list[Any]:
    """The scapy fields of one schema field: its length, count or presence first."""
    typ, name, version = fl.type, scapy_name(fl.name), ctx.version
    nullable = version in fl.nullable
    default = _to_scapy(typ, fl.default_at(version), ctx, nullable)
    if isinstance(typ, Fixed):
        return [FIXED[ctx.encoding.byte_order, typ.fmt](name, default)]
    if isinstance(typ, Wide):
        return [WideField(name, default, typ.size, ctx.encoding.byte_order, typ.signed)]
    if isinstance(typ, Bool):
        return [sf.ByteField(name, default)]
    if isinstance(typ, Uuid):
        return [sf.StrFixedLenField(name, default, 16)]
    if isinstance(typ, Varint):
        return [(ZigZagField if typ.signed else UVarintField)(name, default, typ.bits)]
    if isinstance(typ, String | Bytes):
        lname = scapy_name(f"{fl.name}_len")
        prefix = typ.prefix_of(ctx.encoding)
        return [
            _prefix_field(lname, name, prefix, ctx, "length"),
            SizedField(name, default, lname, ctx.flexible),
        ]
    if isinstance(typ, SizedBy):
        return [SizedField(name, default, scapy_name(typ.length), False)]
    if isinstance(typ, Derived):
        return [_derived_field(fl, typ, ctx)]
    if isinstance(typ, CountedBy):
        cls = _item_layer(typ.element, ctx)
        return [ListField(name, default, cls, scapy_name(typ.count), False)]
    if isinstance(typ, Repeated):
        return [RestListField(name, default, _item_layer(typ.element, ctx))]
    if isinstance(typ, Array):
        cname = scapy_name(f"{fl.name}_count")
        cls = _item_layer(typ.element, ctx)
        return [
            _prefix_field(cname, name, ctx.encoding.array_count, ctx, "count"),
            ListField(name, default, cls, cname, ctx.flexible),
        ]
    if isinstance(typ, Struct):
        cls = struct_layer(typ, version, ctx)
        if not nullable:
            return [StructField(name, default, cls, None)]
        pname = scapy_name(f"{fl.name}_present")
        return [LenField(pname, name, "b", "presence"), StructField(name, default, cls, pname)]
    if isinstance(typ, Sized):
        size = _prefix_field(scapy_name(f"{fl.name}_size"), name, typ.prefix, ctx, "size")
        holder = _sized_holder(typ, ctx)
        if holder is None:
            return [size, *_fields(Field(fl.name, typ.inner), ctx)]
        sname = size.name
        return [size, sf.PacketLenField(name, default, holder, lambda p: p.getfieldval(sname))]
    if isinstance(typ, Union):
        kname = scapy_name(f"{fl.name}_{KIND}")
        kinds = {k: _variant_layer(typ, k, ctx) for k in typ.variants}
        return [_kind_field(kname, name, typ.tag, ctx), UnionField(name, default, kinds, kname)]
    raise TypeError(f"no scapy field for schema type {typ.name!r} ({type(typ).__name__})")


# ----------------------------------------------------------------------- values


def packet(message: Message, version: int, value: Mapping[str, Any]) -> Packet:
    """A ``layer(message, version)`` packet carrying ``value`` (missing fields take their
    defaults, as in :meth:`~.schema.Message.encode`); every length and count is None."""
    cls = layer(message, version)
    return cls(**_struct_values(message.body, value, message.ctx(version)))


def _struct_values(
    struct: Struct, value: Any, ctx: Ctx, hidden: frozenset[str] = frozenset()
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tagged: list[tuple[int, Packet]] = []
    version, flexible = ctx.version, ctx.flexible
    value = {} if value is None else value  # as Struct.encode: a null element is {}
    hidden = hidden | struct.hidden  # computed: left None
    for fl in struct.fields:
        if version not in fl.versions or fl.name in hidden:
            continue
        inner = inlined_struct(fl)
        if inner is not None:
            out.update(_struct_values(inner, value, fl.ctx_in(ctx), hidden))
            continue
        v = value.get(fl.name, fl.default_at(version)) if isinstance(value, Mapping) else None
        fx = fl.ctx_in(ctx)
        converted = _values(fl.name, fl.type, v, fx, version in fl.nullable)
        if flexible and version in fl.tagged:
            assert fl.tag is not None
            if v != fl.default_at(version):
                holder = _tagged_holder(struct, fl, fx)
                tagged.append((fl.tag, holder(**converted)))
            continue
        out.update(converted)
    if flexible:
        unknown = (value.get(UNKNOWN_TAGS) or {}) if isinstance(value, Mapping) else {}
        tagged += [(int(t), Raw(bytes(b))) for t, b in unknown.items()]
        tag_cls = _tag_layer(struct, ctx)
        out[TAGGED] = [tag_cls(tag=t, value=p) for t, p in sorted(tagged, key=lambda x: x[0])]
    return out


def _values(name: str, typ: Type, v: Any, ctx: Ctx, nullable: bool) -> dict[str, Any]:
    """The scapy field values of schema field ``name`` (its length, count, size or kind
    is left None: computed)."""
    return {scapy_name(name): _to_scapy(typ, v, ctx, nullable)}


def _to_scapy(typ: Type, v: Any, ctx: Ctx, nullable: bool) -> Any:
    """A schema value of ``typ`` as the scapy field (or packet) takes it."""
    if isinstance(typ, Bool):
        return 1 if v else 0
    if isinstance(typ, Uuid):
        return uuid.UUID(str(v)).bytes
    if isinstance(typ, String):
        return None if v is None else str(v).encode("utf-8")
    if isinstance(typ, Bytes):
        return None if v is None else bytes(v)
    if isinstance(typ, SizedBy):
        return _to_scapy(typ.kind, v, ctx, False)
    if isinstance(typ, Array):
        if v is None:
            return [] if isinstance(typ, Repeated) else NullList()
        cls = _item_layer(typ.element, ctx)
        if isinstance(typ.element, Struct):
            return [cls(**_struct_values(typ.element, x, ctx)) for x in v]
        return [cls(**_values(VALUE, typ.element, x, ctx, True)) for x in v]
    if isinstance(typ, Struct):
        if v is None and nullable:
            return None
        return struct_layer(typ, ctx.version, ctx)(**_struct_values(typ, v, ctx))
    if isinstance(typ, Sized):
        holder = _sized_holder(typ, ctx)
        if holder is None:
            return _to_scapy(typ.inner, v, ctx, False)
        return holder(**_values(VALUE, typ.inner, v, ctx, False))
    if isinstance(typ, Union):
        v = typ.default(False) if v is None else v
        cls = _variant_layer(typ, v[KIND], ctx)
        return cls(**_values(VALUE, typ.variants[v[KIND]], v[VALUE], ctx, False))
    return v
