"""Structural shrinking: smaller variants of a payload, read off its annotation.

The minimizer (:mod:`conformance.fuzz.minimize`) first tries cuts that keep a payload
well formed, found from the fields the protocol's annotator names
(:class:`conformance.plugin.FieldSpan`): an item of a counted list dropped with its count
rewritten, a length-counted field emptied with its length rewritten to 0, a droppable span
(a token of a text command) cut out.  Only then does it cut bytes blindly.
"""

from __future__ import annotations

from collections.abc import Sequence

from conformance.plugin import FieldSpan


def shrinks(payload: bytes, spans: Sequence[FieldSpan]) -> list[bytes]:
    """Structurally smaller variants of ``payload`` from its annotation, largest cuts
    first: an item dropped (its count rewritten), then a counted field emptied (its length
    rewritten to 0), then a droppable span cut.  Spans outside the payload are ignored."""
    n = len(payload)
    drops: list[bytes] = []
    empties: list[bytes] = []
    cuts: list[bytes] = []
    for s in spans:
        if not 0 <= s.start <= s.end <= n:
            continue
        if s.items and isinstance(s.value, int) and s.value > 0:
            fewer = s.encode(s.value - 1)
            for a, b in s.items:
                if fewer is not None and s.end <= a <= b <= n:
                    cut = payload[:a] + payload[b:]
                    drops.append(cut[: s.start] + fewer + cut[s.end :])
        if s.counts is not None and isinstance(s.value, int) and s.value > 0:
            a, b = s.counts
            zero = s.encode(0)
            if zero is not None and s.end <= a <= b <= n:
                empties.append(payload[: s.start] + zero + payload[s.end : a] + payload[b:])
        if s.droppable and s.end > s.start:
            cuts.append(payload[: s.start] + payload[s.end :])
    return [v for v in dict.fromkeys(drops + empties + cuts) if v != payload]
