"""Panics in a target's output: what a crashing (or wounded) broker prints, found and named.

A target started by the tool (``--target-cmd``) has its output read line by line
(:mod:`conformance.supervisor`).  :func:`find` looks through the lines a case or a fuzz
input caused for the first one that a broker prints when something inside it broke, and
names it by a *signature* that stays the same from one occurrence to the next (a location
in the source where the output gives one, never an address or a value):

==================  ===========================================  ============================
kind                a line like                                  signature from
==================  ===========================================  ============================
Go panic            ``panic: runtime error: ...``, or            the first frame outside
                    ``fatal error: ...`` before a goroutine dump Go's runtime (``file.go:42``)
Rust panic          ``thread 'main' panicked at src/x.rs:4:9:``  that location (``src/x.rs:4``)
Java exception      ``Exception in thread "t" java.io.X: ...``   the class and the top ``at``
                    (uncaught: a thread died of it)              frame
Python traceback    ``Traceback (most recent call last):``       the exception class and the
                                                                 last ``File`` line
sanitizer           ``==12==ERROR: AddressSanitizer: ...``       the report's kind and frame #0
assertion           ``Assertion `x' failed.``,                   the line, numbers as N
                    ``assertion failed: ...``
out of memory       ``out of memory``, ``MemoryError``           the line, numbers as N
==================  ===========================================  ============================

These are the documented default, chosen so that a broker's ordinary logs do not match: a
Java exception that a broker logs with its stack and handles (Kafka's "Closing socket ...
because of error") is no panic, only one that ended a thread; "running out of memory" is
no out-of-memory message.  ``--panic-pattern REGEX`` (``run``, ``fuzz``, ``replay``) adds
patterns of the user's own,
of kind ``pattern``, whose signature is the matching line with its numbers as N (numbers,
hex words with a digit in them and UUIDs, so that a name a case made up is N too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

EXCERPT_LINES = 40
"""Lines of output kept from the panic's first line on."""


@dataclass(frozen=True)
class Panic:
    kind: str
    line: str
    """The first line of the panic, as printed."""
    signature: str
    excerpt: tuple[str, ...]
    """The panic's lines (its stack), from :attr:`line` on."""

    def describe(self) -> str:
        return f"{self.kind}: {self.line.strip()}"


_GO = re.compile(r"^(panic: |fatal error: )")
_GO_FRAME = re.compile(r"^\s+(\S+\.go):(\d+)")
_RUST = re.compile(r"thread '[^']*' panicked at (?:'.*', )?([^\s:]+):(\d+)(?::\d+)?")
_JAVA_HEAD = re.compile(r"^Exception in thread \"[^\"]*\" ((?:[\w$]+\.)+[\w$]+)")
_JAVA_AT = re.compile(r"^\s+at (\S+\([^)]*\))")
_PY_HEAD = re.compile(r"^Traceback \(most recent call last\):")
_PY_FILE = re.compile(r"^\s+File \"([^\"]*)\", line (\d+), in (\S+)")
_PY_EXC = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")
_SANITIZER = re.compile(r"^==\d+==ERROR: (\w+Sanitizer): ([\w-]+)")
_SAN_FRAME = re.compile(r"^\s+#0 0x[0-9a-f]+ in (\S+)(?: (\S+?))?(?::\d+)?$")
_ASSERT = re.compile(r"Assertion `.*' failed|assertion failed|AssertionError", re.IGNORECASE)
_OOM = re.compile(r"(?<!running )out of memory|\bMemoryError\b|OutOfMemoryError", re.IGNORECASE)
_GO_DUMP = re.compile(r"^(goroutine \d+ \[|runtime stack:)")
_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\b(?=[\w-]*\d)[0-9a-fA-F]+(?:-[0-9a-fA-F]+)*\b|\d+")
GO_DUMP_WITHIN = 8
"""Lines after ``fatal error:`` within which Go's goroutine dump begins."""


