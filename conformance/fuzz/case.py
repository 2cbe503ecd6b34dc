"""A fuzz case, and what a protocol must supply for the fuzzer to generate cases.

A :class:`FuzzCase` is data: the writes to make on one connection (with a pause between
them), and the partial frames to send on extra connections that are then abandoned.  It
is a pure function of (campaign seed, case index) -- :func:`conformance.fuzz.mutators.generate`
makes it -- so a case list can be regenerated anywhere, on any Spark worker, and a
finding replays from its YAML alone.

:class:`Fuzzing` is the fuzzing part of a protocol's plug-in (Cursus:
``conformance/protocols/cursus/fuzzing.py``), only what is fuzzing's own: a pool of valid
payloads drawn from its Hypothesis strategies, its structure-aware mutators (scapy
layers), which payloads are silent by design, the canary round trip on a reserved topic,
and the requirement each class of finding is filed against (:class:`Blame`).
:class:`FuzzProtocol` puts it together with the plug-in (framing, probe, annotator,
session opener) for the harness, and holds the generic HANG rules.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from conformance.annotation import annotate_payload
from conformance.errors import ProtocolError
from conformance.plugin import FieldSpan, Opening, Plugin
from conformance.wire.framing import Deframer


@dataclass(frozen=True)
class FuzzCase:
    index: int
    mutator: str
    mode: str  # "structure" or "frame"
    writes: tuple[bytes, ...]
    gap_s: float = 0.0
    """Pause between two writes (slow drip)."""
    abandon: tuple[bytes, ...] = ()
    """Bytes sent on extra connections, one each, that are then closed without reading."""
    session: bool = True
    """Whether the case's connection is opened by the protocol's session opener first
    (False: drawn so by a part with ``session_choice``; the session is never part of
    ``writes``, so credentials stay out of the case)."""

    @property
    def sent(self) -> bytes:
        return b"".join(self.writes)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "mutator": self.mutator,
            "mode": self.mode,
            "writes": [w.hex() for w in self.writes],
        }
        if self.gap_s:
            out["gap_s"] = self.gap_s
        if self.abandon:
            out["abandon"] = [a.hex() for a in self.abandon]
        if not self.session:
            out["session"] = False
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FuzzCase:
        return cls(
            index=int(d.get("index", 0)),
            mutator=str(d.get("mutator", "?")),
            mode=str(d.get("mode", "frame")),
            writes=tuple(bytes.fromhex(w) for w in d["writes"]),
            gap_s=float(d.get("gap_s", 0.0)),
            abandon=tuple(bytes.fromhex(a) for a in d.get("abandon", ())),
            session=bool(d.get("session", True)),
        )


@dataclass
class Pool:
    """Valid payloads for one campaign seed, drawn once from the protocol's strategies."""

    payloads: list[bytes]
    requests: list[Any] = field(default_factory=list)
    """The decoded requests behind ``payloads`` (same order), for the layer mutators."""


StructureMutator = Callable[[random.Random, Pool], bytes]
"""Returns a mutated payload; the generic code frames it with a correct length."""

FrameMutator = Callable[[random.Random, "FuzzProtocol", Pool], tuple[tuple[bytes, ...], float]]
"""Returns the writes of a case that breaks the framing, and the pause between them."""


@dataclass(frozen=True)
class Blame:
    """The requirement each class of finding is filed against (the HANG rules are the
    fuzzer's own, :meth:`FuzzProtocol.requirement`)."""

    corruption: str
    """Acknowledged data read back otherwise (CORRUPTION)."""
    serving: str
    """The broker keeps serving other connections (CRASH, STOPPED, PANIC, LEAK)."""
    bad_reply: str
    """A reply that cannot be deframed (BAD_REPLY)."""
    oversize: str
    """A frame over the limit is refused from its prefix (a HANG on one)."""
    partial: str
    """A partial frame followed by a half-close is closed (a HANG on one)."""
    unanswered: Callable[[bytes], str]
    """The requirement of a whole request payload left unanswered (a HANG on it)."""
    serving_of: Callable[[Sequence[bytes]], str] | None = None
    """The requirement of a CRASH, STOPPED, PANIC or LEAK read from the whole request payloads
    of the case that showed it (Iggy: an unknown code's requirement when one was sent);
    None: ``serving``."""
    unopened: Callable[[bytes], str] | None = None
    """``unanswered`` for a case whose connection was not opened (``FuzzCase.session``
    False: Iggy's login gate); None: ``unanswered``."""


