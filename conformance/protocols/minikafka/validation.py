"""Mini-Kafka's part of ``serve --validate``: every client frame read against MK-CLI-*.

What a client's request is checked against (SPEC.md, "client: ..." sections), in order:

1. framing (MK-CLI-1): the length counts its own 4 bytes, so a payload is there and
   starts with a type byte; a request whose fields run exactly 4 bytes past its frame was
   framed with the payload's length alone (the document's off-by-4), and the bytes after
   it are not requests: the connection is *out of step* and nothing more is judged on it.
   A length the deframer refuses is below 4 or negative (MK-CLI-1), or over the broker's
   limit (MK-CLI-5, a convention: the document has none).
2. the type byte (MK-CLI-2), then the layout: every field whole (MK-CLI-6), nothing after
   the last one (MK-CLI-3 in ``doc``; in ``real`` only a CONSUME's zero padding, MK-CLI-4);
3. the values: a topic of one byte or more (MK-CLI-7) in UTF-8 (MK-CLI-8 ``doc``, -9
   ``real``), a CONSUME's offset 0 or more (MK-CLI-10) and batch size 1 or more (MK-CLI-11);
4. reading on (MK-CLI-12): the replies a connection got set where its next CONSUME of a
   topic should start: a reply with messages, at its next offset; an empty one, at the same
   offset again (its next offset is undefined in ``doc`` and 1 in ``real``).

Faults: a plan's ``error`` answers the request with its type's error path (the names are
:data:`ERRORS`); after one the client should go on (MK-CLI-16).  A split reply should be
read whole (MK-CLI-13), a late one waited for or given up on (MK-CLI-14), a reset one
followed by a new connection (MK-CLI-15).  A request's *target* (what a next request
must match to count as a retry) is the request itself: a CONSUME's topic and offset, a
PRODUCE's topic and data, so reading the next batch or producing the next message is
"went on", not "retried".
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from conformance.plugin import ServeConfig
from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.protocols.minikafka.annotate import annotate
from conformance.server import Frontend
from conformance.spec import client_requirements
from conformance.validate.contract import Expectation, Seen, Violation
from conformance.validate.reactions import RECONNECTED, RETRIED, WENT_ON

LENGTH = "MK-CLI-1"
TYPE = "MK-CLI-2"
TRAILING_DOC = "MK-CLI-3"
TRAILING_REAL = "MK-CLI-4"
LIMIT = "MK-CLI-5"
FIELDS = "MK-CLI-6"
EMPTY_TOPIC = "MK-CLI-7"
UTF8_DOC = "MK-CLI-8"
UTF8_REAL = "MK-CLI-9"
OFFSET = "MK-CLI-10"
BATCH = "MK-CLI-11"
READ_ON = "MK-CLI-12"
PIECES = "MK-CLI-13"
LATE = "MK-CLI-14"
RECONNECT = "MK-CLI-15"
AFTER_ERROR = "MK-CLI-16"

KINDS = {m.CONSUME_REQUEST: "CONSUME", m.PRODUCE_REQUEST: "PRODUCE", m.FLUSH_REQUEST: "FLUSH"}
UNKNOWN = "UNKNOWN"
"""The kind of a frame with no request type byte (none at all, or another one)."""
INT32_SPAN = 1 << 32
SHOWN_DATA = 24
"""A PRODUCE's data up to this size is shown in its summary (``PRODUCE 'orders' b'm3'``)."""
_NUMBER = re.compile(r"(?:length field|frame length) (-?\d+)")

ErrorText = Callable[[codec.Request], str]


@dataclass(frozen=True)
class ErrorKind:
    """An error a fault may answer with: the request types it fits and its text."""

    kinds: tuple[str, ...]
    text: ErrorText
    why: str


def _topic(request: codec.Request) -> str:
    return str(getattr(request, "topic", ""))


