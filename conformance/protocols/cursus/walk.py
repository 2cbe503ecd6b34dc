"""A tolerant walk over the bytes of a batch: where each field is, whatever the bytes say.

The codec refuses a malformed batch at its first fault; the fault quirks of the broker
and the fuzzer's minimizer need to look further: which message has a negative payload
length, where each message begins and ends.  :func:`walk` follows ``BATCH_HEADER`` and
``MESSAGE_FIELDS`` and never raises: it stops at the end of the data, at a length that
points past it, or at a negative length (the rest of the data is then that field's).
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.protocols.cursus.messages import BATCH_HEADER, MAGIC, MESSAGE_FIELDS

FIXED_SIZES = {"u8": 1, "u16": 2, "i32": 4, "i64": 8}
LENGTH_SIZES = {"str16": 2, "bytes32": 4}


@dataclass(frozen=True)
class Span:
    name: str
    kind: str
    message: int
    """-1 for a header field, else the message's position in the batch."""
    start: int
    end: int
    value: int
    """The integer (for a length-prefixed field: its length, possibly negative)."""


@dataclass(frozen=True)
class Walk:
    spans: tuple[Span, ...]
    complete: bool
    """Every declared field of every message was found within the data."""

    def field(self, name: str, message: int = -1) -> Span | None:
        for s in self.spans:
            if s.name == name and s.message == message:
                return s
        return None

    def messages(self) -> list[tuple[int, int]]:
        """(start, end) of each message found (the last may run to the end of the data)."""
        out: dict[int, tuple[int, int]] = {}
        for s in self.spans:
            if s.message >= 0:
                start, _ = out.get(s.message, (s.start, s.end))
                out[s.message] = (start, s.end)
        return [out[i] for i in sorted(out)]


def walk(data: bytes) -> Walk | None:
    """The spans of ``data`` as a batch, or None if it does not start with the magic."""
    if data[:2] != MAGIC.to_bytes(2, "big"):
        return None
    spans: list[Span] = []
    pos = 0

    def step(name: str, kind: str, message: int) -> bool:
        nonlocal pos
        if kind in LENGTH_SIZES:
            size = LENGTH_SIZES[kind]
            if pos + size > len(data):
                return False
            n = int.from_bytes(data[pos : pos + size], "big", signed=kind == "bytes32")
            end = len(data) if n < 0 else pos + size + n
            spans.append(Span(name, kind, message, pos, min(end, len(data)), n))
            pos = end
            return n >= 0 and end <= len(data)
        size = FIXED_SIZES[kind]
        if pos + size > len(data):
            return False
        value = int.from_bytes(data[pos : pos + size], "big", signed=kind in ("i32", "i64"))
        spans.append(Span(name, kind, message, pos, pos + size, value))
        pos += size
        return True

    for name, kind in BATCH_HEADER:
        if not step(name, kind, -1):
            return Walk(tuple(spans), False)
    count = spans[-1].value
    for i in range(max(count, 0)):
        for name, kind in MESSAGE_FIELDS:
            if not step(name, kind, i):
                return Walk(tuple(spans), False)
    return Walk(tuple(spans), count >= 0)


def has_negative_payload_len(data: bytes) -> bool:
    """True when ``data`` is a batch in which some message's payloadLen is negative."""
    found = walk(data)
    return found is not None and any(
        s.name == "payload" and s.value < 0 for s in found.spans if s.message >= 0
    )
