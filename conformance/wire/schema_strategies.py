"""Hypothesis strategies derived from the message declarations of :mod:`.schema`.

``values(message, version)`` draws plain dicts that ``message.encode(value, version)``
accepts: every field present at that version, drawn from its type; ``None`` sometimes
where the version lets the field be null; a tagged field sometimes at its default (left
out of the tagged section) and sometimes not.  What each type draws:

* fixed-width integers and varints: their whole range (Hypothesis leans to the
  boundaries by itself); ``float64`` and ``float32``: finite floats of that width;
  ``bool``; ``uuid``: canonical strings;
* ``string``: short text, mostly ASCII, sometimes any UTF-8 (no lone surrogates: they
  have no UTF-8 form); ``bytes`` and ``records``: up to 32 bytes; a
  :class:`~.schema_linked.SizedBy` field: those of its kind;
* arrays: 0 to ``max_items`` elements; structs: a dict of their fields;
* a sized value: its inner type's values; a union: ``{"kind": k, "value": v}``, every
  kind drawn, each with its variant's values;
* a field computed from others (the length or count a linked field names, a derived
  field: :mod:`.schema_linked`) is not drawn; an inline struct's fields are drawn into
  its parent's dict.

Lengths are drawn short enough for the narrowest prefix an encoding offers (a u8), so
the values suit every protocol's :class:`~conformance.wire.encoding.Encoding`.

``overrides`` replaces the strategy of a field, named by its dotted path from the
message root through arrays without indices (``"topic_data.partition_data.records"``),
or of every field of a type, named by the type's schema spelling (``"records"``,
``"[]int32"``, a struct's name); a path wins over a type name.  An overriding strategy
draws the field's value as is (null included, if it should ever be null).

With ``unknown_tags``, a flexible struct sometimes also carries tags it does not declare
(under ``"_unknown_tags"``, raw bytes each), as a newer peer would send them.

Strategies are built on first use and cached per message, version and options: a
protocol has hundreds of message versions and a test run needs a few of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from conformance.wire.schema import (
    KIND,
    UNKNOWN_TAGS,
    VALUE,
    Array,
    Bool,
    Bytes,
    Field,
    Fixed,
    Message,
    Sized,
    String,
    Struct,
    Type,
    Union,
    Uuid,
    Varint,
    Wide,
)
from conformance.wire.schema_linked import SizedBy

__all__ = ["field_values", "type_values", "values"]

TEXT_SIZE = 20
BYTES_SIZE = 32
_ASCII = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
_TEXT = st.one_of(
    st.text(_ASCII, max_size=TEXT_SIZE),
    st.text(st.characters(codec="utf-8"), max_size=TEXT_SIZE),
)
_BYTES = st.binary(max_size=BYTES_SIZE)
_FLOATS = st.floats(allow_nan=False, allow_infinity=False)
_FLOATS32 = st.floats(allow_nan=False, allow_infinity=False, width=32)

T = TypeVar("T")
_Key = tuple[Any, ...]
_CACHE: dict[_Key, tuple[Any, SearchStrategy[Any]]] = {}
"""(what the strategy was derived from, kept alive so its id stays its own; strategy)"""
_LOCK = threading.Lock()


class _Options:
    """What a strategy depends on besides the type: part of every cache key."""

    __slots__ = ("key", "max_items", "overrides", "unknown_tags")

    def __init__(
        self,
        overrides: Mapping[str, SearchStrategy[Any]] | None,
        max_items: int,
        unknown_tags: bool,
    ) -> None:
        self.overrides = dict(overrides or {})
        self.max_items = max_items
        self.unknown_tags = unknown_tags
        named = tuple(sorted(self.overrides.items(), key=lambda kv: kv[0]))
        self.key: _Key = (named, max_items, unknown_tags)


def values(
    message: Message,
    version: int,
    *,
    overrides: Mapping[str, SearchStrategy[Any]] | None = None,
    max_items: int = 3,
    unknown_tags: bool = False,
) -> SearchStrategy[dict[str, Any]]:
    """Dicts that ``message.encode(value, version)`` accepts (see the module doc)."""
    message.check_version(version)
    opts = _Options(overrides, max_items, unknown_tags)
    key = ("message", id(message), version, *opts.key)
    flexible = message.is_flexible(version)
    return _cached(key, message, lambda: _struct(message.body, version, flexible, "", opts))


def type_values(
    typ: Type,
    version: int,
    flexible: bool,
    nullable: bool = False,
    *,
    overrides: Mapping[str, SearchStrategy[Any]] | None = None,
    max_items: int = 3,
    unknown_tags: bool = False,
    path: str = "",
) -> SearchStrategy[Any]:
    """Values of ``typ`` at ``version`` (compact encodings if ``flexible``), ``None``
    among them if ``nullable``; ``path`` is the field's dotted path, for ``overrides``."""
    opts = _Options(overrides, max_items, unknown_tags)
    return _type(typ, version, flexible, nullable, path, opts)