ERRORS: dict[str, ErrorKind] = {
    "UNKNOWN_TOPIC": ErrorKind(
        ("CONSUME",),
        lambda r: f"unknown topic {_topic(r)!r}",
        "a broker that refuses reads of topics it does not have (the reference broker's "
        "unknown-topic-error quirk)",
    ),
    "OFFSET_BEFORE_FIRST_SEGMENT": ErrorKind(
        ("CONSUME",),
        lambda r: f"Offset {getattr(r, 'offset', 0)} is before first segment",
        "the real storage engine's text for a read below its first segment (FACTS.md 3.4)",
    ),
    "LOG_DIRECTORY_FAILED": ErrorKind(
        ("PRODUCE",),
        lambda r: f"Failed to create log directory: {_topic(r)}",
        "the real log manager's text when it cannot make a topic's directory (FACTS.md 3.8)",
    ),
    "FLUSH_FAILED": ErrorKind(
        ("FLUSH",),
        lambda r: "flush failed: No space left on device",
        "a FLUSH whose fsync failed (the reference broker's text)",
    ),
}


class MiniKafkaValidation:
    """The client checks and faults of one ``serve --validate`` (one revision)."""

    def __init__(self, revision: str) -> None:
        self.revision = revision
        self.ids = frozenset(
            r.id for r in client_requirements("minikafka").values() if revision in r.revisions
        )
        self.errors: Mapping[str, Expectation] = {
            name: Expectation(AFTER_ERROR, (RETRIED, WENT_ON), e.why, e.kinds)
            for name, e in ERRORS.items()
        }
        self.actions: Mapping[str, Expectation] = {}
        self.transport: Mapping[str, Expectation] = {
            "split": Expectation(PIECES, (WENT_ON, RETRIED)),
            "slow": Expectation(LATE, (WENT_ON, RETRIED)),
            "reset": Expectation(RECONNECT, (RECONNECTED,)),
        }
        self.next_steps: Mapping[str, str] = {}

    def connection(self, conn: int) -> ConnectionChecker:
        return ConnectionChecker(self)

    def error_reply(self, request: bytes, error: str) -> bytes | None:
        known = ERRORS.get(error)
        if known is None or not request or KINDS.get(request[0]) not in known.kinds:
            return None
        try:
            decoded = codec.decode_request(request, strict=False, lenient_utf8=True)
        except codec.MiniKafkaError:
            return None  # the broker answers a malformed request with its own error
        return codec.encode_reply(codec.failure_for(request[0], known.text(decoded)))

    def act(self, action: str, request: bytes) -> None:
        raise KeyError(f"mini-Kafka has no fault action {action!r}")


