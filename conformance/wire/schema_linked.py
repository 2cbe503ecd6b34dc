"""Types framed by an earlier sibling field, or derived from a sibling: what a layout
needs when a length or count is not right before what it counts (Apache Iggy's 64-byte
message header holds the payload's and the user headers' lengths; a SEND_MESSAGES count
sits inside a sized metadata block, before an index table and the messages).

* :class:`SizedBy` ``(length, kind)``: string or bytes (``kind``: a :class:`String` or
  :class:`Bytes`, no prefix of its own) as long as the earlier sibling field ``length``
  says.  Encoding computes that sibling from the value (a value given for it is
  ignored); decoding reads it there.  ``shows``: a type the bytes are *shown* as in the
  annotation when they parse (the value stays the raw bytes, so that bytes that do not
  parse still travel).
* :class:`CountedBy` ``(count, element)``: an array with no count of its own, as many
  items as the earlier sibling ``count`` says (computed from the list when encoding).
* :class:`Derived` ``(inner, of, compute)``: a field whose value is a function of the
  byte sizes of the items of the sibling array ``of`` (SEND_MESSAGES' index: the
  cumulative end of each message).  Encoding computes it (a value given is ignored);
  decoding reads it and checks it against the same function of the decoded items: a
  value that differs is a ProtocolError, so what decodes re-encodes to the same bytes.
  This is chosen over a plain array the codec checks so that every derived form (codec,
  strategies, scapy layers, annotation) keeps it true by itself; it is a function of
  sizes, not of values, so that a layer computes it from the bytes its items build.

The sibling a ``SizedBy`` or ``CountedBy`` names is left out of the value (as a prefix
is), and so is a ``Derived`` field.  A sibling may be a field of an earlier ``inline``
struct (:func:`~.schema_fields.f`: a struct, or a sized struct, whose fields are its
parent's in the value and in the annotation, its size keeping its own name).

Annotation: the sibling is named as a prefix would be, ``<field> length`` with
``counts`` (the bytes) or ``<array> count`` with ``items`` (a ``Derived`` array does not
rename its count: the array that is part of the value does), in the encoding's byte
order, so the minimizer can rewrite it.  A tolerant walk follows a length or count as
far as the data goes, as for prefixes (:mod:`.schema_types`): bytes that run past the
data make the rest of it the field's; a ``Derived`` value is not checked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from conformance.annotation import shifted
from conformance.errors import ProtocolError, Truncated
from conformance.plugin import FieldSpan
from conformance.wire.schema_fields import Array, Struct
from conformance.wire.schema_types import (
    BYTES,
    Bytes,
    Ctx,
    In,
    Linked,
    String,
    Type,
    join,
    past,
    rest,
    shown,
)

__all__ = ["CountedBy", "Derived", "SizedBy", "item_sizes"]


def _relabel(r: In, old: str, new: str, ctx: Ctx, **structure: Any) -> None:
    """The span of sibling ``old`` renamed ``new`` with its structure (what it counts)."""
    if r.spans is None:
        return
    for i in range(len(r.spans) - 1, -1, -1):
        if r.spans[i].name == old:
            order = ctx.encoding.byte_order
            r.spans[i] = replace(r.spans[i], name=new, order=order, **structure)
            return


def _number(siblings: dict[str, Any], link: str, path: str) -> int:
    n = siblings.get(link)
    if not isinstance(n, int) or isinstance(n, bool):
        raise ProtocolError(f"{path}: its {link} is {n!r}, not a number")
    return n


class SizedBy(Linked):
    """String or bytes as long as the earlier sibling ``length`` says (module doc)."""

    def __init__(
        self, length: str, kind: String | Bytes = BYTES, shows: Type | None = None
    ) -> None:
        self.length = length
        self.kind = kind
        self.shows = shows
        self.name = f"{kind.name}_sized_by_{length}"

    def earlier(self) -> tuple[str, ...]:
        return (self.length,)

    def hidden(self, name: str) -> tuple[str, ...]:
        return (self.length,)

    def default(self, nullable: bool) -> Any:
        return self.kind.default(False)

    def min_size(self, ctx: Ctx) -> int:
        return 0

    def prepare(self, value: dict[str, Any], name: str, ctx: Ctx, struct: Any) -> None:
        value[self.length] = len(self.kind.to_bytes(value.get(name, self.default(False))))

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        out += self.kind.to_bytes(value)

    def decode_linked(
        self, r: In, ctx: Ctx, path: str, parent: str, siblings: dict[str, Any]
    ) -> Any:
        n = _number(siblings, self.length, path)
        head, old = r.pos, join(parent, self.length)
        if r.tolerant:
            _relabel(
                r, old, f"{path} length", ctx, counts=(head, min(head + max(n, 0), len(r.data)))
            )
            if n < 0 or n > r.left:
                rest(r, path)
                raise past(f"{path} length", n, head)
        data = r.take(n, path)
        try:
            value = self.kind.from_bytes(data, path)
        except ProtocolError:
            if not r.tolerant:
                raise
            value = data.decode("utf-8", "replace")
        if r.spans is not None:
            _relabel(r, old, f"{path} length", ctx, counts=(head, r.pos))
            self._show(r, ctx, path, head, data, value)
        return value

    def _show(self, r: In, ctx: Ctx, path: str, head: int, data: bytes, value: Any) -> None:
        assert r.spans is not None
        inner: list[Any] = []
        if self.shows is not None and data:
            sub = In(data, 0, inner, tolerant=True)
            with contextlib.suppress(ProtocolError):
                self.shows.read(sub, ctx, path)
        if inner:
            r.spans += shifted(inner, head)
        else:
            r.spans.append(_span(path, head, r.pos, value))


def _span(path: str, start: int, end: int, value: Any) -> FieldSpan:
    return FieldSpan(path, start, end, shown(value))


class CountedBy(Array, Linked):
    """An array of as many items as the earlier sibling ``count`` says (module doc)."""

    nullable_kind = False

    def __init__(self, count: str, element: Type, max_items: int = 1 << 20) -> None:
        super().__init__(element, max_items)
        self.count = count

    def earlier(self) -> tuple[str, ...]:
        return (self.count,)

    def hidden(self, name: str) -> tuple[str, ...]:
        return (self.count,)

    def default(self, nullable: bool) -> Any:
        return []

    def min_size(self, ctx: Ctx) -> int:
        return 0

    def prepare(self, value: dict[str, Any], name: str, ctx: Ctx, struct: Any) -> None:
        value[self.count] = len(value.get(name) or ())

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        for item in value or ():
            self.element.encode(out, item, ctx)

    def decode_linked(
        self, r: In, ctx: Ctx, path: str, parent: str, siblings: dict[str, Any]
    ) -> Any:
        bounds: list[tuple[int, int]] = []
        try:
            return self.items(r, ctx, path, _number(siblings, self.count, path), bounds)
        finally:
            _relabel(r, join(parent, self.count), f"{path} count", ctx, items=tuple(bounds))

    def items(self, r: In, ctx: Ctx, path: str, n: int, bounds: list[tuple[int, int]]) -> list[Any]:
        """``n`` items at ``r``, the span of each appended to ``bounds`` (a cut-short
        last one too, in a tolerant walk)."""
        least = self.element.min_size(ctx)
        if n < 0 or n > self.max_items or (least and n * least > r.left):
            if r.tolerant:
                rest(r, path)
                raise past(f"{path} count", n, r.pos)
            raise Truncated(f"{path}: {n} items claimed, {r.left} bytes left")
        items = []
        read = self.element.read if r.spans is not None else self.element.decode
        for i in range(n):
            a, mark = r.pos, len(r.spans or ())
            try:
                items.append(read(r, ctx, f"{path}[{i}]"))
            except ProtocolError:
                if r.spans is not None and len(r.spans) > mark:
                    bounds.append((a, max(s.end for s in r.spans[mark:])))
                raise
            bounds.append((a, r.pos))
        return items

    def decode(self, r: In, ctx: Ctx, path: str) -> Any:
        raise ProtocolError(f"{path}: a counted array is read by its struct")

    read = decode


def item_sizes(element: Type, items: Sequence[Any], ctx: Ctx) -> list[int]:
    """The encoded size of each of ``items`` (of type ``element``)."""
    sizes = []
    for item in items:
        out = bytearray()
        element.encode(out, item, ctx)
        sizes.append(len(out))
    return sizes


class Derived(Linked):
    """A field computed from the byte sizes of the items of sibling array ``of``, by
    ``compute`` (sizes -> value); ``inner`` is how it travels (module doc)."""

    def __init__(self, inner: Type, of: str, compute: Callable[[list[int]], Any]) -> None:
        self.inner = inner
        self.of = of
        self.compute = compute
        self.name = f"derived_{inner.name}"

    def earlier(self) -> tuple[str, ...]:
        return self.inner.earlier() if isinstance(self.inner, Linked) else ()

    def hidden(self, name: str) -> tuple[str, ...]:
        return (name,)

    def default(self, nullable: bool) -> Any:
        return self.inner.default(False)

    def min_size(self, ctx: Ctx) -> int:
        return self.inner.min_size(ctx)

    def expected(self, value: dict[str, Any], ctx: Ctx, struct: Struct) -> Any:
        """What the field is for the struct's ``value``."""
        array = next(fl.type for fl in struct.fields if fl.name == self.of)
        assert isinstance(array, Array)
        return self.compute(item_sizes(array.element, value.get(self.of) or (), ctx))

    def prepare(self, value: dict[str, Any], name: str, ctx: Ctx, struct: Any) -> None:
        value[name] = self.expected(value, ctx, struct)
        if isinstance(self.inner, Linked):
            self.inner.prepare(value, name, ctx, struct)

    def encode(self, out: bytearray, value: Any, ctx: Ctx) -> None:
        self.inner.encode(out, value, ctx)

    def decode_linked(
        self, r: In, ctx: Ctx, path: str, parent: str, siblings: dict[str, Any]
    ) -> Any:
        if isinstance(self.inner, CountedBy):  # the count stays the value's array's
            n = _number(siblings, self.inner.count, path)
            return self.inner.items(r, ctx, path, n, [])
        if isinstance(self.inner, Linked):
            return self.inner.decode_linked(r, ctx, path, parent, siblings)
        return (self.inner.read if r.spans is not None else self.inner.decode)(r, ctx, path)

    def finish(self, siblings: dict[str, Any], name: str, ctx: Ctx, path: str, struct: Any) -> None:
        got, want = siblings.get(name), self.expected(siblings, ctx, struct)
        if got != want:
            raise ProtocolError(f"{path} is {got}, expected {want} (from the {self.of})")