def field_values(
    field: Field,
    version: int,
    flexible: bool,
    *,
    overrides: Mapping[str, SearchStrategy[Any]] | None = None,
    max_items: int = 3,
    unknown_tags: bool = False,
    path: str = "",
) -> SearchStrategy[Any]:
    """Values of one field at ``version`` inside a struct that is ``flexible`` there
    (null and the tagged default included where they apply)."""
    opts = _Options(overrides, max_items, unknown_tags)
    return _field(field, version, flexible, path or field.name, opts)


# ---------------------------------------------------------------------- internals


def _cached(key: _Key, owner: Any, build: Callable[[], SearchStrategy[T]]) -> SearchStrategy[T]:
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is None:
        strategy = build()
        with _LOCK:
            hit = _CACHE.setdefault(key, (owner, strategy))
    return cast("SearchStrategy[T]", hit[1])


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _field(
    fl: Field, version: int, flexible: bool, path: str, opts: _Options
) -> SearchStrategy[Any]:
    fx = flexible if fl.flexible is None else version in fl.flexible
    nullable = version in fl.nullable and fl.type.nullable_kind
    strategy = _type(fl.type, version, fx, nullable, path, opts)
    if flexible and version in fl.tagged:
        strategy = st.one_of(st.just(fl.default_at(version)), strategy)
    return strategy


def _type(
    typ: Type, version: int, flexible: bool, nullable: bool, path: str, opts: _Options
) -> SearchStrategy[Any]:
    override = opts.overrides.get(path) if path else None
    if override is None:
        override = opts.overrides.get(typ.name)
    if override is not None:
        return override
    base = _base(typ, version, flexible, path, opts)
    return st.one_of(st.none(), base) if nullable else base


def _base(
    typ: Type, version: int, flexible: bool, path: str, opts: _Options
) -> SearchStrategy[Any]:
    if isinstance(typ, Fixed):
        if typ.name == "float64":
            return _FLOATS
        if typ.name == "float32":
            return _FLOATS32
        return st.integers(int(typ.low), int(typ.high))
    if isinstance(typ, Wide):
        return st.integers(typ.low, typ.high)
    if isinstance(typ, Bool):
        return st.booleans()
    if isinstance(typ, Uuid):
        return st.uuids().map(str)
    if isinstance(typ, Varint):
        if typ.signed:
            return st.integers(-(1 << (typ.bits - 1)), (1 << (typ.bits - 1)) - 1)
        return st.integers(0, (1 << typ.bits) - 1)
    if isinstance(typ, String) or (isinstance(typ, SizedBy) and isinstance(typ.kind, String)):
        return _TEXT
    if isinstance(typ, Bytes | SizedBy):
        return _BYTES
    if isinstance(typ, Array):
        element = _type(typ.element, version, flexible, False, path, opts)
        return st.lists(element, max_size=opts.max_items)
    if isinstance(typ, Struct):
        key = ("struct", id(typ), version, flexible, path, *opts.key)
        return _cached(key, typ, lambda: _struct(typ, version, flexible, path, opts))
    if isinstance(typ, Sized):
        return _type(typ.inner, version, flexible, False, path, opts)
    if isinstance(typ, Union):
        variants = [
            st.fixed_dictionaries(
                {KIND: st.just(kind), VALUE: _type(t, version, flexible, False, path, opts)}
            )
            for kind, t in typ.variants.items()
        ]
        return st.one_of(variants)
    raise TypeError(f"no strategy for schema type {typ.name!r} ({type(typ).__name__})")


def _struct(
    typ: Struct, version: int, flexible: bool, path: str, opts: _Options
) -> SearchStrategy[dict[str, Any]]:
    present = [fl for fl in typ.fields if version in fl.versions and fl.name not in typ.hidden]
    fields = {
        fl.name: _field(fl, version, flexible, _join(path, fl.name), opts)
        for fl in present
        if not fl.inline
    }
    plain = st.fixed_dictionaries(fields)
    inline = [_field(fl, version, flexible, path, opts) for fl in present if fl.inline]
    if inline:  # an inline struct's fields are this one's (its computed ones left out)
        hidden = typ.hidden
        plain = st.builds(lambda *parts: _merged(parts, hidden), plain, *inline)
    if not (flexible and opts.unknown_tags):
        return plain
    declared = [fl.tag for fl in typ.fields if fl.tag is not None]
    first = max(declared, default=-1) + 1
    unknown = st.dictionaries(st.integers(first, first + 1000), _BYTES, max_size=2)
    return st.builds(_with_unknown, plain, st.one_of(st.just({}), unknown))


def _merged(parts: tuple[dict[str, Any], ...], hidden: frozenset[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in parts:
        out.update(part)
    return {k: v for k, v in out.items() if k not in hidden}


def _with_unknown(value: dict[str, Any], unknown: dict[int, bytes]) -> dict[str, Any]:
    if unknown:
        value[UNKNOWN_TAGS] = unknown
    return value
