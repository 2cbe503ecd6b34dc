"""Types made of other types: a value framed by its size, and a tagged union.

* :class:`Sized`: a value of another type preceded by its size in bytes, as a prefix the
  type names (fixed-width or ``uvarint``, in the encoding's byte order; never compact);
  the value must fill exactly that size, or decoding fails;
* :class:`Union`: a tagged union, a discriminator (any type, ``UINT8`` usually) and then
  the type its value selects.  A union's value is a dict ``{"kind": k, "value": v}``; a
  kind no variant has is a ProtocolError when read and a ValueError when written.
  Apache Iggy's identifier is one: a kind byte (1 numeric, 2 string), then a
  ``Sized(UINT32, "u8")`` or a string with a u8 length.

Annotations name the parts ``x size`` and ``x`` (a sized value), ``x.kind`` and
``x.value`` (a union), with the inner value's own spans.  A tolerant cursor (the
annotator's walk, see :mod:`.schema_types`) records a size before its bytes; a size that
is negative or points past the data makes the rest of the data the value's, and a kind no
variant has makes it ``x.value``'s, and the walk stops; a fault inside a sized value
(its value cut short, bytes left over) stops only that value: its size says where the
walk goes on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from conformance.annotation import shifted
from conformance.errors import ProtocolError, TrailingBytes
from conformance.wire.encoding import Prefix
from conformance.wire.schema_types import Ctx, In, Type, join, length_span, past, rest

KIND = "kind"
VALUE = "value"


class Sized(Type):
    """A value of ``inner`` preceded by its size in bytes, as ``prefix`` (fixed-width or
    ``uvarint``; never compact); the value must fill exactly that size."""

    def __init__(self, inner: Type, prefix: Prefix, name: str | None = None) -> None:
        self.inner = inner
        self.prefix: Prefix = prefix
        self.name = name or f"sized_{inner.name}"

    def default(self, nullable: bool) -> Any:
        return self.inner.default(False)

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        body = bytearray()
        self.inner.encode(body, value, ctx)
        ctx.encoding.write_length(out, self.prefix, len(body), False)
        out += body

    def decode(self, r: In, ctx: Ctx, path: str) -> Any:
        return self._decode(r, ctx, path, read=False)

    def read(self, r: In, ctx: Ctx, path: str) -> Any:
        return self._decode(r, ctx, path, read=r.spans is not None)

    def _decode(self, r: In, ctx: Ctx, path: str, read: bool) -> Any:
        start = r.pos
        n, r.pos = ctx.encoding.read_length(
            r.data, r.pos, self.prefix, False, f"{path} size", tolerant=r.tolerant
        )
        if n is None:
            raise ProtocolError(f"{path}: a null size")
        if r.tolerant:
            return self._walk(r, ctx, path, start, n)
        head = r.pos
        body = In(r.take(n, path), 0, [] if read else None)
        value = (self.inner.read if read else self.inner.decode)(body, ctx, path)
        if body.left:
            raise TrailingBytes(f"{path}: {body.left} bytes left of its size {n}")
        if r.spans is not None and body.spans is not None:
            plain = replace(ctx, flexible=False)
            r.spans.append(
                length_span(
                    plain, self.prefix, f"{path} size", start, head, n, counts=(head, r.pos)
                )
            )
            r.spans += shifted(body.spans, head)
        return value

    def _walk(self, r: In, ctx: Ctx, path: str, start: int, n: int) -> Any:
        """The tolerant read, from just after the size ``n`` (see the module doc)."""
        assert r.spans is not None
        head = r.pos
        counts = (head, min(head + n, len(r.data))) if n >= 0 else None
        plain = replace(ctx, flexible=False)
        size = length_span(plain, self.prefix, f"{path} size", start, head, n, counts=counts)
        r.spans.append(size)
        if n < 0 or n > r.left:
            rest(r, path)
            raise past(f"{path} size", n, start)
        body = In(r.take(n, path), 0, [], tolerant=True)
        value = None
        with contextlib.suppress(ProtocolError):  # a fault stops the value, not the walk
            value = self.inner.read(body, ctx, path)
        assert body.spans is not None
        r.spans += shifted(body.spans, head)
        return value

    def min_size(self, ctx: Ctx) -> int:
        packed = ctx.encoding.prefix_struct(self.prefix)
        return 1 if packed is None else packed.size


class Union(Type):
    """A tagged union: ``tag`` (the discriminator's type), then the type that
    ``variants`` gives for its value.  Values are ``{"kind": k, "value": v}``."""

    def __init__(self, name: str, tag: Type, variants: Mapping[int, Type]) -> None:
        if not variants:
            raise ValueError(f"{name}: a union needs a variant")
        self.name = name
        self.tag = tag
        self.variants = dict(variants)

    def default(self, nullable: bool) -> Any:
        kind, typ = next(iter(self.variants.items()))
        return {KIND: kind, VALUE: typ.default(False)}

    def variant(self, kind: Any, path: str) -> Type:
        typ = self.variants.get(kind)
        if typ is None:
            known = ", ".join(str(k) for k in self.variants)
            raise ProtocolError(f"{path}: kind {kind} is none of {known}")
        return typ

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        value = self.default(False) if value is None else value
        kind = value[KIND]
        if kind not in self.variants:
            raise ValueError(f"{self.name} has no kind {kind!r}")
        self.tag.encode(out, kind, ctx)
        self.variants[kind].encode(out, value[VALUE], ctx)

    def decode(self, r: In, ctx: Ctx, path: str) -> Any:
        kind = self.tag.decode(r, ctx, join(path, KIND))
        typ = self.variant(kind, path)
        return {KIND: kind, VALUE: typ.decode(r, ctx, join(path, VALUE))}

    def read(self, r: In, ctx: Ctx, path: str) -> Any:
        kind = self.tag.read(r, ctx, join(path, KIND))
        if r.tolerant and kind not in self.variants:
            rest(r, join(path, VALUE))
        typ = self.variant(kind, path)
        return {KIND: kind, VALUE: typ.read(r, ctx, join(path, VALUE))}

    def min_size(self, ctx: Ctx) -> int:
        return self.tag.min_size(ctx)
