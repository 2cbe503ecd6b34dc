"""The one contract between the generic tool and a protocol: a :class:`Plugin` object.

The generic code (wire, engine, server, client, suite plugin, fuzzer, reports, commands)
knows no protocol.  Everything it needs of one comes from the protocol's plug-in, looked
up by name in :mod:`conformance.protocols`.  These are every hook, each one used:

=================  ====================================================================
identity           ``name``, ``title``, ``package`` (where ``SPEC.md`` lives),
                   ``suite_package`` (its conformance cases)
``revisions``      the revisions it knows and ``default_revision``
``default_port``   where ``serve`` listens unless told otherwise
``framing``        how frames travel both ways (:class:`~conformance.wire.framing.Framing`:
                   frame, deframer per direction, the frame limit), and
                   ``reply_framing``, the requirement a reply that cannot be framed breaks
``probe_request``  a harmless request payload any live target answers
``annotate``       the **annotator**: a frame payload going in a direction, given the
                   requests sent before it (newest last; in the suite, those of every
                   connection of the case, as a request id may be needed), read as a
                   one-line summary and its fields with byte spans (:class:`Annotation`);
                   for wire logs, reports and the fuzzer's structural minimizer
``error_codes``    which field of a reply holds an error code and how each code is named
                   (:class:`ErrorCodes`), or None for a protocol without numeric errors
``frontend``       the broker front-end factory that ``serve`` puts on the shared engine
``quirks``         deliberate misbehaviours of the reference broker (:class:`QuirkSpec`)
``vectors``        the golden vectors' schema (:class:`VectorSchema`) and ``vector_dir``
``fuzzing``        what only fuzzing needs (:class:`conformance.fuzz.case.Fuzzing`: the
                   pool, mutators, canary and the finding -> requirement table), made
                   for the ``fuzz`` option values and the revision fuzzed
``options``        command-line options it adds to ``run``, ``serve`` and ``fuzz``
                   (:class:`conformance.options.Option`; their plumbing lives there)
``opening``        what a connection must do before its first real request (a login), as
                   a sans-IO generator driven by :func:`open_session`, made for the
                   option values and the target's revision (a revision may have none)
``messaging``      how the cross-protocol check creates a topic, produces to it and
                   consumes from it over this protocol (:class:`Messaging`, sans-IO
                   generators of the same shape as ``opening``)
``validation``     what ``serve --validate`` checks a client's frames with and the faults
                   it can inject (:class:`conformance.validate.contract.Validation`),
                   made for the front-end it wraps and the serve config
=================  ====================================================================

Heavy parts (the front-end, the fuzzing part with Hypothesis and scapy, the vector schema)
are factories called only by the command that needs them, so ``serve`` never imports
scapy.  Generic helpers that use a plug-in live beside the code that needs them
(:mod:`conformance.annotation`, :mod:`conformance.options`, :mod:`conformance.fuzz.shrink`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources, util
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from conformance.errors import ProtocolError
from conformance.options import Option
from conformance.wire.framing import Framing

if TYPE_CHECKING:
    from conformance.engine import Engine
    from conformance.fuzz.case import Fuzzing
    from conformance.server import Frontend
    from conformance.validate.contract import Validation

# ------------------------------------------------------------------ the annotator


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


@dataclass(frozen=True)
class Annotation:
    """A frame payload read for people: a one-line ``summary`` and its ``fields``."""

    summary: str
    fields: list[FieldSpan] = field(default_factory=list)


Annotator = Callable[[bytes, str, Sequence[bytes]], Annotation]
"""``annotate(payload, direction, earlier)``: the payload of a frame going in
``direction`` (``request`` or ``reply``), with the request payloads sent before it on the
same connection (newest last; a reply often only makes sense with its request).  It may
raise on bytes it cannot place; :func:`conformance.annotation.annotate_payload` turns that
into a plain summary with no fields."""


@dataclass(frozen=True)
class ErrorCodes:
    """Where a protocol's replies carry a numeric error code, and its names."""

    field: str
    """The last part of the name of a field holding an error code (``error_code``)."""
    names: Mapping[int, str]


# ------------------------------------------------------------------------- quirks


@dataclass(frozen=True)
class QuirkSpec:
    """A deliberate misbehaviour of the reference broker.

    ``spec`` quirks break exactly the requirements in ``breaks``, MUSTs (or SHOULDs only,
    which fail a run under ``--strict``; the project's tests check the suite fails exactly
    those); ``fault`` quirks crash, hang or lose data, for the fuzzer to find."""

    name: str
    kind: str  # "spec" or "fault"
    area: str
    breaks: tuple[str, ...]
    description: str

    @classmethod
    def spec(cls, name: str, area: str, breaks: str, description: str) -> QuirkSpec:
        """A spec quirk; ``breaks``: the requirement IDs it breaks, comma-separated."""
        return cls(name, "spec", area, tuple(breaks.split(",")), description)

    @classmethod
    def fault(cls, name: str, description: str) -> QuirkSpec:
        return cls(name, "fault", "fault", (), description)


def checked_quirks(
    protocol: str, known: Mapping[str, QuirkSpec], names: Sequence[str]
) -> frozenset[str]:
    """``names`` as a set, each one checked to be a quirk ``known`` has."""
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UnknownQuirk(
            f"unknown quirk {unknown[0]!r} of {protocol}; known quirks: {', '.join(sorted(known))}"
        )
    return frozenset(names)


class UnknownQuirk(ValueError):
    pass


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


# ------------------------------------------------------------- cross-protocol


class MessagingRefused(Exception):
    """A reply that refuses what a :class:`Messaging` generator asked (the message says
    which request and what the reply said)."""


