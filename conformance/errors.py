"""The one error family of the sans-IO layers.

Every decoder in the project either returns a message or raises a subclass of
:class:`ProtocolError`; nothing else escapes a codec for any input (the fuzz
harnesses rely on that).  ``FrameTooLarge`` is raised by deframers before any
buffer for the oversize payload is allocated.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """Input that does not follow the wire protocol."""


class FrameTooLarge(ProtocolError):
    """A length prefix (or an unterminated line) exceeds the configured limit."""

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(f"frame length {length} exceeds the limit of {limit} bytes")
        self.length = length
        self.limit = limit


class Truncated(ProtocolError):
    """A structure ended before all of its fields were read."""


class TrailingBytes(ProtocolError):
    """Bytes were left over after a structure that must fill its whole frame."""