class Fuzzing(Protocol):
    """What only fuzzing needs of a protocol: its part of the plug-in contract.

    Framing, deframers, the probe, the annotator, descriptions and the session opener
    come from the plug-in itself (:class:`conformance.plugin.Plugin`)."""

    canary_topic: str
    """A reserved topic no fuzz case names, for the canary round trip."""
    structure_mutators: Mapping[str, StructureMutator]
    frame_mutators: Mapping[str, FrameMutator]
    """The frame-breaking mutators that mean something for this framing: a length-prefixed
    protocol takes :data:`conformance.fuzz.mutators.FRAME_MUTATORS` (lying lengths among
    them); a line protocol would pick its own (an overlong line, a missing newline)."""
    blame: Blame

    def pool(self, seed: int) -> Pool: ...

    def owes_reply(self, payload: bytes) -> bool:
        """False for a request that is silent by design (an open STREAM)."""
        ...

    def setup_payloads(self) -> Sequence[bytes]:
        """Requests sent once before a campaign (the fuzz topics the pool writes to)."""
        ...

    def canary_produce(self, values: Sequence[bytes]) -> bytes: ...

    def canary_acked(self, reply: bytes) -> int | None:
        """The last offset a canary produce was acknowledged at, or None if refused."""
        ...

    def canary_consume(self, offset: int) -> bytes: ...

    def canary_values(self, reply: bytes) -> list[bytes]: ...


OPTIONAL_HOOKS = ("own_options", "session_choice", "canary_readback", "may_close")
"""Members a fuzzing part may have, for a protocol whose cases may run outside the
session a client opens (Iggy's login gate) or whose produce reply names no offset:

* ``own_options`` -- a mapping of option values laid over the campaign's for the
  fuzzer's own connections (set-up, canary, probe), so that they open the session a
  client would even when a case's connection does not (Iggy: ``{"login": "after"}``);
* ``session_choice`` -- True: each case draws, from its own ``random.Random`` after
  everything else, whether its connection opens the session (``FuzzCase.session``, half
  the cases); one that does is opened as the fuzzer's own connections are, one that does
  not opens nothing (Iggy ``--login both``).  The session comes from the plug-in's
  opener at run time with the campaign's credentials, never from the case's bytes, so a
  reproducer holds no secret and replays with the credentials given again;
* ``canary_readback() -> Sequence[bytes]`` -- requests sent after the canary's produce
  on its connection; :meth:`Fuzzing.canary_acked` then reads the reply of the last of
  them, not the produce's (Iggy: SEND_MESSAGES answers an empty OK, the offset is found
  by polling the partition's last messages for the value just written);
* ``may_close(sent: bytes) -> bool`` -- whether a target may close a case's connection
  before it has answered every whole request in ``sent``.  Without it, any close is
  allowed (a Kafka broker closes on a request it cannot read); with it, a close that
  leaves a reply owed where it says False is the finding DROPPED (the V1 line protocol
  answers every line and closes only on a line over 64 KiB).

A part without them (Cursus, Kafka) behaves as before."""