class ConnectionChecker:
    """One client connection: its requests in order, and where it should read on."""

    def __init__(self, validation: MiniKafkaValidation) -> None:
        self.v = validation
        self.requests = 0
        self.out_of_step: int | None = None
        """The request after which the stream is out of step (a length of the payload alone)."""
        self.read_from: dict[str, tuple[int, str]] = {}
        """Per topic, where the next CONSUME should start and why (the reply that said so)."""

    # ----------------------------------------------------------------- requests

    def request(self, payload: bytes, now: float) -> Seen:
        self.requests += 1
        if self.out_of_step is not None:
            return Seen(
                UNKNOWN,
                f"{len(payload)} bytes not read: the stream is out of step since request "
                f"{self.out_of_step} (its length did not count its own 4 bytes)",
            )
        found = _Found(self.v.ids)
        if not payload:
            found.add(LENGTH, "length field 4: the frame has no type byte", "framing")
            return found.seen(UNKNOWN, "a frame of length 4 (no type byte)", (LENGTH,))
        kind = KINDS.get(payload[0])
        if kind is None:
            what = m.NAMES.get(payload[0], "no message type")
            found.add(
                TYPE,
                f"type byte 0x{payload[0]:02x} ({what}) is not a request type "
                "(0x01 CONSUME, 0x03 PRODUCE, 0x05 FLUSH)",
                "type",
            )
            return found.seen(UNKNOWN, annotate(payload, "request").summary, (LENGTH, TYPE))
        summary = annotate(payload, "request").summary
        checked = [LENGTH, TYPE, LIMIT, TRAILING_DOC, TRAILING_REAL]
        try:
            request = codec.decode_request(payload, strict=False, lenient_utf8=True)
        except codec.MiniKafkaError as exc:
            checked.append(FIELDS)
            self._malformed(payload, kind, exc, found)
            return found.seen(kind, summary, checked)
        end = _fields_end(request, payload)
        if isinstance(request, codec.Produce) and len(request.data) <= SHOWN_DATA:
            summary = summary.replace(f"{len(request.data)} bytes", f"{request.data!r}", 1)
        self._trailing(payload, kind, end, found)
        identity = None
        if isinstance(request, codec.Consume | codec.Produce):
            checked += [FIELDS, EMPTY_TOPIC, UTF8_DOC, UTF8_REAL]
            raw = payload[5 : 5 + int.from_bytes(payload[1:5], "big")]
            self._topic(raw, found)
            identity = _identity(request)
        if isinstance(request, codec.Consume):
            checked += [OFFSET, BATCH]
            if request.offset < 0:
                found.add(OFFSET, f"CONSUME offset {request.offset} is negative", "offset")
            if request.batch_size < 1:
                found.add(
                    BATCH, f"CONSUME batch size {request.batch_size} is below 1", "batch_size"
                )
            if request.offset >= 0 and self._read_on(request, found):
                checked.append(READ_ON)
        return found.seen(kind, summary, checked, identity=identity, target=identity)

    def _malformed(
        self, payload: bytes, kind: str, exc: codec.MiniKafkaError, found: _Found
    ) -> None:
        if "cut short" in exc.message and _whole_with(payload + bytes(4)):
            found.add(
                LENGTH,
                f"{kind}: length field {len(payload) + 4} frames {len(payload)} bytes and its "
                f"fields run exactly 4 bytes past them ({exc.message.split(': ', 1)[-1]}): the "
                "length counts the payload but not its own 4 bytes, so the 4 bytes after it "
                "are no length",
                "length",
            )
            self.out_of_step = self.requests
            return
        field = exc.message.split(": ", 1)[-1].split(":", 1)[0].strip().removesuffix(" length")
        named = (field, f"{field} length") if field in ("topic", "data") else (field,)
        found.add(FIELDS, exc.message, *named)

    def _trailing(self, payload: bytes, kind: str, end: int, found: _Found) -> None:
        extra = payload[end:]
        if not extra:
            return
        what = f"{kind} carries {len(extra)} bytes after its last field"
        if self.v.revision != "real":
            topic = int.from_bytes(payload[1:5], "big")
            if kind == "CONSUME" and not any(extra) and len(extra) == 3 * topic + 4:
                what += (
                    f", all zero: 3N+4 for its topic of N={topic} bytes, as the real client "
                    "pads (FACTS.md 2.3)"
                )
            found.add(TRAILING_DOC, what, "trailing bytes")
        elif kind != "CONSUME":
            found.add(TRAILING_REAL, f"{what} (only a CONSUME is padded)", "trailing bytes")
        elif any(extra):
            at = next(i for i, b in enumerate(extra) if b)
            found.add(
                TRAILING_REAL,
                f"{what}, not all zero (byte {at} of them is 0x{extra[at]:02x})",
                "trailing bytes",
            )

    def _topic(self, raw: bytes, found: _Found) -> None:
        if not raw:
            found.add(EMPTY_TOPIC, "the topic is empty (topic length 0)", "topic length")
            return
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            why = (
                f"the topic {raw[:40]!r} is not valid UTF-8 (byte {exc.start} is "
                f"0x{raw[exc.start]:02x})"
            )
            found.add(UTF8_REAL if self.v.revision == "real" else UTF8_DOC, why, "topic")

    def _read_on(self, request: codec.Consume, found: _Found) -> bool:
        """Check the CONSUME against where its topic should be read on; False: nothing said."""
        topic = str(request.topic)
        if topic not in self.read_from:
            return False
        wanted, because = self.read_from[topic]
        if request.offset != wanted:
            what = "skips" if request.offset > wanted else "reads again"
            span = (
                f"{wanted}..{request.offset - 1}"
                if request.offset > wanted
                else f"{request.offset}..{wanted - 1}"
            )
            found.add(
                READ_ON,
                f"CONSUME {topic!r} at offset {request.offset} {what} offsets {span}: "
                f"{because}, so it should read on at {wanted}",
                "offset",
            )
        return True

    # ------------------------------------------------------------------ replies

    def reply(self, payload: bytes, request: bytes) -> None:
        if not request or request[0] != m.CONSUME_REQUEST:
            return
        try:
            asked = codec.decode_request(request, strict=False, lenient_utf8=True)
            got = codec.decode_reply(payload)
        except codec.MiniKafkaError:
            return
        if not isinstance(asked, codec.Consume) or not isinstance(got, codec.ConsumeOk):
            return  # an error reply: the client should read the same offset again
        topic = str(asked.topic)
        if got.messages:
            last = got.messages[-1].offset
            self.read_from[topic] = (
                got.next_offset,
                f"the reply to CONSUME at {asked.offset} returned offsets up to {last} and "
                f"next offset {got.next_offset}",
            )
        elif asked.offset >= 0:
            self.read_from[topic] = (
                asked.offset,
                f"the reply to CONSUME at {asked.offset} returned no message",
            )

    def framing(self, error: str) -> Violation:
        got = _NUMBER.search(error)
        value = int(got.group(1)) if got else None
        if self.out_of_step is not None:
            return Violation(
                LENGTH,
                f"the bytes after request {self.out_of_step} (whose length did not count "
                f"itself) read as a length: {error}",
                ("length",),
            )
        if value is not None and value >= INT32_SPAN // 2:
            return Violation(
                LENGTH, f"length field {value - INT32_SPAN} is negative (an int32)", ("length",)
            )
        if "exceeds the limit" in error:
            return Violation(LIMIT, error, ("length",))
        return Violation(LENGTH, error, ("length",))

    def closed(self, now: float) -> list[Violation]:
        return []


