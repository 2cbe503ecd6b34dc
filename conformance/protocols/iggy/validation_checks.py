"""What ``serve --validate`` reads in one Iggy client connection (sans-IO).

:class:`IggyChecker` is the :class:`~conformance.validate.contract.ConnectionChecker` of
one connection: each request payload (``u32 code + payload``, as the broker's deframer
hands it out) is judged against the client requirements of SPEC.md (``## client: ...``,
IDs ``IGG-CLI-N``) in this order:

1. a frame the broker's deframer already refused (a length below 4, a control payload
   over 10 MiB: :class:`~.broker_wire.Refused`): IGG-CLI-1 or IGG-CLI-2, nothing more;
2. the command code: one the revision defines (IGG-CLI-3), else the request is kind
   ``UNKNOWN`` and nothing more is read;
3. classic only, the login gate: anything but PING and LOGIN_USER before this
   connection's login was answered 0, or after a LOGOUT_USER or a status 40 (IGG-CLI-7);
4. the payload, decoded strictly (IGG-CLI-4; what does not decode is blamed on its
   field where it names one: an Identifier IGG-CLI-5, a name's UTF-8 IGG-CLI-6, the
   Partitioning or the index table IGG-CLI-8), then its fields: Identifiers and names
   (IGG-CLI-5, -6), messages and user headers (IGG-CLI-8, -9), the polling strategy and
   count (IGG-CLI-10, -11), the partition against what the client was told (IGG-CLI-12);
5. a request identical to one that got the same error three times in a row (IGG-CLI-13).

What spans connections (each topic's partitions count as the replies described it, the
requests that keep failing) is :class:`Knowledge`, one per validation.  The checker's
:meth:`IggyChecker.reply` feeds it and the login state from every reply the client gets.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from typing import Any

from conformance.errors import ProtocolError
from conformance.protocols.iggy import codec
from conformance.protocols.iggy.annotate import annotate
from conformance.protocols.iggy.broker_wire import INVALID, Refused, scan_identifiers
from conformance.protocols.iggy.errors import NAMES as STATUS_NAMES
from conformance.protocols.iggy.errors import UNAUTHENTICATED
from conformance.protocols.iggy.messages import NAMES
from conformance.protocols.iggy.validation_fields import (
    IDENTIFIER_KEYS,
    NAME_KEYS,
    Knowledge,
    check_fields,
    id_text,
    identity,
    partition_named,
)
from conformance.validate.contract import Seen, Violation

UNGATED = frozenset({"ping", "login_user"})
RESEND_LIMIT = 3
"""Identical error replies in a row after which sending the same request again breaks
IGG-CLI-13."""
_FIELD = re.compile(r"\w+: (?:metadata\.)?(\w+)")
"""The field a decoder's message starts with (``SendMessages: metadata.partitioning: ...``)."""


