"""What a protocol gives the generic tool: one :class:`Plugin` object per protocol.

The generic code (wire, engine, server, client, suite plugin, fuzzer, reports, commands)
knows no protocol.  Everything it needs of one comes from the protocol's plug-in, looked
up by name in :mod:`conformance.protocols`:

* identity: name, revisions and the default revision, default port, its package (where
  ``SPEC.md`` lives) and its suite package;
* framing: a deframer factory and a framer (``new_deframer``, ``frame``), a harmless
  request any live target answers (``probe_request``), a one-line ``describe`` for wire logs;
* the **frame annotator** (``annotate``): a payload's fields with names and byte spans,
  for labelled hex in reports and for the fuzzer's structural minimizer;
* the broker front-end factory (``frontend``) that ``serve`` puts on the shared engine;
* quirks (:class:`QuirkSpec`: deliberate spec violations and faults);
* the vector schema (``vectors``): how a vector's ``decoded`` and ``reply`` are checked,
  built and compared;
* the fuzzing plug-in (``fuzzing``);
* **options** (:class:`Option`) the protocol adds to ``run``, ``serve`` and ``fuzz``;
* the **session opener** (``opening``): what a connection must do before its first real
  request (a login), as a sans-IO generator driven by :func:`open_session`.

Heavy parts (the front-end, the fuzzing plug-in with Hypothesis and scapy) are factories
called only by the command that needs them, so ``serve`` never imports scapy.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources, util
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from conformance.errors import ProtocolError

if TYPE_CHECKING:
    from conformance.engine import Engine
    from conformance.fuzz.case import FuzzProtocol
    from conformance.server import Frontend

COMMANDS = ("run", "serve", "fuzz")
"""The commands a protocol option can belong to (``replay`` takes the ``fuzz`` ones)."""

# ------------------------------------------------------------------------ framing


class Deframer(Protocol):
    def feed(self, data: bytes) -> list[bytes]: ...

    @property
    def error(self) -> ProtocolError | None: ...


# ------------------------------------------------------------------------- quirks


@dataclass(frozen=True)
class QuirkSpec:
    """A deliberate misbehaviour of the reference broker.

    ``spec`` quirks break exactly the MUST requirements in ``breaks`` (the project's tests
    check the suite fails exactly those); ``fault`` quirks crash, hang or lose data, for
    the fuzzer to find."""

    name: str
    kind: str  # "spec" or "fault"
    area: str
    breaks: tuple[str, ...]
    description: str


class UnknownQuirk(ValueError):
    pass


# ------------------------------------------------------------------------ options


@dataclass(frozen=True)
class Option:
    """A command-line option a protocol adds to some of ``run``, ``serve`` and ``fuzz``.

    ``--help`` shows it in a group named after the protocol.  For ``run`` and ``fuzz``
    against the embedded broker, an option that ``serve`` also takes is passed on to the
    broker with the same value, and ``embedded_default`` (when set) replaces ``default``.
    A ``secret`` option (a password) is never written to results or reproducers."""

    flag: str
    help: str
    commands: tuple[str, ...]
    default: Any = None
    embedded_default: Any = None
    choices: tuple[str, ...] | None = None
    type: Callable[[str], Any] = str
    metavar: str | None = None
    secret: bool = False
    minimum: int | None = None

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def convert(self, text: str) -> Any:
        """``text`` as this option's value; ValueError saying why not if it does not fit."""
        try:
            value = self.type(text)
        except (TypeError, ValueError):
            kind = "a whole number" if self.type is int else "a valid value"
            raise ValueError(f"{text!r} is not {kind}") from None
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{text!r} is not one of {', '.join(self.choices)}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"must be at least {self.minimum}, not {value}")
        return value


# ---------------------------------------------------------------- session opener

Opening = Generator[bytes, bytes, Any]
"""A session opener: yields each framed request to send, is sent back the payload of the
reply, and returns when the session is open (raising :class:`SessionRefused` if a reply
refuses it); what it returns is the session's context (a negotiated version, a token),
kept by the connection that ran it.  It is sans-IO: the suite's connections, the fuzzer's
sockets, its canary and ``replay`` all drive the same generator with :func:`open_session`."""


class SessionRefused(Exception):
    """The target refused to open a session (a login that failed)."""


def open_session(
    opening: Opening | None, send: Callable[[bytes], None], recv: Callable[[], bytes]
) -> Any:
    """Drive ``opening`` over ``send``/``recv`` (one reply payload per request) and return
    what it returns (None without an opener).  Errors of ``send``/``recv`` and
    SessionRefused propagate."""
    if opening is None:
        return None
    try:
        request = next(opening)
        while True:
            send(request)
            request = opening.send(recv())
    except StopIteration as done:
        return done.value


# ----------------------------------------------------------------- the annotator