@dataclass
class FuzzProtocol:
    """A protocol as the fuzzer drives it: the plug-in (with the ``fuzz`` option values)
    and its fuzzing part, behind the few calls the harness makes, at one ``revision``
    (every revision of a protocol frames and annotates alike; the pool and the session
    opener may differ)."""

    plugin: Plugin
    part: Fuzzing
    options: Mapping[str, Any] = field(default_factory=dict)
    revision: str = ""

    @property
    def name(self) -> str:
        return self.plugin.name

    @property
    def frame_limit(self) -> int:
        return self.plugin.framing.limit

    @property
    def canary_topic(self) -> str:
        return self.part.canary_topic

    @property
    def probe_payload(self) -> bytes:
        return self.plugin.probe_request

    @property
    def structure_mutators(self) -> Mapping[str, StructureMutator]:
        return self.part.structure_mutators

    @property
    def frame_mutators(self) -> Mapping[str, FrameMutator]:
        return self.part.frame_mutators

    def frame(self, payload: bytes, length: int | None = None) -> bytes:
        """``payload`` framed as a request; ``length`` overrides the length it claims."""
        return self.plugin.framing.frame(payload, "request", length)

    def new_deframer(self) -> Deframer:
        """Reads the requests a case sends (to count the replies they are owed)."""
        return self.plugin.framing.deframer("request")

    def new_reply_deframer(self) -> Deframer:
        return self.plugin.framing.deframer("reply")

    def pool(self, seed: int) -> Pool:
        return self.part.pool(seed)

    def owes_reply(self, payload: bytes) -> bool:
        return self.part.owes_reply(payload)

    def setup_payloads(self) -> Sequence[bytes]:
        return self.part.setup_payloads()

    def canary_produce(self, values: Sequence[bytes]) -> bytes:
        return self.part.canary_produce(values)

    def canary_acked(self, reply: bytes) -> int | None:
        return self.part.canary_acked(reply)

    def canary_consume(self, offset: int) -> bytes:
        return self.part.canary_consume(offset)

    def canary_values(self, reply: bytes) -> list[bytes]:
        return self.part.canary_values(reply)

    @property
    def session_choice(self) -> bool:
        """Whether each case draws if its connection opens the session (the part's
        ``session_choice``; no)."""
        return bool(getattr(self.part, "session_choice", False))

    def opening(self, session: bool = True) -> Opening | None:
        """A fresh session opener for a case's new connection, or None (``session``: the
        case's :attr:`FuzzCase.session`; with ``session_choice`` a case that opens the
        session is opened as the fuzzer's own connections are)."""
        if not session:
            return None
        if self.session_choice:
            return self.own_opening()
        return self._open(self.options)

    def own_opening(self) -> Opening | None:
        """A fresh session opener for one of the fuzzer's own connections (set-up, canary,
        probe): a case's, unless the part lays ``own_options`` over the options."""
        own: Mapping[str, Any] = getattr(self.part, "own_options", None) or {}
        return self._open({**self.options, **own})

    def _open(self, values: Mapping[str, Any]) -> Opening | None:
        return self.plugin.open(values, self.revision or self.plugin.default_revision)

    def may_close(self, sent: bytes) -> bool:
        """Whether the target may close the connection of a case that sent ``sent`` with
        replies still owed (the part's ``may_close``; yes)."""
        hook = getattr(self.part, "may_close", None)
        return True if hook is None else bool(hook(sent))

    def canary_readback(self) -> list[bytes]:
        """Requests sent after the canary's produce (the part's ``canary_readback``; none)."""
        hook = getattr(self.part, "canary_readback", None)
        return [] if hook is None else list(hook())

    def annotate(self, payload: bytes) -> list[FieldSpan]:
        """A request payload's fields (the minimizer's structural cuts come from them)."""
        return annotate_payload(self.plugin, payload, "request").fields

    def describe(self, payload: bytes, earlier: Sequence[bytes] = ()) -> str:
        """A reply's one-line summary, read as the answer to the requests in ``earlier``."""
        return annotate_payload(self.plugin, payload, "reply", earlier).summary

    def requirement(self, finding: str, case: FuzzCase, answered: int = 0) -> str:
        """The requirement a finding of class ``finding`` on ``case`` breaks
        (``answered``: how many of its frames got their reply before it happened).

        A HANG is filed against the first whole frame left unanswered (a request silent
        by design is the protocol's to name), else against the framing: a prefix over
        the limit that was not refused, or a partial frame that was not closed."""
        blame = self.part.blame
        if finding == "CORRUPTION":
            return blame.corruption
        if finding in ("CRASH", "STOPPED", "PANIC", "LEAK"):
            if blame.serving_of is None:
                return blame.serving
            try:
                frames = self.new_deframer().feed(case.sent)
            except ProtocolError:  # a prefix over the limit: no whole frame to read
                return blame.serving
            # the frames answered before it went down did not bring it down: the blame is
            # the first unanswered one's (a broker reads its frames in order)
            return blame.serving_of(frames[answered:] or frames)
        if finding == "BAD_REPLY":
            return blame.bad_reply
        deframer = self.new_deframer()
        try:
            frames = deframer.feed(case.sent)
        except ProtocolError:
            return blame.oversize
        if answered < len(frames):
            unanswered = blame.unanswered
            if not case.session and blame.unopened is not None:
                unanswered = blame.unopened
            return unanswered(frames[answered])
        return blame.oversize if deframer.error is not None else blame.partial
