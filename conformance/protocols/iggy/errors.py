"""Iggy's one error family: every Iggy decoder returns a value or raises :class:`IggyError`."""

from __future__ import annotations

from conformance.errors import FrameTooLarge, ProtocolError

INVALID_COMMAND = 3
"""The status the real server answers an undecodable frame with (SV/binary/dispatch.rs)."""


class IggyError(ProtocolError):
    """Bytes that are not Iggy's classic protocol; ``status``: what a server answers."""

    status = INVALID_COMMAND


class IggyFrameTooLarge(IggyError, FrameTooLarge):
    """A length prefix over the limit, seen before any of its payload is buffered."""


class UnknownCommand(IggyError):
    """A command code (or name) with no declaration here."""
