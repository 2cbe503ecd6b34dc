"""Wire-log entries of the report model, read for people: bytes, hex rows, fields, evidence.

A wire-log entry in ``results.json`` keeps the first ``wire_keep`` bytes of a frame as hex,
its real length, a one-line summary and, from the protocol's frame annotator, the fields
found in those bytes (``[name, start, end, value]``).  Every report shows entries through
the helpers here, so the terminal, HTML, JUnit and Allure show the same bytes, the same
field names and the same "cut" marker.

**Evidence is the check's, never guessed.**  A FAIL or WARN case names the entries its
verdict was decided on (``"evidence": [{"entry": 3, "fields": ["error_code"]}, ...]``: the
request, then the reply or the close) and the field(s) it judged; :func:`evidence` reads
exactly those, and reports highlight exactly those fields.  A case without evidence (older
results) shows its wire log with nothing highlighted.

A *compact* case (``"wire_compact": true``, the default for passing cases) kept each
entry's summary and length but no bytes: its entries are :attr:`Entry.compact` and no
report calls their bytes missing.

Which field holds an error code, and the name of each code, is the protocol's to say
(:attr:`conformance.plugin.Plugin.error_codes`, found by :func:`error_codes` from the
results' protocol): such a field is shown with its name (``3 UNKNOWN_TOPIC_OR_PARTITION``).
A field whose last name part holds ``magic`` is shown in hex (``0x02``).  Offsets are hex
everywhere (``[0x22..0x2a)``); lengths are decimal and say ``bytes``.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance import protocols
from conformance.evidence import fields_named
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

    @property
    def span(self) -> str:
        """``[0x22..0x2a)``: where the field's bytes are, in hex like the dump's offsets."""
        return f"[0x{self.start:02x}..0x{self.end:02x})"


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
    compact: bool = False
    index: int = -1

    @property
    def cut(self) -> bool:
        """The log kept fewer bytes than the frame had (a compact entry kept none on purpose)."""
        return not self.compact and len(self.data) < self.length

    @property
    def cut_note(self) -> str:
        return f"cut: the log kept {len(self.data)} of {self.length} bytes" if self.cut else ""

    def header(self) -> str:
        """``+0.0123s #1 recv 41 bytes  PUBLISH-ACK #3``."""
        when = f"+{self.t:.4f}s" if self.t is not None else ""
        size = f"{self.length} bytes" if self.data or self.length else ""
        parts = [when, f"#{self.conn}" if self.conn else "", self.dir, size, self.summary]
        return " ".join(p for p in parts if p)


@dataclass(frozen=True)
class Evidence:
    """One wire-log entry a verdict was decided on and the fields it judged (names as the
    check gave them; a name need not be in the entry's kept field list)."""

    entry: Entry
    names: tuple[str, ...]

    @property
    def fields(self) -> list[Field]:
        return [f for f in self.entry.fields if f.name in self.names]

    @property
    def unlisted(self) -> list[str]:
        """Judged names the entry's field list does not hold (the list was cut)."""
        found = {f.name for f in self.entry.fields}
        return [n for n in self.names if n not in found]

    @property
    def spans(self) -> list[tuple[int, int]]:
        return [(f.start, f.end) for f in self.fields]


def error_codes(results: Mapping[str, Any]) -> ErrorCodes | None:
    """The error codes of the results' protocol (None for a protocol without numeric
    error codes, or one this installation does not know)."""
    try:
        return protocols.get(str(results.get("protocol") or "")).error_codes
    except protocols.UnknownProtocol:
        return None


def _leaf(name: str) -> str:
    return re.split(r"[.\]\[]", name.rstrip("]"))[-1] or name


def _shown(name: str, value: object, errors: ErrorCodes | None) -> str:
    leaf = _leaf(name).lower()
    if isinstance(value, int) and not isinstance(value, bool):
        if errors is not None and _leaf(name) == errors.field:
            return f"{value} {errors.names.get(value, '(unknown code)')}"
        if "magic" in leaf:
            return f"0x{value:02x}" if value >= 0 else f"-0x{-value:02x}"
    return printable(repr(value) if isinstance(value, str) else value, limit=120)


def entry(
    raw: Mapping[str, Any],
    errors: ErrorCodes | None = None,
    *,
    index: int = -1,
    compact: bool = False,
) -> Entry:
    """One wire-log entry of the results, decoded and made printable; an error-code
    field's value is shown with the code's name, a magic number in hex."""
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
                label = printable(name, one_line=True)
                fields.append(Field(label, start, end, _shown(str(name), value, errors)))
    return Entry(
        t=float(t) if isinstance(t, int | float) and not isinstance(t, bool) else None,
        conn=printable(raw.get("conn") if raw.get("conn") is not None else "", one_line=True),
        dir=printable(raw.get("dir") or "", one_line=True),
        length=length,
        data=data,
        summary=printable(raw.get("summary"), one_line=True, limit=300),
        fields=tuple(fields),
        bad_hex=bad,
        compact=compact and not data and not fields,
        index=index,
    )