@dataclass(frozen=True)
class FieldSpan:
    """One field of a frame payload: ``name``, bytes ``[start, end)``, its value.

    Structure the minimizer can use: a length field names the span of the bytes it
    counts (``counts``); a count field names the spans of the items it counts
    (``items``); a length or count field is rewritten as ``end - start`` bytes in
    ``order``, ``signed`` or not.  A ``droppable`` span can be cut out whole (a token of
    a text command, with its separator)."""

    name: str
    start: int
    end: int
    value: object = None
    counts: tuple[int, int] | None = None
    items: tuple[tuple[int, int], ...] = ()
    order: str = "big"
    signed: bool = False
    droppable: bool = False

    def encode(self, value: int) -> bytes | None:
        """``value`` in this field's width and byte order, or None if it does not fit."""
        try:
            return value.to_bytes(self.end - self.start, self.order, signed=self.signed)  # type: ignore[arg-type]
        except OverflowError:
            return None


Annotator = Callable[[bytes, str], list[FieldSpan]]
"""``annotate(payload, direction)``: the fields of a frame payload going in ``direction``
(``request``: to the broker; ``reply``: from it).  It may raise on bytes it cannot place;
:meth:`Plugin.annotate_payload` turns that into no fields."""

DIRECTIONS = ("request", "reply")


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


# ----------------------------------------------------------------- vector schema


class SchemaError(ValueError):
    """A vector key that does not follow the protocol's schema."""

    def __init__(self, key: str, why: str) -> None:
        super().__init__(why)
        self.key = key
        self.why = why


class VectorSchema(Protocol):
    """How a protocol's golden vectors are checked, built and compared.

    The generic loader (:mod:`conformance.vectors`) checks the keys every vector has (id,
    requirements, direction, description, hex, error, truncated, setup) and the framing;
    the schema checks the rest."""

    extra_keys: tuple[str, ...]
    """Optional keys this protocol's vectors may have besides the generic ones."""

    def check(self, raw: Mapping[str, Any], direction: str) -> dict[str, Any]:
        """Check ``decoded``, ``reply`` and the extra keys of one vector; return the
        extras to keep.  Raises SchemaError naming the offending key."""
        ...

    def to_message(self, decoded: Mapping[str, Any]) -> Any:
        """The message a ``decoded`` mapping describes (ValueError if malformed)."""
        ...

    def from_message(self, message: Any) -> dict[str, Any]:
        """The plain-data form of a message, as ``decoded`` spells it."""
        ...

    def reply_mismatch(
        self, expected: Mapping[str, Any], payload: bytes, request: bytes
    ) -> str | None:
        """None if the reply ``payload`` to the ``request`` payload matches ``expected`` on
        the keys it gives, else why (the request tells e.g. a Kafka reply's API and version)."""
        ...


# ------------------------------------------------------------------ serve config


@dataclass(frozen=True)
class ServeConfig:
    """What ``serve`` hands a protocol's front-end factory besides the engine."""

    revision: str
    quirks: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------ plugin