class _Found:
    """Violations of one request, kept only for requirements of the revision."""

    def __init__(self, ids: frozenset[str]) -> None:
        self.ids = ids
        self.violations: list[Violation] = []

    def add(self, requirement: str, message: str, *fields: str) -> None:
        if requirement in self.ids:
            self.violations.append(Violation(requirement, message, fields))

    def seen(
        self,
        kind: str,
        summary: str,
        checked: tuple[str, ...] | list[str],
        identity: str | None = None,
        target: str | None = None,
    ) -> Seen:
        reqs = tuple(r for r in dict.fromkeys(checked) if r in self.ids)
        return Seen(kind, summary, reqs, self.violations, identity, target)


def _fields_end(request: codec.Request, payload: bytes) -> int:
    """Where a decoded request's last field ends in its ``payload`` (the topic's length
    is read from the wire: a lenient decode turned bytes that are not UTF-8 into U+FFFD)."""
    if isinstance(request, codec.Flush):
        return 1
    topic = int.from_bytes(payload[1:5], "big")
    if isinstance(request, codec.Consume):
        return 1 + 4 + topic + 8 + 4
    return 1 + 4 + topic + 4 + len(request.data)


def _whole_with(padded: bytes) -> bool:
    try:
        codec.decode_request(padded, strict=True, lenient_utf8=True)
    except codec.MiniKafkaError:
        return False
    return True


def _identity(request: codec.Consume | codec.Produce) -> str:
    topic = str(request.topic)
    if isinstance(request, codec.Consume):
        return f"{topic}@{request.offset}"
    digest = hashlib.blake2s(request.data, digest_size=4).hexdigest()
    return f"{topic} + {len(request.data)} bytes #{digest}"


def validation(frontend: Frontend, config: ServeConfig) -> MiniKafkaValidation:
    """The plug-in's ``validation`` factory: the checks of the revision served."""
    return MiniKafkaValidation(config.revision)
