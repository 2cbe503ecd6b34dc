"""Wire-log entries of the report model, read for people: bytes, hex rows, fields.

A wire-log entry in ``results.json`` keeps the first ``wire_keep`` bytes of a frame as hex,
its real length, a one-line summary and, from the protocol's frame annotator, the fields
found in those bytes (``[name, start, end, value]``).  Every report shows entries through
the helpers here, so the terminal, HTML, JUnit and Allure show the same bytes, the same
field names and the same "cut" marker.

The *decisive* entry of a failing case is the one a reader should look at first: the
last frame received before the case ended, else the last one sent.  Its *offending*
fields are those whose name the case's message mentions (``error_code 0, expected 3``
points at ``error_code``).

Which field holds an error code, and the name of each code, is the protocol's to say
(:attr:`conformance.plugin.Plugin.error_codes`, found by :func:`error_codes` from the
results' protocol): such a field is shown with its name (``3 UNKNOWN_TOPIC_OR_PARTITION``)
and is offending when it holds the code a message names as what came back.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance import protocols
from conformance.plugin import ErrorCodes
from conformance.report import printable

#: Bytes per hex row: 16 rows of 3 characters and the ASCII column fit any report width.
ROW_BYTES = 16


@dataclass(frozen=True)
class Field:
    name: str
    start: int
    end: int
    value: str


@dataclass(frozen=True)
class Entry:
    t: float | None
    conn: str
    dir: str
    length: int
    data: bytes
    summary: str
    fields: tuple[Field, ...]
    bad_hex: bool = False

    @property
    def cut(self) -> bool:
        """The log kept fewer bytes than the frame had."""
        return len(self.data) < self.length

    @property
    def cut_note(self) -> str:
        return f"cut: the log kept {len(self.data)} of {self.length} bytes" if self.cut else ""

    def header(self) -> str:
        """``+0.0123s #1 recv 41 B  PUBLISH-ACK #3``."""
        when = f"+{self.t:.4f}s" if self.t is not None else ""
        size = f"{self.length} B" if self.data or self.length else ""
        parts = [when, f"#{self.conn}" if self.conn else "", self.dir, size, self.summary]
        return " ".join(p for p in parts if p)


def error_codes(results: Mapping[str, Any]) -> ErrorCodes | None:
    """The error codes of the results' protocol (None for a protocol without numeric
    error codes, or one this installation does not know)."""
    try:
        return protocols.get(str(results.get("protocol") or "")).error_codes
    except protocols.UnknownProtocol:
        return None


def _is_error_field(name: str, errors: ErrorCodes | None) -> bool:
    return errors is not None and _leaf(name) == errors.field


def _leaf(name: str) -> str:
    return re.split(r"[.\]\[]", name.rstrip("]"))[-1] or name


def entry(raw: Mapping[str, Any], errors: ErrorCodes | None = None) -> Entry:
    """One wire-log entry of the results, decoded and made printable; an error-code
    field's value is shown with the code's name."""
    text = "".join(str(raw.get("hex") or "").split())
    bad = False
    try:
        data = binascii.unhexlify(text)
    except (binascii.Error, ValueError):
        data, bad = b"", True
    length = raw.get("len")
    length = length if isinstance(length, int) and length >= len(data) else len(data)
    t = raw.get("t")
    fields = []
    for f in raw.get("fields") or []:
        if isinstance(f, list | tuple) and len(f) == 4:
            name, start, end, value = f
            if isinstance(start, int) and isinstance(end, int):
                shown = printable(repr(value) if isinstance(value, str) else value, limit=120)
                if _is_error_field(str(name), errors) and isinstance(value, int):
                    assert errors is not None
                    shown = f"{value} {errors.names.get(value, '(unknown code)')}"
                fields.append(Field(printable(name, one_line=True), start, end, shown))
    return Entry(
        t=float(t) if isinstance(t, int | float) and not isinstance(t, bool) else None,
        conn=printable(raw.get("conn") if raw.get("conn") is not None else "", one_line=True),
        dir=printable(raw.get("dir") or "", one_line=True),
        length=length,
        data=data,
        summary=printable(raw.get("summary"), one_line=True, limit=300),
        fields=tuple(fields),
        bad_hex=bad,
    )