@dataclass(frozen=True)
class Plugin:
    name: str
    title: str
    package: str
    """The protocol's package, holding ``SPEC.md``."""
    suite_package: str
    revisions: tuple[str, ...]
    default_revision: str
    default_port: int
    new_deframer: Callable[[], Deframer]
    """Reads requests (and replies, unless ``new_reply_deframer`` is given)."""
    frame: Callable[[bytes], bytes]
    """Frames a request (and a reply, unless ``frame_reply`` is given)."""
    probe_request: bytes
    """A harmless request payload any live target answers."""
    describe: Callable[[str, bytes], str]
    annotate: Annotator
    frontend: Callable[[Engine, ServeConfig], Frontend]
    vectors: Callable[[], VectorSchema]
    fuzzing: Callable[[Mapping[str, Any]], FuzzProtocol]
    quirks: Mapping[str, QuirkSpec] = field(default_factory=dict)
    options: tuple[Option, ...] = ()
    opening: Callable[[Mapping[str, Any]], Opening | None] | None = None
    vector_dir: Path | None = None
    """Where the golden vectors are; default ``vectors/<name>/`` at the repository root."""
    new_reply_deframer: Callable[[], Deframer] | None = None
    """For a protocol whose replies are framed unlike its requests (Iggy: a status first)."""
    frame_reply: Callable[[bytes], bytes] | None = None
    annotate_reply: Callable[[bytes, Sequence[bytes]], list[FieldSpan]] | None = None
    """The fields of a reply payload given the request payloads sent before it (newest
    last), for a protocol whose replies only make sense with their request (Kafka: the
    correlation id names the API and version); None: ``annotate(payload, "reply")``."""
    describe_reply: Callable[[bytes, Sequence[bytes]], str] | None = None
    """A reply's wire-log line given the requests sent before it, like ``annotate_reply``;
    None: ``describe("recv", payload)``."""
    variant: Callable[[Plugin, str], Plugin] | None = None
    """The plug-in as a revision other than the default sees the wire (framing, limits,
    annotator, fuzzing...): :meth:`at` calls it; None when every revision shares them."""

    def at(self, revision: str) -> Plugin:
        """This plug-in for ``revision`` (ValueError naming the known ones if unknown)."""
        if revision not in self.revisions:
            raise ValueError(
                f"unknown revision {revision!r} of {self.name}; known: "
                f"{', '.join(self.revisions)} (default {self.default_revision})"
            )
        if self.variant is None or revision == self.default_revision:
            return self
        return self.variant(self, revision)

    def deframer(self, direction: str) -> Deframer:
        """A deframer for frames going in ``direction`` (``request`` or ``reply``)."""
        if direction == "reply" and self.new_reply_deframer is not None:
            return self.new_reply_deframer()
        return self.new_deframer()

    def framed(self, payload: bytes, direction: str) -> bytes:
        """``payload`` framed as it travels in ``direction``."""
        if direction == "reply" and self.frame_reply is not None:
            return self.frame_reply(payload)
        return self.frame(payload)

    def check_quirks(self, names: Sequence[str]) -> tuple[str, ...]:
        unknown = [n for n in names if n not in self.quirks]
        if unknown:
            known = ", ".join(sorted(self.quirks)) or "none"
            raise UnknownQuirk(
                f"unknown quirk {unknown[0]!r} of {self.name}; known quirks: {known}"
            )
        return tuple(names)

    def options_for(self, command: str) -> tuple[Option, ...]:
        return tuple(o for o in self.options if command in o.commands)

    def option_values(
        self, command: str, given: Mapping[str, Any], *, embedded: bool = False
    ) -> dict[str, Any]:
        """Every option of ``command``: the value given, else its (embedded) default."""
        out: dict[str, Any] = {}
        for o in self.options_for(command):
            value = given.get(o.dest)
            if value is None:
                value = (
                    o.embedded_default if embedded and o.embedded_default is not None else o.default
                )
            out[o.dest] = value
        return out

    def serve_args(self, command: str, values: Mapping[str, Any]) -> list[str]:
        """The ``serve`` options for an embedded broker started by ``command``: those of its
        options that ``serve`` takes too, with their values."""
        serve_flags = {o.flag for o in self.options_for("serve")}
        out: list[str] = []
        for o in self.options_for(command):
            if o.flag in serve_flags and values.get(o.dest) is not None:
                out += [o.flag, str(values[o.dest])]
        return out

    def public(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` without secret options (what results and reproducers may record)."""
        secret = {o.dest for o in self.options if o.secret}
        return {k: v for k, v in values.items() if k not in secret}

    def open(self, values: Mapping[str, Any]) -> Opening | None:
        """A fresh session opener for a new connection (None: nothing to do first)."""
        return None if self.opening is None else self.opening(values)

    def spec_text(self) -> str:
        return resources.files(self.package).joinpath("SPEC.md").read_text(encoding="utf-8")

    def suite_dir(self) -> Path:
        spec = util.find_spec(self.suite_package)
        if spec is None or not spec.submodule_search_locations:
            raise LookupError(f"the {self.name} suite package {self.suite_package} is not found")
        return Path(next(iter(spec.submodule_search_locations)))

    def annotate_frame(self, data: bytes, direction: str) -> list[FieldSpan]:
        """The fields of ``data`` when it is one whole frame going in ``direction`` (its
        framing bytes as ``length`` before the payload or ``terminator`` after it), else of
        ``data`` taken as a bare payload.  Never raises."""
        try:
            frames = self.deframer(direction).feed(data)
        except ProtocolError:
            frames = []
        if len(frames) != 1 or self.framed(frames[0], direction) != data:
            return self.annotate_payload(data, direction)
        payload = frames[0]
        if not payload:
            return [FieldSpan("framing", 0, len(data), "an empty frame")]
        spans = self.annotate_payload(payload, direction)
        if data.startswith(payload):  # framing after the payload: a line's terminator
            return [*spans, FieldSpan("terminator", len(payload), len(data), data[len(payload) :])]
        head = len(data) - len(payload)  # framing before it: a length prefix, a header
        return [FieldSpan("length", 0, head, len(payload)), *_shifted(spans, head)]

    def annotate_payload(self, payload: bytes, direction: str) -> list[FieldSpan]:
        try:
            return self.annotate(payload, direction)
        except Exception:  # an annotator must not break a report over a strange frame
            return []

    def describe_reply_payload(self, payload: bytes, requests: Sequence[bytes]) -> str:
        """A reply's wire-log line, with the requests sent before it as context."""
        if self.describe_reply is not None:
            try:
                return self.describe_reply(payload, requests)
            except Exception:  # a description must not break a report either
                pass
        return self.describe("recv", payload)

    def annotate_reply_payload(self, payload: bytes, requests: Sequence[bytes]) -> list[FieldSpan]:
        """The fields of a reply payload, with the requests sent before it as context."""
        if self.annotate_reply is None:
            return self.annotate_payload(payload, "reply")
        try:
            return self.annotate_reply(payload, requests)
        except Exception:  # as above: never break a report
            return self.annotate_payload(payload, "reply")


def _shifted(spans: list[FieldSpan], by: int) -> list[FieldSpan]:
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
