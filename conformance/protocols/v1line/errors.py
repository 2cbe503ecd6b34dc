"""The V1 line protocol's errors, all :class:`~conformance.errors.ProtocolError`.

A request either parses or raises one of these (the fuzz harness relies on it):

* :class:`BadRequest` (``BAD_REQUEST``): the envelope is malformed (seed l.63-68) or a
  command's arguments break its grammar (seed l.72-79).  Its reply carries correlation
  id ``0`` in every case (seed l.34-36; DESIGN: "parse errors always use correlation id
  0").  ``stage`` says which check refused it, and ``request_correlation_id`` keeps the
  id the line carried when the envelope was readable, so a handler that must echo it
  (if SPEC.md decides so for argument errors) has it.
* :class:`UnknownCommand` (``UNKNOWN_COMMAND``, seed l.56): a well-formed envelope naming
  a command the broker does not have; answered with the request's correlation id.

:class:`BadReply` is the suite's: a broker reply the codec cannot read.  It has no wire
reply of its own.
"""

from __future__ import annotations

from typing import Literal

from conformance.errors import ProtocolError

BAD_REQUEST = "BAD_REQUEST"
UNKNOWN_COMMAND = "UNKNOWN_COMMAND"
REPLICATION_TIMEOUT = "REPLICATION_TIMEOUT"
NOT_LEADER = "NOT_LEADER"
GENERATION_MISMATCH = "GENERATION_MISMATCH"
ERROR_CODES = (BAD_REQUEST, UNKNOWN_COMMAND, REPLICATION_TIMEOUT, NOT_LEADER, GENERATION_MISMATCH)
"""The error codes of the document (seed l.52-59), in its order."""

PARSE_ERROR_CORRELATION_ID = "0"
"""The correlation id of every BAD_REQUEST reply (seed l.34-36)."""

Stage = Literal["envelope", "args"]


def error_line(correlation_id: str, code: str, message: str) -> bytes:
    """``V1|<corr>|ERR|<code>|<message>\\n``, the message kept to one line."""
    # An error message is one line: a newline in it would end the reply early.
    flat = message.replace("\r", " ").replace("\n", " ")
    return f"V1|{correlation_id}|ERR|{code}|{flat}\n".encode()


class V1LineError(ProtocolError):
    """A request the broker refuses before any handler runs; ``reply_line()`` is the
    whole reply (``V1|<corr>|ERR|<code>|<message>\\n``)."""

    code: str

    def __init__(self, message: str, correlation_id: str) -> None:
        super().__init__(message)
        self.message = message
        self.correlation_id = correlation_id
        """The correlation id the reply carries."""

    def reply_line(self) -> bytes:
        return error_line(self.correlation_id, self.code, self.message)


class BadRequest(V1LineError):
    """``BAD_REQUEST``: always answered with correlation id 0."""

    code = BAD_REQUEST

    def __init__(
        self,
        message: str,
        *,
        stage: Stage = "envelope",
        request_correlation_id: str | None = None,
    ) -> None:
        super().__init__(message, PARSE_ERROR_CORRELATION_ID)
        self.stage: Stage = stage
        self.request_correlation_id = request_correlation_id
        """The correlation id the line carried, when its envelope could be read."""


class UnknownCommand(V1LineError):
    """``UNKNOWN_COMMAND``: answered with the request's own correlation id."""

    code = UNKNOWN_COMMAND

    def __init__(self, command: str, correlation_id: str) -> None:
        shown = command if len(command) <= 40 else command[:40] + "..."
        super().__init__(f"unknown command {shown!r}", correlation_id)
        self.command = command


class BadReply(ProtocolError):
    """A broker reply line the codec cannot read (the suite's error)."""
