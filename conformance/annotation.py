"""Frames read for people through a protocol's annotator, safely.

The plug-in's annotator (:attr:`conformance.plugin.Plugin.annotate`) reads one frame
*payload*.  What the tool holds is sometimes a whole frame (a wire log of what was sent:
raw bytes that may or may not be one frame) and the annotator may fail on strange bytes;
these helpers take care of both, so that a report or a wire log never breaks over a frame:

* :func:`annotate_payload` never raises: an annotator that does gives a plain summary
  (the payload's size) and no fields;
* :func:`annotate_frame` reads ``data`` as one whole frame when the protocol's framing
  says it is one (summary ``frame: <the payload's>``), else as raw bytes (summary ``raw N
  bytes``: a split or lying frame) whose fields are read as a payload.  A framing puts
  one block of bytes into its payload: before it (a ``length`` field), after it (a
  ``terminator``), or inside it (``framing``: Iggy's reply length, after its status); the
  payload's fields are moved past that block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from conformance.errors import ProtocolError
from conformance.plugin import Annotation, FieldSpan, Plugin


def annotate_payload(
    plugin: Plugin, payload: bytes, direction: str, earlier: Sequence[bytes] = ()
) -> Annotation:
    try:
        return plugin.annotate(payload, direction, earlier)
    except Exception:  # an annotator must not break a report over a strange frame
        return Annotation(f"{direction} ({len(payload)} bytes)")


def annotate_frame(
    plugin: Plugin, data: bytes, direction: str, earlier: Sequence[bytes] = ()
) -> Annotation:
    """``data`` read as one whole frame going in ``direction``, else as a bare payload."""
    try:
        frames = plugin.framing.deframer(direction).feed(data)
    except ProtocolError:
        frames = []
    if len(frames) != 1 or plugin.framing.frame(frames[0], direction) != data:
        raw = annotate_payload(plugin, data, direction, earlier)
        return Annotation(f"raw {len(data)} bytes", raw.fields)
    payload = frames[0]
    read = annotate_payload(plugin, payload, direction, earlier)
    summary = f"frame: {read.summary}"
    if not payload:
        return Annotation(summary, [FieldSpan("framing", 0, len(data), "an empty frame")])
    at, size = _inserted(plugin, data, payload, direction)
    name = "length" if at == 0 else "terminator" if at == len(payload) else "framing"
    value: object = data[at : at + size] if name == "terminator" else len(payload)
    if name == "length" and size in (2, 4, 8):  # what the wire says (mini-Kafka's counts itself)
        order = getattr(plugin.framing, "order", "big")
        value = int.from_bytes(data[at : at + size], "little" if order == "little" else "big")
    before = [s for s in read.fields if s.end <= at]
    after = [s for s in read.fields if s.end > at]
    block = FieldSpan(name, at, at + size, value)
    return Annotation(summary, [*before, block, *shifted(after, size)])


def _inserted(plugin: Plugin, frame: bytes, payload: bytes, direction: str) -> tuple[int, int]:
    """Where the framing's bytes sit in ``frame``, and how many there are: the bytes that
    stay the same when the framing frames the payload with every byte flipped (a length
    depends on the payload's size only, never on its content).  A framing whose bytes are
    not one block is taken to put them first."""
    size = len(frame) - len(payload)
    flipped = plugin.framing.frame(payload.translate(_FLIPPED), direction)
    if len(flipped) != len(frame) or not frame:
        return 0, size
    # byte i of ``equal`` is 0 where the two frames agree (XOR of the whole frames, in C)
    whole = int.from_bytes(frame, "big") ^ int.from_bytes(flipped, "big")
    equal = whole.to_bytes(len(frame), "big")
    first = equal.find(0)
    if first >= 0 and equal.count(0) == size and equal[first : first + size] == bytes(size):
        return first, size
    return 0, size


_FLIPPED = bytes(0xFF - b for b in range(256))
"""A translation table that flips every bit of a byte."""


def shifted(spans: Sequence[FieldSpan], by: int) -> list[FieldSpan]:
    """``spans`` moved ``by`` bytes later (fields of a payload placed in its frame)."""

    def move(p: tuple[int, int]) -> tuple[int, int]:
        return (p[0] + by, p[1] + by)

    return [
        replace(
            s,
            start=s.start + by,
            end=s.end + by,
            counts=move(s.counts) if s.counts else None,
            items=tuple(move(i) for i in s.items),
        )
        for s in spans
    ]
