"""How a case's wire log reads what it records, through the protocol's annotator.

What the suite sends is raw bytes (a whole request frame when it is one, or a split or
lying frame on purpose); what it receives is a reply payload, read as the answer to the
requests sent before it on the case's connections (the last :data:`REQUESTS_KEPT`), so that
a Kafka reply is named by the request it answers.  Each entry is read once: its summary
and its fields come from one annotation.
"""

from __future__ import annotations

import contextlib
from collections import deque

from conformance.annotation import annotate_frame, annotate_payload
from conformance.errors import ProtocolError
from conformance.plugin import Annotation, FieldSpan, Plugin

REQUESTS_KEPT = 256
"""Requests remembered per case to annotate the replies to them."""


class WireContext:
    """How the wire log of one case describes and annotates what it records: what we send
    is raw bytes (a whole request frame when it is one), what we receive a reply payload,
    read as the answer to the requests sent before it (the last :data:`REQUESTS_KEPT`)."""

    def __init__(self, plugin: Plugin) -> None:
        self.plugin = plugin
        self.sent: deque[bytes] = deque(maxlen=REQUESTS_KEPT)
        self._pending: tuple[str, bytes, Annotation] | None = None

    def describe(self, direction: str, data: bytes) -> str:
        read = self._read(direction, data)
        self._pending = (direction, data, read)  # the wire log asks for its fields next
        return read.summary

    def fields(self, direction: str, data: bytes) -> list[FieldSpan]:
        pending, self._pending = self._pending, None
        if pending is not None and pending[:2] == (direction, data):
            return pending[2].fields
        return self._read(direction, data).fields

    def _read(self, direction: str, data: bytes) -> Annotation:
        """One entry read (a request sent is remembered as context for the replies)."""
        if direction == "send":
            earlier = tuple(self.sent)
            with contextlib.suppress(ProtocolError):  # not a frame: no reply context
                self.sent.extend(self.plugin.framing.deframer("request").feed(data))
            return annotate_frame(self.plugin, data, "request", earlier)
        return annotate_payload(self.plugin, data, "reply", tuple(self.sent))