def _numbers_as_n(text: str) -> str:
    return _NUMBERS.sub("N", text.strip())


def _go(lines: Sequence[str], at: int) -> str:
    frames = [
        m for line in lines[at + 1 :] if (m := _GO_FRAME.match(line)) and "/runtime/" not in line
    ]
    if frames:
        path, number = frames[0].groups()
        return f"Go panic at {path.rsplit('/', 1)[-1]}:{number}"
    return f"Go panic: {_numbers_as_n(lines[at])}"


def _java(lines: Sequence[str], at: int, cls: str) -> str:
    for line in lines[at + 1 :]:
        m = _JAVA_AT.match(line)
        if m:
            return f"{cls} at {m.group(1)}"
    return cls


def _go_dump_follows(lines: Sequence[str], at: int) -> bool:
    """Go's goroutine dump begins within a few lines (a Go runtime's ``fatal error:``)."""
    return any(_GO_DUMP.match(x) for x in lines[at + 1 : at + 1 + GO_DUMP_WITHIN])


def _python(lines: Sequence[str], at: int) -> str:
    where = ""
    for line in lines[at + 1 :]:
        m = _PY_FILE.match(line)
        if m:
            path, number, func = m.groups()
            where = f" at {path.rsplit('/', 1)[-1]}:{number} in {func}"
            continue
        if line.startswith((" ", "\t")) or not line.strip():
            continue
        exc = _PY_EXC.match(line)
        return f"{exc.group(1) if exc else 'Python exception'}{where}"
    return f"Python exception{where}"


def _sanitizer(lines: Sequence[str], at: int, name: str, what: str) -> str:
    for line in lines[at + 1 :]:
        m = _SAN_FRAME.match(line)
        if m:
            return f"{name} {what} in {m.group(1)}"
    return f"{name} {what}"


def _match(lines: Sequence[str], at: int, extra: Sequence[re.Pattern[str]]) -> Panic | None:
    """The panic whose first line is ``lines[at]``, if it is one."""
    line = lines[at]
    kind = signature = ""
    if _GO.match(line) and (line.startswith("panic: ") or _go_dump_follows(lines, at)):
        kind, signature = "Go panic", _go(lines, at)
    elif m := _RUST.search(line):
        kind, signature = "Rust panic", f"Rust panic at {m.group(1)}:{m.group(2)}"
    elif m := _JAVA_HEAD.match(line):
        kind, signature = "Java exception", _java(lines, at, m.group(1))
    elif _PY_HEAD.match(line):
        kind, signature = "Python traceback", _python(lines, at)
    elif m := _SANITIZER.match(line):
        kind, signature = "sanitizer", _sanitizer(lines, at, m.group(1), m.group(2))
    elif _ASSERT.search(line):
        kind, signature = "assertion", f"assertion: {_numbers_as_n(line)}"
    elif _OOM.search(line):
        kind, signature = "out of memory", f"out of memory: {_numbers_as_n(line)}"
    elif any(p.search(line) for p in extra):
        kind, signature = "pattern", f"pattern: {_numbers_as_n(line)}"
    if not kind:
        return None
    return Panic(kind, line, signature, tuple(lines[at : at + EXCERPT_LINES]))


def find(lines: Sequence[str], extra: Sequence[re.Pattern[str]] = ()) -> Panic | None:
    """The first panic in ``lines`` (a case's or an input's share of the output), if any."""
    for at in range(len(lines)):
        found = _match(lines, at, extra)
        if found is not None:
            return found
    return None


def compile_patterns(texts: Sequence[str]) -> list[re.Pattern[str]]:
    """``--panic-pattern`` values as regular expressions; ValueError naming a bad one."""
    out = []
    for text in texts:
        try:
            out.append(re.compile(text))
        except re.error as exc:
            raise ValueError(
                f"--panic-pattern {text!r} is not a regular expression: {exc}"
            ) from None
    return out
