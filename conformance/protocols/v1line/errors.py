"""The V1 line protocol's errors, all :class:`~conformance.errors.ProtocolError`.

A request either parses or raises one of these (the fuzz harness relies on it):

* :class:`BadRequest` (``BAD_REQUEST``): ``stage`` says which check refused it.  An
  ``envelope`` error (V1L-ENV-5 to -10) is a parse error, answered with correlation id
  ``0`` (V1L-ENV-11); ``request_correlation_id`` keeps the id the line carried, when it
  could be read, for diagnostics.  An ``args`` error (a command's arguments break its
  grammar: V1L-ENV-15, -16, V1L-PROD-3, -5, -6, -7, V1L-REPL-2, -3, V1L-GRP-7, -8) is
  answered with the request's correlation id.
* :class:`UnknownCommand` (``UNKNOWN_COMMAND``, V1L-ENV-14): a well-formed envelope
  naming a command the broker does not have; answered with the request's correlation id.

Messages are the real broker's texts (V1L-ENV-19).

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
"""The correlation id of every parse error's reply (V1L-ENV-11)."""

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
    """``BAD_REQUEST``: a parse error (``stage`` ``envelope``) is answered with correlation
    id 0; an ``args`` error with the request's (``request_correlation_id``, required)."""

    code = BAD_REQUEST

    def __init__(
        self,
        message: str,
        *,
        stage: Stage = "envelope",
        request_correlation_id: str | None = None,
    ) -> None:
        if stage == "args" and request_correlation_id is None:
            raise ValueError("an args error is answered with the request's correlation id")
        corr = request_correlation_id if stage == "args" else PARSE_ERROR_CORRELATION_ID
        super().__init__(message, corr or PARSE_ERROR_CORRELATION_ID)
        self.stage: Stage = stage
        self.request_correlation_id = request_correlation_id
        """The correlation id the line carried, when its envelope could be read."""


class UnknownCommand(V1LineError):
    """``UNKNOWN_COMMAND``: answered with the request's own correlation id."""

    code = UNKNOWN_COMMAND

    def __init__(self, command: str, correlation_id: str) -> None:
        super().__init__("unsupported command", correlation_id)
        self.command = command


class BadReply(ProtocolError):
    """A broker reply line the codec cannot read (the suite's error)."""