class IggyChecker:
    """The checker of connection ``conn`` (see the module doc)."""

    def __init__(self, conn: int, revision: str, known: Knowledge) -> None:
        self.conn = conn
        self.revision = revision
        self.classic = revision == "classic"
        self.known = known
        self.requests = codec.tables(revision)[0]
        self.logged_in = False
        self.login_pending = False

    # ------------------------------------------------------------ the contract

    def request(self, payload: bytes, now: float) -> Seen:
        if isinstance(payload, Refused):
            return self._refused(payload)
        code, body_bytes = codec.split_request(payload)
        name = NAMES.get(code)
        if name is None or name not in self.requests:
            rule = "the 0.8 SDK" if self.classic else "the seed's table"
            why = f"command code {code} is not one {rule} defines ({self.revision})"
            return Seen(
                "UNKNOWN",
                f"unknown command code {code}, {len(body_bytes)} payload bytes",
                ("IGG-CLI-3",),
                [Violation("IGG-CLI-3", why, ("code",))],
                target=f"conn {self.conn}",
            )
        kind = name.upper()
        checked = ["IGG-CLI-1", "IGG-CLI-3", "IGG-CLI-4"]
        found: list[Violation] = []
        if self.classic and name not in UNGATED:
            checked.append("IGG-CLI-7")
            if not (self.logged_in or self.login_pending):
                found.append(
                    Violation(
                        "IGG-CLI-7",
                        f"{kind} sent before a LOGIN_USER of connection {self.conn} was "
                        "answered 0 (only PING and LOGIN_USER may come first)",
                        ("code",),
                    )
                )
        if name == "login_user":
            self.login_pending = True
        body = self._decode(name, body_bytes, checked, found)
        if body is not None:
            check_fields(name, body, self.classic, checked, found)
            self._partition(name, body, checked, found)
        self._resend(payload, checked, found)
        return Seen(
            kind,
            _summary(payload, kind),
            tuple(dict.fromkeys(checked)),
            found,
            identity=identity(name, body, body_bytes),
            target=self._target(name, body),
        )

    def reply(self, payload: bytes, request: bytes) -> None:
        if isinstance(request, Refused) or len(payload) < 4 or len(request) < 4:
            return
        status, body = codec.split_reply(payload)
        code, _ = codec.split_request(request)
        name = NAMES.get(code, "")
        if name == "login_user":
            self.login_pending = False
            self.logged_in = status == 0
        elif status == UNAUTHENTICATED or (name == "logout_user" and status == 0):
            self.logged_in = False
        if status != 0:
            self.known.failed(bytes(request), status)
            return
        self.known.failures.pop(bytes(request), None)
        if name in self.requests:
            self._learn(name, request[4:], body)

    def framing(self, error: str) -> Violation:
        return Violation("IGG-CLI-1", f"the broker could not delimit a request: {error}")

    def closed(self, now: float) -> list[Violation]:
        return []

    # ------------------------------------------------------------ steps

    def _refused(self, frame: Refused) -> Seen:
        reason = frame.reason or "refused by the deframer"
        if len(frame) >= 4:  # the code of a control request over 10 MiB
            (code,) = struct.unpack_from("<I", frame)
            kind = NAMES.get(code, "UNKNOWN").upper()
            return Seen(
                kind,
                f"{kind}: {reason}",
                ("IGG-CLI-2",),
                [Violation("IGG-CLI-2", f"{kind}: {reason} (at most 10485760 bytes)", ("code",))],
                target=f"conn {self.conn}",
            )
        return Seen(
            "UNKNOWN",
            f"a request header whose {reason} (no room for the code)",
            ("IGG-CLI-1",),
            [Violation("IGG-CLI-1", f"the {reason}: it must be 4 + the payload's size")],
            target=f"conn {self.conn}",
        )

    def _decode(
        self, name: str, data: bytes, checked: list[str], found: list[Violation]
    ) -> dict[str, Any] | None:
        try:
            return codec.decode_request_payload(name, data, self.revision, strict=True)
        except ProtocolError as exc:
            text = str(exc)
        m = _FIELD.match(text)
        root = m.group(1) if m else ""
        if self.classic and scan_identifiers(name, data) == INVALID:
            checked.append("IGG-CLI-5")
            why = f"an Identifier fails validation (numeric, length not 4): {text}"
            found.append(Violation("IGG-CLI-5", why, (root,) if root else ()))
        elif root in (*IDENTIFIER_KEYS, "consumer") and (" kind " in text or "UTF-8" in text):
            checked.append("IGG-CLI-5")
            found.append(Violation("IGG-CLI-5", text, (root,)))
        elif root in NAME_KEYS and "UTF-8" in text:
            checked.append("IGG-CLI-6")
            found.append(Violation("IGG-CLI-6", text, (root,)))
        elif root in ("partitioning", "index"):
            checked.append("IGG-CLI-8")
            found.append(Violation("IGG-CLI-8", text, (root,)))
        else:
            found.append(Violation("IGG-CLI-4", f"the payload does not decode: {text}"))
        return None

    def _partition(
        self, name: str, body: dict[str, Any], checked: list[str], found: list[Violation]
    ) -> None:
        partition = partition_named(name, body, self.classic)
        if partition is None:
            return
        count = self.known.partitions_of(body)
        if count is None:
            return
        checked.append("IGG-CLI-12")
        if partition >= count:
            what = f"{id_text(body.get('stream'))}/{id_text(body.get('topic'))}"
            found.append(
                Violation(
                    "IGG-CLI-12",
                    f"{name.upper()} names partition {partition} of topic {what}, which was "
                    f"described with {count} partition{'s' if count != 1 else ''}",
                    ("partitioning.value" if name == "send_messages" else "partition_id",),
                )
            )

    def _resend(self, request: bytes, checked: list[str], found: list[Violation]) -> None:
        last = self.known.failures.get(bytes(request))
        if last is None:
            return
        checked.append("IGG-CLI-13")
        status, times = last
        if times >= RESEND_LIMIT:
            label = STATUS_NAMES.get(status, "unknown status")
            found.append(
                Violation(
                    "IGG-CLI-13",
                    f"sent again, byte for byte, after {times} answers of status {status} "
                    f"({label}) in a row",
                )
            )

    def _target(self, name: str, body: dict[str, Any] | None) -> str:
        """What the request is about, on this connection: a request of the same kind on
        another connection (after a reconnect) is a new start, not a retry."""
        if body is None or name == "login_user":
            return f"conn {self.conn}"
        parts = [id_text(body[k]) for k in ("stream", "topic") if k in body]
        partition = partition_named(name, body, self.classic)
        if partition is not None:
            parts.append(f"p{partition}")
        if "group" in body or "consumer_group_id" in body:
            parts.append(f"group {id_text(body.get('group', body.get('consumer_group_id')))}")
        return f"conn {self.conn}: {'/'.join(parts)}"

    def _learn(self, name: str, request: bytes, payload: bytes) -> None:
        """What a successful reply tells about streams and topics."""
        try:
            asked = codec.decode_request_payload(name, request, self.revision, strict=False)
            told = codec.decode_reply(name, payload, self.revision)
        except ProtocolError:
            return
        known = self.known
        if name in ("create_stream", "get_stream") and told is not None:
            known.learn_stream(told)
        elif name == "get_streams" and told is not None:
            for record in told["streams"]:
                known.learn_stream(record)
        elif name in ("create_topic", "get_topic", "get_topics") and told is not None:
            sid = known.stream_id(asked.get("stream"))
            stream = asked.get("stream")
            if sid is None and isinstance(stream, Mapping) and stream.get("kind") == 1:
                sid = int(stream["value"])
            if sid is not None:
                for record in told["topics"] if name == "get_topics" else [told]:
                    known.learn_topic(sid, record)
        elif name in ("delete_topic", "delete_stream"):
            known.forget(asked, stream_too=name == "delete_stream")
        elif name in ("create_partitions", "delete_partitions"):
            by = int(asked.get("partitions_count", 0))
            known.resize(asked, by if name == "create_partitions" else -by)


def _summary(payload: bytes, kind: str) -> str:
    try:
        return annotate(payload, "request", ()).summary
    except Exception:  # the annotator must never cost the check
        return f"{kind}, {len(payload) - 4} payload bytes"
