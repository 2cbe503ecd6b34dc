"""A schema type Iggy needs that the generic machinery has not (yet): :class:`Repeated`.

Iggy's replies end in records repeated up to the end of the payload, with no count in
front of them (GET_STREAM: a stream, then its topics; GET_TOPIC: a topic, then its
partitions; GET_CONSUMER_GROUP: a group, then its members): the count the record carries
(``topics_count``...) is a field of the record, not a prefix of the list.  A
:class:`Repeated` is that list: items of ``element`` one after another until the data
ends.  It must be the last field of its message (nothing could follow it).

It subclasses :class:`~conformance.wire.schema_fields.Array` so that what is derived from
arrays (Hypothesis strategies: lists of the element) applies unchanged; only the bytes
differ (no count).  The scapy layers do not know it yet.  It belongs in
:mod:`conformance.wire` once a second protocol needs it.
"""

from __future__ import annotations

from typing import Any

from conformance.errors import ProtocolError
from conformance.wire.schema_fields import Array
from conformance.wire.schema_types import Ctx, In, Type


class Repeated(Array):
    """Items of ``element`` up to the end of the data, no count (see the module doc)."""

    nullable_kind = False

    def __init__(self, element: Type, max_items: int = 1 << 20) -> None:
        super().__init__(element, max_items)
        self.name = f"{element.name}*"

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
            if r.pos == start:  # an element that takes no bytes would repeat forever
                raise ProtocolError(f"{path}: an item of no bytes at offset {start}")
        return items

    read = decode

    def min_size(self, ctx: Ctx) -> int:
        return 0