def entries(case: Mapping[str, Any], errors: ErrorCodes | None = None) -> list[Entry]:
    return [entry(e, errors) for e in case.get("wire_log") or [] if isinstance(e, dict)]


def hex_rows(data: bytes, width: int = ROW_BYTES) -> list[tuple[int, bytes]]:
    """``data`` as (offset, bytes) rows of ``width`` bytes."""
    return [(start, data[start : start + width]) for start in range(0, len(data), width)]


def ascii_of(chunk: bytes) -> str:
    return "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk)


def dump(data: bytes, width: int = ROW_BYTES) -> list[str]:
    """``0010  00 01 02 ...  ...`` lines: offset, every byte in hex, the ASCII column."""
    return [
        f"{start:04x}  {chunk.hex(' ').ljust(width * 3 - 1)}  {ascii_of(chunk)}"
        for start, chunk in hex_rows(data, width)
    ]


def field_line(f: Field) -> str:
    return f"{f.name} = {f.value}  [{f.start}..{f.end})"


def render_text(
    case: Mapping[str, Any], *, max_entries: int | None = None, errors: ErrorCodes | None = None
) -> str:
    """The whole kept wire log of ``case`` as text: a header per entry, its hex dump, its
    fields, and a marker where the log cut a frame."""
    lines: list[str] = []
    logged = entries(case, errors)
    shown = logged if max_entries is None else logged[:max_entries]
    for e in shown:
        lines.append(e.header())
        lines += ["    " + line for line in dump(e.data)]
        if e.cut:
            lines.append(f"    ({e.cut_note})")
        lines += ["    . " + field_line(f) for f in e.fields]
    if len(shown) < len(logged):
        lines.append(f"({len(logged) - len(shown)} more wire-log entries left out)")
    return "\n".join(lines)


def decisive(case: Mapping[str, Any], errors: ErrorCodes | None = None) -> Entry | None:
    """The entry a reader of a failing case should see first: the last frame received,
    else the last frame sent, else the last event (a close or a timeout)."""
    logged = entries(case, errors)
    for direction in ("recv", "send"):
        found = [e for e in logged if e.dir == direction and e.data]
        if found:
            return found[-1]
    return logged[-1] if logged else None


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


_CODE = re.compile(r"\b[A-Z][A-Z0-9_]+ \((-?\d+)\)")


def offending(case: Mapping[str, Any], e: Entry, errors: ErrorCodes | None = None) -> set[str]:
    """Names of ``e``'s fields that the case's message mentions, by the last part of the
    name (``partitions[0].error_code`` matches a message about ``error_code``), also when
    the message spells it with spaces (``high watermark`` for ``high_watermark``); and the
    protocol's error-code fields holding the code a message names as what came back
    (``NONE (0), expected INVALID_PARTITIONS (37)``: an error_code of 0)."""
    message = str(case.get("message") or "")
    words = set(_WORD.findall(message))
    spaced = " " + " ".join(_WORD.findall(message.lower())) + " "
    got = message.split("expected", 1)[0]
    codes = {int(n) for n in _CODE.findall(got)}
    hits = set()
    for f in e.fields:
        leaf = _leaf(f.name)
        named = f.name in words or (len(leaf) > 2 and leaf in words)
        spelled = "_" in leaf and f" {leaf.lower().replace('_', ' ')} " in spaced
        number = f.value.split(" ", 1)[0]
        returned = (
            _is_error_field(f.name, errors)
            and number.lstrip("-").isdigit()
            and int(number) in codes
        )
        if named or spelled or returned:
            hits.add(f.name)
    return hits
