"""Iggy's classic framing and payload codec, sans-IO (no socket, no asyncio).

Limits first:

* :data:`MAX_CONTROL_PAYLOAD`: 10 MiB, the real server's limit on a request payload
  other than SEND_MESSAGES (SV/binary/dispatch.rs ``MAX_CONTROL_FRAME_PAYLOAD``);
  :func:`decode_request` refuses a larger one.
* :data:`MAX_FRAME`: the largest length field a deframer accepts (either direction),
  checked as soon as its four bytes are in, before any payload is buffered.  SEND_MESSAGES
  is exempt from the 10 MiB limit on the server, so this is larger.

Frames (all little-endian; FACTS.md section 1):

* request: ``[u32 length = 4 + payload][u32 code][payload]``; a request deframer hands out
  ``code + payload`` (the length dropped), split by :func:`split_request`;
* reply: ``[u32 status][u32 length = payload][payload]``; a reply deframer hands out
  ``status + payload`` (the length dropped), split by :func:`split_reply`.

Payloads come from the declarations of :mod:`.messages` (SEND_MESSAGES and the
POLL_MESSAGES reply whole, their index table checked against their messages), one per
command, encoded and decoded by the schema machinery alone.  Every decoder returns a value or raises
:class:`~.errors.IggyError`; encoders raise ValueError for a value that does not fit.
Decoding is strict by default: bytes after a payload are an IggyError, where the real
server only logs them and goes on (FACTS.md section 1, "payload decode failure"); a
broker that mimics it decodes with ``strict=False`` (:func:`decode_request`).

Revisions (:func:`tables`): ``classic`` (:mod:`.messages`) and ``doc`` (:mod:`.doc`).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance.errors import ProtocolError
from conformance.protocols.iggy import batch as batch  # re-exported: codec.batch.encode_message
from conformance.protocols.iggy import doc
from conformance.protocols.iggy.errors import IggyError, IggyFrameTooLarge, UnknownCommand
from conformance.protocols.iggy.messages import NAMES, REQUESTS, VERSION
from conformance.protocols.iggy.replies import OPTIONAL_REPLIES, REPLIES
from conformance.wire.framing import LengthPrefixDeframer
from conformance.wire.schema import Message

MAX_CONTROL_PAYLOAD = 10 * 1024 * 1024
MAX_FRAME = 64 * 1024 * 1024
U32 = struct.Struct("<I")
HEAD = struct.Struct("<II")
STATUS_OK = 0

# ------------------------------------------------------------------ framing


def frame_request(code: int, payload: bytes, length: int | None = None) -> bytes:
    """``[u32 4 + len(payload)][u32 code][payload]``; ``length`` (a fuzzer's) overrides
    the length field, as its 32-bit two's complement."""
    value = len(payload) + 4 if length is None else length
    return HEAD.pack(value & 0xFFFFFFFF, code) + payload


def frame_reply(status: int, payload: bytes = b"", length: int | None = None) -> bytes:
    """``[u32 status][u32 len(payload)][payload]`` (an error reply: status, length 0)."""
    value = len(payload) if length is None else length
    return HEAD.pack(status, value & 0xFFFFFFFF) + payload


def split_request(frame: bytes) -> tuple[int, bytes]:
    """A request deframer's frame (``code + payload``) as ``(code, payload)``."""
    if len(frame) < 4:
        raise IggyError(f"a request of {len(frame)} bytes has no u32 code (length < 4)")
    return U32.unpack_from(frame)[0], frame[4:]


def split_reply(frame: bytes) -> tuple[int, bytes]:
    """A reply deframer's frame (``status + payload``) as ``(status, payload)``."""
    if len(frame) < 4:
        raise IggyError(f"a reply of {len(frame)} bytes has no u32 status")
    return U32.unpack_from(frame)[0], frame[4:]


def new_deframer(direction: str = "request", max_frame: int = MAX_FRAME) -> LengthPrefixDeframer:
    """Frames of one direction, each without its length field: a request's ``[length][code
    + payload]`` (the length counts the code) or a reply's ``[status][length][payload]``
    handed out as ``status + payload``.  The shared length-prefix deframer, little-endian,
    with the status as the reply's ``lead``."""
    if direction not in ("request", "reply"):
        raise ValueError(f"no direction {direction!r}")
    return LengthPrefixDeframer(
        order="<", max_frame=max_frame, lead=4 if direction == "reply" else 0
    )


@dataclass(frozen=True)
class IggyFraming:
    """Iggy's framing both ways, in the shape of :class:`conformance.wire.framing.Framing`:
    a frame's payload is ``code + payload`` (request) or ``status + payload`` (reply)."""

    limit: int = MAX_FRAME

    def frame(self, payload: bytes, direction: str = "request", length: int | None = None) -> bytes:
        head, body = payload[:4].ljust(4, b"\0"), payload[4:]
        (first,) = U32.unpack(head)
        if direction == "reply":
            return frame_reply(first, body, length)
        return frame_request(first, body, length)

    def deframer(self, direction: str = "request") -> LengthPrefixDeframer:
        return new_deframer(direction, self.limit)


# ------------------------------------------------------------------ payloads


REVISIONS = ("classic", "doc")


def tables(revision: str) -> tuple[Mapping[str, Message], Mapping[str, Message]]:
    """The request and reply declarations of ``revision`` (``classic`` or ``doc``)."""
    if revision not in REVISIONS:
        raise ValueError(f"Iggy has no revision {revision!r}; known: {', '.join(REVISIONS)}")
    if revision == "doc":
        return doc.REQUESTS, doc.REPLIES
    return REQUESTS, REPLIES


def _name_of(code: int, revision: str) -> str:
    name = NAMES.get(code)
    if name is None or name not in tables(revision)[0]:
        raise UnknownCommand(f"no declaration for command code {code}")
    return name


def _declared(table: Mapping[str, Message], name: str) -> Message:
    declaration = table.get(name)
    if declaration is None:
        raise UnknownCommand(f"no declaration for {name!r}")
    return declaration


def _decode(declaration: Message, data: bytes, whole: bool) -> tuple[dict[str, Any], int]:
    try:
        value, end = declaration.decode_at(data, VERSION)
    except ProtocolError as exc:
        raise IggyError(f"{declaration.name}: {exc}") from exc
    if whole and end != len(data):
        raise IggyError(f"{declaration.name}: {len(data) - end} bytes after it")
    return value, end


def encode_request(name: str, body: Mapping[str, Any], revision: str = "classic") -> bytes:
    """The request payload of command ``name`` (no frame).  SEND_MESSAGES takes
    ``stream``, ``topic``, ``partitioning`` and ``messages`` (:data:`~.messages.MESSAGE`)."""
    return _declared(tables(revision)[0], name).encode(body, VERSION)


def decode_request(
    frame: bytes, revision: str = "classic", *, strict: bool = True
) -> tuple[str, dict[str, Any]]:
    """A request deframer's frame (``code + payload``) as ``(command name, body)``.
    ``strict``: bytes after the payload are an IggyError; without it they are ignored,
    as the real server does (it only logs them; FACTS.md section 1)."""
    code, payload = split_request(frame)
    name = _name_of(code, revision)
    if name != "send_messages" and len(payload) > MAX_CONTROL_PAYLOAD:
        raise IggyFrameTooLarge(len(payload), MAX_CONTROL_PAYLOAD)
    return name, decode_request_payload(name, payload, revision, strict=strict)


def decode_request_payload(
    name: str, payload: bytes, revision: str = "classic", *, strict: bool = True
) -> dict[str, Any]:
    """The body of command ``name``'s request ``payload`` (``strict``: see
    :func:`decode_request`)."""
    return _decode(_declared(tables(revision)[0], name), payload, whole=strict)[0]


def encode_reply(name: str, body: Mapping[str, Any] | None, revision: str = "classic") -> bytes:
    """The reply payload of command ``name`` (status 0; no frame).  ``None`` is the empty
    reply of a thing not found (:data:`~.replies.OPTIONAL_REPLIES`)."""
    declaration = _declared(tables(revision)[1], name)
    if body is None:
        if name not in OPTIONAL_REPLIES:
            raise ValueError(f"{name} has no empty reply")
        return b""
    return declaration.encode(body, VERSION)


def decode_reply(name: str, payload: bytes, revision: str = "classic") -> dict[str, Any] | None:
    """The reply payload (status 0) of command ``name``; ``None`` for the empty reply of
    a thing not found."""
    declaration = _declared(tables(revision)[1], name)
    if name in OPTIONAL_REPLIES and not payload:
        return None
    return _decode(declaration, payload, whole=True)[0]
