"""Frames read for people through a protocol's annotator, safely.

The plug-in's annotator (:attr:`conformance.plugin.Plugin.annotate`) reads one frame
*payload*.  What the tool holds is sometimes a whole frame (a wire log of what was sent:
raw bytes that may or may not be one frame) and the annotator may fail on strange bytes;
these helpers take care of both, so that a report or a wire log never breaks over a frame:

* :func:`annotate_payload` never raises: an annotator that does gives a plain summary
  (the payload's size) and no fields;
* :func:`annotate_frame` reads ``data`` as one whole frame when the protocol's framing
  says it is one (summary ``frame: <the payload's>``; its framing bytes become a
  ``length`` field before the payload, or a ``terminator`` after it), else as raw bytes
  (summary ``raw N bytes``: a split or lying frame) whose fields are read as a payload.
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
    if not payload:
        return Annotation("an empty frame", [FieldSpan("framing", 0, len(data), "an empty frame")])
    read = annotate_payload(plugin, payload, direction, earlier)
    summary = f"frame: {read.summary}"
    if data.startswith(payload):  # framing after the payload: a line's terminator
        tail = FieldSpan("terminator", len(payload), len(data), data[len(payload) :])
        return Annotation(summary, [*read.fields, tail])
    head = len(data) - len(payload)  # framing before it: a length prefix, a header
    return Annotation(
        summary, [FieldSpan("length", 0, head, len(payload)), *shifted(read.fields, head)]
    )


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
