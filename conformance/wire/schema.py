"""Declarative binary message schemas: each message declared once, everything derived.

A :class:`Message` is a list of :class:`Field` s.  A field has a type, the versions it
exists in, the versions in which it may be null, and (for flexible versions) a tag and
the versions in which it travels as a tagged field.  From one declaration this module
encodes and decodes every version, and records the byte span of every field while
decoding (the frame annotator, :meth:`Message.annotate`: strict, up to the first fault,
or *tolerant*, a walk that never raises and follows malformed bytes as far as they go,
rules in :mod:`conformance.wire.schema_types`); strategies and fuzz layers are
derived elsewhere (:mod:`conformance.wire.schema_strategies`,
:mod:`conformance.wire.schema_layers`) from the same objects.

*How* a message is written is its protocol's :class:`~conformance.wire.encoding.Encoding`
(byte order, length prefixes, null, flexible versions), which every declaration names:
this module has no default protocol.  The types and their rules are in
:mod:`conformance.wire.schema_types` (re-exported here).  The rules of structs:

* A struct is its fields in order; an array is a count prefix, then its items; a
  :class:`Repeated` array has no count: its items run to the end of the data.
* In a version the message declares *flexible* (only in an encoding that has them),
  strings, bytes and arrays are compact (unsigned varint length + 1, 0 for null) and
  every struct ends in a tagged-field section.  A field may opt out of flexibility
  (``flexible="none"``: Kafka's request header client id).
* A tagged field is written only when its value differs from its default, in tag order,
  as ``uvarint tag, uvarint size, value``; tags a decoder does not know are kept under
  ``"_unknown_tags"`` and written back.
* A nullable struct is preceded by a presence byte (-1 null, 1 present).  In an encoding
  without null, no field may be declared nullable.

Decoded messages are plain dicts keyed by field name (lists of dicts for struct arrays);
encoding fills any missing field with its default.  Every decoder either returns a
message or raises :class:`~conformance.errors.ProtocolError`: a length is checked against
the bytes actually left before anything is allocated for it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.errors import ProtocolError, TrailingBytes
from conformance.plugin import FieldSpan
from conformance.wire.encoding import Encoding
from conformance.wire.schema_compound import (
    KIND,
    VALUE,
    Sized,
    Union,
)
from conformance.wire.schema_fields import (
    ALL_VERSIONS,
    NO_VERSIONS,
    UNKNOWN_TAGS,
    Array,
    Field,
    Repeated,
    Struct,
    Versions,
    f,
)
from conformance.wire.schema_types import (
    BOOL,
    BYTES,
    FLOAT32,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    INT128,
    STRING,
    UINT8,
    UINT16,
    UINT32,
    UINT64,
    UINT128,
    UUID,
    UVARINT,
    VARINT,
    VARLONG,
    Bool,
    Bytes,
    Ctx,
    Fixed,
    In,
    String,
    Type,
    Uuid,
    Varint,
    Wide,
)

__all__ = [
    "ALL_VERSIONS",
    "BOOL",
    "BYTES",
    "FLOAT32",
    "FLOAT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "INT128",
    "KIND",
    "NO_VERSIONS",
    "STRING",
    "UINT8",
    "UINT16",
    "UINT32",
    "UINT64",
    "UINT128",
    "UNKNOWN_TAGS",
    "UUID",
    "UVARINT",
    "VALUE",
    "VARINT",
    "VARLONG",
    "Array",
    "Bool",
    "Bytes",
    "Ctx",
    "Encoding",
    "Field",
    "Fixed",
    "Message",
    "Repeated",
    "Sized",
    "String",
    "Struct",
    "Type",
    "Union",
    "Uuid",
    "Varint",
    "Versions",
    "Wide",
    "array_of",
    "f",
    "message",
    "struct_of",
    "walk",
]

# ---------------------------------------------------------------------- messages


@dataclass(frozen=True)
class Message:
    """A top-level message: a struct with its own version range and flexible versions,
    written in its protocol's ``encoding``."""

    name: str
    versions: Versions
    flexible: Versions
    body: Struct
    encoding: Encoding = field(kw_only=True)
    doc: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.flexible != NO_VERSIONS and not self.encoding.flexible:
            raise ValueError(f"{self.name}: {self.encoding.name} has no flexible versions")
        if self.encoding.null_length is None:
            nullable: list[str] = []

            def visit(fl: Field, _: Type) -> None:
                if fl.nullable != NO_VERSIONS:
                    nullable.append(fl.name)

            walk(self.body, visit)
            if nullable:
                raise ValueError(f"{self.name}: {self.encoding.name} has no null ({nullable[0]})")

    def check_version(self, version: int) -> None:
        if version not in self.versions:
            raise ProtocolError(f"{self.name} has no version {version} (knows {self.versions})")

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def ctx(self, version: int) -> Ctx:
        """What the body is encoded under at ``version``."""
        return Ctx(self.encoding, version, version in self.flexible)

    def encode(self, value: Mapping[str, Any], version: int) -> bytes:
        """``value`` at ``version`` (missing fields take their defaults); ValueError if a
        value does not fit its field."""
        self.check_version(version)
        out = bytearray()
        self.body.encode(out, value, self.ctx(version))
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
        self,
        data: bytes,
        version: int,
        offset: int = 0,
        spans: list[FieldSpan] | None = None,
        *,
        tolerant: bool = False,
    ) -> tuple[dict[str, Any], int]:
        """The message at ``data[offset:]`` and the offset just after it (``spans`` and
        ``tolerant``: see :meth:`annotate`)."""
        self.check_version(version)
        r = In(data, offset, spans, tolerant)
        try:
            value = self.body.decode(r, self.ctx(version), "")
        except RecursionError:
            raise ProtocolError(f"{self.name} nests too deeply") from None
        return value, r.pos

    def annotate(
        self, data: bytes, version: int, offset: int = 0, *, tolerant: bool = False
    ) -> list[FieldSpan]:
        """Every field of the message at ``data[offset:]`` with its byte span, in byte
        order; never raises.  Strict: the fields read before a decoding error, if there is
        one.  ``tolerant``: a walk over malformed bytes that records a length or count as
        soon as its prefix is read and stops only at the end of the data, at a length or
        count that is negative or points past it (the rest of the data is then that
        field's), or where the layout is lost (a union kind no variant has, a malformed
        varint, a fault in tagged fields).  On a well-formed message both are the same."""
        spans: list[FieldSpan] = []
        with contextlib.suppress(ProtocolError):
            self.decode_at(data, version, offset, spans, tolerant=tolerant)
        # byte order; an empty value (an empty string's) before what begins where it ends
        return sorted(spans, key=lambda s: (s.start, s.end > s.start, -s.end))


def message(
    name: str,
    versions: str,
    flexible: str,
    fields: Sequence[Field],
    doc: str = "",
    *,
    encoding: Encoding,
    **extra: Any,
) -> Message:
    """A message declaration, version ranges spelled as in Kafka's definitions."""
    return Message(
        name=name,
        versions=Versions.parse(versions),
        flexible=Versions.parse(flexible),
        body=Struct(name, fields),
        doc=doc,
        extra=extra,
        encoding=encoding,
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
    if isinstance(typ, Array):  # a Repeated too
        walk(typ.element, visit, seen)
    elif isinstance(typ, Sized):
        walk(typ.inner, visit, seen)
    elif isinstance(typ, Union):
        for variant in typ.variants.values():
            walk(variant, visit, seen)
    elif isinstance(typ, Struct):
        for fl in typ.fields:
            visit(fl, typ)
            walk(fl.type, visit, seen)
