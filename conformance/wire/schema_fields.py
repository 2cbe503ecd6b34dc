"""Fields and the types that hold them: structs and arrays (the rules are in :mod:`.schema`).

A :class:`Field` is a name, a type and version ranges (:class:`Versions`): the versions it
exists in, is nullable in, travels tagged in, and (rarely) is flexible in.  A
:class:`Struct` writes its fields in order and, in a flexible version, a tagged-field
section after them; an :class:`Array` writes its count prefix, then its items.

A tolerant cursor (the annotator's walk, see :mod:`.schema_types`) records an array's
count whatever becomes of its items, with the items it found (a cut-short last one
included, as far as it went).  A negative count (not null) makes the rest of the data the
array's and stops the walk; any other count is followed item by item as far as the data
goes, so a count that points past the data stops the walk inside the item that runs past
it (at most ``max_items`` items are read: a count above it then makes the rest of the
data the array's).  Tagged fields are read as strictly as ever: a fault in them stops the
walk.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from conformance.errors import ProtocolError, TrailingBytes, Truncated
from conformance.plugin import FieldSpan
from conformance.wire.schema_types import Ctx, In, Linked, Type, join, length_span, past, rest
from conformance.wire.varint import uvarint

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

# ------------------------------------------------------------------------ fields


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
    inline: bool = False

    def default_at(self, version: int) -> Any:
        if self.default is not None:
            return self.default
        return self.type.default(version in self.nullable)

    def ctx_in(self, ctx: Ctx) -> Ctx:
        """``ctx`` as this field is written in it (a field may opt out of flexibility)."""
        if self.flexible is None:
            return ctx
        return ctx.with_flexible(ctx.version in self.flexible)


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
    inline: bool = False,
) -> Field:
    """A field, with version ranges spelled as in Kafka's message definitions;
    ``inline``: a struct (or sized struct) whose fields are its parent's in the value
    (see :mod:`.schema_linked`)."""
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
        inline=inline,
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
        self.linked = tuple(fl for fl in self.fields if isinstance(fl.type, Linked))
        self.hidden = frozenset(_hidden(self))
        """Names computed from other fields, left out of the value (links, derived)."""
        _check_links(self)

    def default(self, nullable: bool) -> Any:
        return None if nullable else {}

    def min_size(self, ctx: Ctx) -> int:
        return 1 if ctx.flexible else 0

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        value = value if value is not None else {}
        version, flexible = ctx.version, ctx.flexible
        if self.linked and isinstance(value, Mapping):
            value = dict(value)
            for fl in self.linked:
                if version in fl.versions:
                    assert isinstance(fl.type, Linked)
                    fl.type.prepare(value, fl.name, ctx, self)
        tagged: list[tuple[int, bytes]] = []
        for fl in self.fields:
            if version not in fl.versions:
                continue
            if fl.inline:
                _encode_field(out, fl, value, fl.ctx_in(ctx))
                continue
            v = value.get(fl.name, fl.default_at(version)) if isinstance(value, Mapping) else None
            if flexible and version in fl.tagged:
                assert fl.tag is not None
                if v == fl.default_at(version):
                    continue
                part = bytearray()
                _encode_field(part, fl, v, fl.ctx_in(ctx))
                tagged.append((fl.tag, bytes(part)))
                continue
            _encode_field(out, fl, v, fl.ctx_in(ctx))
        if flexible:
            unknown = value.get(UNKNOWN_TAGS) or {} if isinstance(value, Mapping) else {}
            tagged += [(int(t), bytes(b)) for t, b in unknown.items()]
            tagged.sort()
            out += uvarint(len(tagged))
            for tag, body in tagged:
                out += uvarint(tag)
                out += uvarint(len(body))
                out += body

    def decode(self, r: In, ctx: Ctx, path: str) -> Any:
        out: dict[str, Any] = {}
        tagged: dict[int, Field] = {}
        version, flexible = ctx.version, ctx.flexible
        for fl in self.fields:
            if version not in fl.versions:
                continue
            if flexible and version in fl.tagged:
                assert fl.tag is not None
                tagged[fl.tag] = fl
                out[fl.name] = fl.default_at(version)
                continue
            at = join(path, fl.name)
            if isinstance(fl.type, Linked):
                out[fl.name] = fl.type.decode_linked(r, fl.ctx_in(ctx), at, path, out)
            elif fl.inline:
                mark = len(r.spans) if r.spans is not None else 0
                try:
                    out.update(_decode_field(r, fl, fl.ctx_in(ctx), at) or {})
                finally:
                    _inlined(r, at, path, mark)
            else:
                out[fl.name] = _decode_field(r, fl, fl.ctx_in(ctx), at)
        if flexible:
            self._decode_tags(r, ctx, path, tagged, out)
        if self.linked:
            for fl in self.linked:
                if version in fl.versions and not r.tolerant:
                    assert isinstance(fl.type, Linked)
                    fl.type.finish(out, fl.name, ctx, join(path, fl.name), self)
            for hidden in self.hidden:
                out.pop(hidden, None)
        return out

    read = decode  # a struct's spans are its fields'

    def _decode_tags(
        self, r: In, ctx: Ctx, path: str, known: dict[int, Field], out: dict[str, Any]
    ) -> None:
        start = r.pos
        count = r.uvarint(f"{join(path, 'tagged fields')} count")
        if count > r.left:
            raise Truncated(f"{path}: {count} tagged fields claimed, {r.left} bytes left")
        if r.spans is not None:
            r.spans.append(FieldSpan(join(path, "tagged fields"), start, r.pos, count))
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
            sub = In(body, 0, None)
            out[fl.name] = _decode_field(sub, fl, ctx.with_flexible(True), join(path, fl.name))
            if sub.left:
                raise TrailingBytes(f"{path}: {sub.left} bytes left in tagged field {fl.name}")
            if r.spans is not None:
                r.spans.append(FieldSpan(join(path, fl.name), r.pos - size, r.pos, out[fl.name]))


class Array(Type):
    """A count prefix (the encoding's ``array_count``, compact in flexible versions),
    then that many items."""

    nullable_kind = True

    def __init__(self, element: Type, max_items: int = 1 << 20) -> None:
        self.element = element
        self.name = f"[]{element.name}"
        self.max_items = max_items

    def default(self, nullable: bool) -> Any:
        return None if nullable else []

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        prefix = ctx.encoding.array_count
        if value is None:
            ctx.encoding.write_length(out, prefix, None, ctx.flexible)
            return
        items = list(value)
        ctx.encoding.write_length(out, prefix, len(items), ctx.flexible)
        for item in items:
            self.element.encode(out, item, ctx)

    def decode(self, r: In, ctx: Ctx, path: str) -> Any:
        if r.tolerant:
            return self._walk(r, ctx, path)
        start = r.pos
        prefix = ctx.encoding.array_count
        n = r.length(ctx, prefix, f"{path} count")
        if n is None:
            return None
        least = self.element.min_size(ctx)
        if n > self.max_items or (least and n * least > r.left):
            raise Truncated(f"{path}: {n} items claimed, {r.left} bytes left")
        counted = r.pos
        items = []
        bounds: list[tuple[int, int]] = []
        decode = self.element.read if r.spans is not None else self.element.decode
        for i in range(n):
            a = r.pos
            items.append(decode(r, ctx, f"{path}[{i}]"))
            bounds.append((a, r.pos))
            if items[-1] is None:  # a field may be null, an array's item never is
                raise ProtocolError(f"{path}[{i}] is null, which an array's items never are")
        if r.spans is not None:
            r.spans.append(
                length_span(ctx, prefix, f"{path} count", start, counted, n, items=tuple(bounds))
            )
        return items

    read = decode  # the items' spans and the count's

    def _walk(self, r: In, ctx: Ctx, path: str) -> Any:
        """The tolerant read (see the module doc)."""
        assert r.spans is not None
        start = r.pos
        prefix = ctx.encoding.array_count
        n = r.length(ctx, prefix, f"{path} count")
        if n is None:
            return None
        counted = r.pos
        items: list[Any] = []
        bounds: list[tuple[int, int]] = []
        try:
            if n < 0:
                rest(r, path)
                raise past(f"{path} count", n, start)
            for i in range(min(n, self.max_items)):
                a, mark = r.pos, len(r.spans)
                try:
                    items.append(self.element.read(r, ctx, f"{path}[{i}]"))
                except ProtocolError:
                    if len(r.spans) > mark:  # the item cut short, as far as it went
                        bounds.append((a, max(s.end for s in r.spans[mark:])))
                    raise
                bounds.append((a, r.pos))
            if n > self.max_items:
                rest(r, path)
                raise past(f"{path} count", n, start)
        finally:
            r.spans.append(
                length_span(ctx, prefix, f"{path} count", start, counted, n, items=tuple(bounds))
            )
        return items


class Repeated(Array):
    """Items of ``element`` one after another up to the end of the data, with no count in
    front (Iggy's GET_STREAM: a stream record, then its topics to the end of the reply).
    It must be the last field of its message: nothing could follow it.  An array for
    what is derived from arrays (strategies: lists of the element); only the bytes differ.
    An element that takes no bytes is refused on decoding (it would repeat forever)."""

    nullable_kind = False

    def __init__(self, element: Type, max_items: int = 1 << 20) -> None:
        super().__init__(element, max_items)
        self.name = f"{element.name}*"

    def default(self, nullable: bool) -> Any:
        return []

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        for item in value or ():
            self.element.encode(out, item, ctx)

    def decode(self, r: In, ctx: Ctx, path: str) -> Any:
        items: list[Any] = []
        decode = self.element.read if r.spans is not None else self.element.decode
        while r.left:
            if len(items) >= self.max_items:
                raise ProtocolError(f"{path}: more than {self.max_items} items")
            start = r.pos
            items.append(decode(r, ctx, f"{path}[{len(items)}]"))
            if r.pos == start:
                raise ProtocolError(f"{path}: an item of no bytes at offset {start}")
        return items

    read = decode

    def min_size(self, ctx: Ctx) -> int:
        return 0


def _hidden(struct: Struct) -> list[str]:
    out: list[str] = []
    for fl in struct.linked:
        assert isinstance(fl.type, Linked)
        out += fl.type.hidden(fl.name)
    return out


def inlined_struct(fl: Field) -> Struct | None:
    """The struct an ``inline`` field holds (itself or sized), None if it is not inline."""
    if not fl.inline:
        return None
    typ = getattr(fl.type, "inner", fl.type)
    if not isinstance(typ, Struct):
        raise ValueError(f"{fl.name}: only a struct or a sized struct can be inline")
    return typ


def _check_links(struct: Struct) -> None:
    """A linked field names an earlier field (one of an earlier inline struct's too)."""
    seen: set[str] = set()
    for fl in struct.fields:
        links = fl.type.earlier() if isinstance(fl.type, Linked) else ()
        missing = [n for n in links if n not in seen]
        if missing:
            raise ValueError(f"{struct.name}.{fl.name}: {missing[0]!r} is no earlier field")
        seen.add(fl.name)
        inner = inlined_struct(fl)
        if inner is not None:
            seen.update(x.name for x in inner.fields)


def _inlined(r: In, at: str, path: str, mark: int) -> None:
    """The spans of an inline field's fields named as its parent's (``at size`` stays)."""
    if r.spans is None:
        return
    prefix = at + "."
    for i in range(mark, len(r.spans)):
        span = r.spans[i]
        if span.name.startswith(prefix):
            r.spans[i] = replace(span, name=join(path, span.name.removeprefix(prefix)))


def _encode_field(out: bytearray, fl: Field, value: Any, ctx: Ctx) -> None:
    version = ctx.version
    if value is None and fl.type.nullable_kind and version not in fl.nullable:
        raise ValueError(f"{fl.name} cannot be null in version {version}")
    if isinstance(fl.type, Struct) and version in fl.nullable:
        out.append(0xFF if value is None else 1)  # a nullable struct's presence byte
        if value is None:
            return
    fl.type.encode(out, value, ctx)


def _decode_field(r: In, fl: Field, ctx: Ctx, path: str) -> Any:
    typ, version = fl.type, ctx.version
    if isinstance(typ, Struct) and version in fl.nullable and r.unpack(_I8, f"{path} presence") < 0:
        return None
    value = typ.read(r, ctx, path) if r.spans is not None else typ.decode(r, ctx, path)
    if value is None and version not in fl.nullable:
        raise ProtocolError(f"{path} is null, which version {version} does not allow")
    return value


_I8 = struct.Struct(">b")
