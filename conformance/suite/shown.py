"""Values in a case's reason as the wire carries them, never as Python writes them.

A reason states expected vs actual in the wire's terms (issue 20), so no ``None``,
``b'..'``, ``[...]`` or tuple may reach it.  The rules, for every protocol:

* null is ``null``; a boolean ``true`` / ``false``; a number its decimal digits;
* text is quoted as sent (``'checkpoint-7'``), a character that does not print escaped
  (``'a\\nb'``);
* bytes that are printable UTF-8 text are quoted like text (``'here'``; no bytes at all is
  ``''``), other bytes are hex (``0x4c00ff``);
* several values are comma-separated (``1, 2, 3``), none at all is ``none``;
* a struct (a record, a broker) is its fields by name (``key 'k1' value null``).

``limit`` cuts long text or bytes (``'gzip-0gzip-0'... (120 bytes)``); ``most`` cuts a long
list (``1, 2, 3, ... (9 in all)``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["joined", "show", "show_all", "show_fields"]


def _quoted(text: str) -> str:
    inner = "".join(
        c
        if c.isprintable()
        else repr(c)[1:-1]
        if c in "\n\r\t"
        else f"\\x{ord(c):02x}"
        if ord(c) < 0x100
        else f"\\u{ord(c):04x}"
        for c in text
    )
    return f"'{inner}'"


def _cut(shown: str, size: int, limit: int | None, unit: str) -> str:
    return shown if limit is None or size <= limit else f"{shown}... ({size} {unit})"


def show(value: Any, limit: int | None = None) -> str:
    """One value as the wire has it (see the module's rules)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        return _cut(_quoted(value[:limit]), len(value), limit, "characters")
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and text.isprintable():
            return _cut(_quoted(text[:limit]), len(data), limit, "bytes")
        return _cut("0x" + data[:limit].hex(), len(data), limit, "bytes")
    if isinstance(value, list | tuple):
        return show_all(value)
    return str(value)


def joined(
    parts: Iterable[str], *, most: int | None = None, empty: str = "none", sep: str = ", "
) -> str:
    """Strings already shown, separated by ``sep`` (the first ``most`` of them)."""
    items = list(parts)
    if not items:
        return empty
    if most is not None and len(items) > most:
        return sep.join(items[:most]) + f"{sep}... ({len(items)} in all)"
    return sep.join(items)


def show_all(
    values: Iterable[Any], *, limit: int | None = None, most: int | None = None, empty: str = "none"
) -> str:
    """Several values, comma-separated; ``empty`` when there are none."""
    return joined((show(v, limit) for v in values), most=most, empty=empty)


def show_fields(limit: int | None = None, /, **fields: Any) -> str:
    """A struct by its fields' names and values: ``key 'k1' value null``."""
    return " ".join(f"{name} {show(v, limit)}" for name, v in fields.items())