def is_compact(case: Mapping[str, Any]) -> bool:
    """The case's wire log kept summaries only (``wire_compact``)."""
    return bool(case.get("wire_compact"))


def entries(case: Mapping[str, Any], errors: ErrorCodes | None = None) -> list[Entry]:
    compact = is_compact(case)
    return [
        entry(e, errors, index=i, compact=compact)
        for i, e in enumerate(case.get("wire_log") or [])
        if isinstance(e, dict)
    ]


def evidence(case: Mapping[str, Any], errors: ErrorCodes | None = None) -> list[Evidence]:
    """The entries the case's check decided its verdict on, in the order it named them,
    each with the fields it judged; [] when the case named none (or named only entries its
    wire log does not have)."""
    logged = case.get("wire_log") or []
    compact = is_compact(case)
    found = []
    for item in case.get("evidence") or []:
        if not isinstance(item, dict):
            continue
        at = item.get("entry")
        if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at < len(logged):
            continue
        if not isinstance(logged[at], dict):
            continue
        names = tuple(printable(n, one_line=True) for n in item.get("fields") or [])
        e = entry(logged[at], errors, index=at, compact=compact)
        found.append(Evidence(e, resolved(names, e.fields)))
    return found


def resolved(names: tuple[str, ...], fields: tuple[Field, ...]) -> tuple[str, ...]:
    """The field names a check's judged names stand for: a name that is a field is itself;
    an array judged as a whole (``responses``) is its count (``responses count``); a struct
    judged as a whole (``responses[0]``) is every field under it
    (:func:`conformance.evidence.fields_named`); a name that matches nothing stays as it is
    (the reports say it is not in the kept field list)."""
    listed = [f.name for f in fields]
    out: list[str] = []
    for name in names:
        found = fields_named(name, listed) or [name]
        out += [n for n in found if n not in out]
    return tuple(out)


def pairs(found: list[Evidence]) -> list[list[Evidence]]:
    """Evidence in request/reply pairs: a sent frame with the entry after it (a reply, a
    close); an entry with no request before it stands alone."""
    out: list[list[Evidence]] = []
    for ev in found:
        if out and out[-1][0].entry.dir == "send" and len(out[-1]) == 1 and ev.entry.dir != "send":
            out[-1].append(ev)
        else:
            out.append([ev])
    return out


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
    return f"{f.name} = {f.value}  {f.span}"


def entry_lines(e: Entry, *, judged: tuple[str, ...] = ()) -> list[str]:
    """An entry as text: header, hex dump, cut marker, fields (judged ones marked ``>``)."""
    lines = [e.header()]
    if e.compact:
        return lines
    lines += ["    " + line for line in dump(e.data)]
    if e.cut:
        lines.append(f"    ({e.cut_note})")
    lines += [("  > " if f.name in judged else "    . ") + field_line(f) for f in e.fields]
    listed = {f.name for f in e.fields}
    lines += [f"  > {n} (judged; not in the kept field list)" for n in judged if n not in listed]
    return lines


def evidence_text(case: Mapping[str, Any], errors: ErrorCodes | None = None) -> str:
    """The case's evidence as text (the judged fields marked ``>``), or '' when it named none."""
    lines: list[str] = []
    for ev in evidence(case, errors):
        lines += entry_lines(ev.entry, judged=ev.names)
    return "\n".join(lines)


def render_text(
    case: Mapping[str, Any],
    *,
    max_entries: int | None = None,
    errors: ErrorCodes | None = None,
    summaries_only: bool = False,
) -> str:
    """The whole kept wire log of ``case`` as text: a header per entry, its hex dump, its
    fields, and a marker where the log cut a frame; with ``summaries_only`` (or for a
    compact case) one header line per entry."""
    lines: list[str] = []
    logged = entries(case, errors)
    shown = logged if max_entries is None else logged[:max_entries]
    judged: dict[int, tuple[str, ...]] = {}
    for ev in evidence(case, errors):
        judged[ev.entry.index] = judged.get(ev.entry.index, ()) + ev.names
    for e in shown:
        if summaries_only:
            lines.append(e.header())
        else:
            lines += entry_lines(e, judged=judged.get(e.index, ()))
    if len(shown) < len(logged):
        lines.append(f"({len(logged) - len(shown)} more wire-log entries left out)")
    return "\n".join(lines)