@dataclass(frozen=True)
class Messaging:
    """How the cross-protocol check (:mod:`conformance.cross`) moves messages through one
    protocol.  Every member makes a sans-IO generator of the shape of :data:`Opening`: it
    yields framed requests, is sent each reply's payload, raises
    :class:`MessagingRefused` for a reply that refuses, and returns its result; it runs
    on a connection the protocol's session opener has opened.  Topics are named by their
    *shared* name, the engine's, which every protocol of one broker uses for the same
    topic (docs/cross-protocol.md); messages live in its partition 0."""

    produce: Callable[[str, Sequence[bytes]], Generator[bytes, bytes, list[int]]]
    """``produce(topic, values)``: each value as one message, in order, each one
    acknowledged; returns their offsets."""
    consume: Callable[[str, int, int], Generator[bytes, bytes, list[tuple[int, bytes]]]]
    """``consume(topic, offset, count)``: one read (usually one request) of up to ``count``
    messages from ``offset``, as ``(offset, value)`` pairs; fewer, or none at the end of
    the log, is an answer (:func:`conformance.cross.consume_all` reads on until it has
    ``count``)."""
    create: Callable[[str], Generator[bytes, bytes, str]] | None = None
    """``create(base)``: a new topic with one partition, named from ``base``; returns its
    shared name.  None: this protocol cannot make a topic without writing to it."""
    owns_topics: bool = False
    """A topic is visible to this protocol only if it was created over it (Iggy's streams
    and topics): a pair it belongs to has its topic created over it."""


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

    not_encoded: tuple[str, ...]
    """Keys of ``decoded`` that tell how a payload was written, not what it says (Kafka:
    unknown header tags, trailing bytes): an encoder cannot give them back, so the round
    trip of a vector that is not ``encode_exact`` leaves them out."""

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

    def decode(self, payload: bytes, direction: str, extras: Mapping[str, Any]) -> Any:
        """The message in a frame ``payload`` going in ``direction`` (``extras``: the
        vector's own keys, e.g. what a Kafka response answers); raises ProtocolError if it
        does not decode."""
        ...

    def encode(self, message: Any, direction: str, extras: Mapping[str, Any]) -> bytes:
        """``message`` as the payload of a frame going in ``direction``."""
        ...

    def error_name(self, exc: ProtocolError) -> str | None:
        """The code a vector's ``error`` names for a payload refused with ``exc``."""
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
    framing: Framing
    probe_request: bytes
    """A harmless request payload any live target answers."""
    annotate: Annotator
    frontend: Callable[[Engine, ServeConfig], Frontend]
    vectors: Callable[[], VectorSchema]
    fuzzing: Callable[[Mapping[str, Any], str], Fuzzing]
    """The fuzzing part, given the ``fuzz`` option values and the revision fuzzed."""
    error_codes: ErrorCodes | None = None
    reply_framing: str | None = None
    """The requirement ID a reply that the framing cannot frame breaks (a FAIL of it, decided
    once by the suite plugin: :mod:`conformance.suite.verdicts`); None: such a case is an
    ERROR."""
    quirks: Mapping[str, QuirkSpec] = field(default_factory=dict)
    options: tuple[Option, ...] = ()
    opening: Callable[[Mapping[str, Any], str], Opening | None] | None = None
    """Given the option values and the target's revision, a fresh opener for a new
    connection, or None: a connection's first request is a real one (always, when the
    plug-in has no ``opening``; in that revision, when it returns None)."""
    vector_dir: Path | None = None
    """Where the golden vectors are; default ``vectors/<name>/`` at the repository root."""
    messaging: Callable[[Mapping[str, Any], str], Messaging] | None = None
    """Given the ``run`` option values and the target's revision, how the cross-protocol
    check talks to it; None: the protocol takes no part in it."""
    validation: Callable[[Frontend, ServeConfig], Validation] | None = None
    """Given the front-end ``serve --validate`` wraps and its config, the client checks
    and faults (:mod:`conformance.validate`); None: its clients cannot be validated yet."""

    def check_revision(self, revision: str) -> str:
        """``revision`` if this protocol knows it, else ValueError naming the known ones."""
        if revision not in self.revisions:
            raise ValueError(
                f"unknown revision {revision!r} of {self.name}; known: "
                f"{', '.join(self.revisions)} (default {self.default_revision})"
            )
        return revision

    def check_quirks(self, names: Sequence[str]) -> tuple[str, ...]:
        unknown = [n for n in names if n not in self.quirks]
        if unknown:
            known = ", ".join(sorted(self.quirks)) or "none"
            raise UnknownQuirk(
                f"unknown quirk {unknown[0]!r} of {self.name}; known quirks: {known}"
            )
        return tuple(names)

    def open(self, values: Mapping[str, Any], revision: str) -> Opening | None:
        """A fresh session opener for a new connection to a target of ``revision`` (None:
        nothing to do first)."""
        return None if self.opening is None else self.opening(values, revision)

    def spec_parts(self) -> list[tuple[str, str]]:
        """The protocol's requirements as (file name, text): SPEC.md, then every
        ``SPEC-<area>.md`` beside it in name order (a large protocol keeps an area, such
        as Kafka's transactions, in a part of its own)."""
        root = resources.files(self.package)
        names = sorted(
            e.name
            for e in root.iterdir()
            if e.name.startswith("SPEC-") and e.name.endswith(".md") and e.is_file()
        )
        return [(n, root.joinpath(n).read_text(encoding="utf-8")) for n in ["SPEC.md", *names]]

    def suite_dir(self) -> Path:
        spec = util.find_spec(self.suite_package)
        if spec is None or not spec.submodule_search_locations:
            raise LookupError(f"the {self.name} suite package {self.suite_package} is not found")
        return Path(next(iter(spec.submodule_search_locations)))
