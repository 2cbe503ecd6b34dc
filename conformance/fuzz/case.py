"""A fuzz case, and what a protocol must supply for the fuzzer to generate cases.

A :class:`FuzzCase` is data: the writes to make on one connection (with a pause between
them), and the partial frames to send on extra connections that are then abandoned.  It
is a pure function of (campaign seed, case index) -- :func:`conformance.fuzz.mutators.generate`
makes it -- so a case list can be regenerated anywhere, on any Spark worker, and a
finding replays from its YAML alone.

:class:`FuzzProtocol` is the plug-in each protocol provides (Cursus:
``conformance/protocols/cursus/fuzzing.py``): framing, a pool of valid payloads drawn
from its Hypothesis strategies, its structure-aware mutators (scapy layers), which
payloads are silent by design, the canary round trip on a reserved topic, and the
requirement a finding is filed against, its frame annotator (for the minimizer) and its
session opener (run first on every connection).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from conformance.errors import ProtocolError
from conformance.plugin import FieldSpan, Opening


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
        )


class Deframer(Protocol):
    def feed(self, data: bytes) -> list[bytes]: ...

    @property
    def error(self) -> ProtocolError | None: ...

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as a frame (a partial frame when > 0)."""
        ...


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


class FuzzProtocol(Protocol):
    name: str
    frame_limit: int
    canary_topic: str
    probe_payload: bytes
    """A harmless request any live target answers (the CRASH probe)."""
    structure_mutators: dict[str, StructureMutator]
    frame_mutators: Mapping[str, FrameMutator]
    """The frame-breaking mutators that mean something for this framing: a length-prefixed
    protocol takes :data:`conformance.fuzz.mutators.FRAME_MUTATORS` (lying lengths among
    them); a line protocol would pick its own (an overlong line, a missing newline)."""

    def frame(self, payload: bytes, length: int | None = None) -> bytes:
        """``payload`` framed; ``length`` overrides the length the prefix says."""
        ...

    def new_deframer(self) -> Deframer:
        """Reads the requests a case sends (to count the replies they are owed)."""
        ...

    def new_reply_deframer(self) -> Deframer:
        """Reads the target's replies."""
        ...

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

    def requirement(self, finding: str, case: FuzzCase, answered: int = 0) -> str:
        """The requirement ID a finding of class ``finding`` on ``case`` breaks
        (``answered``: how many of its frames got their reply before it happened)."""
        ...

    def annotate(self, payload: bytes) -> list[FieldSpan]:
        """The payload's fields (the plug-in's frame annotator): the minimizer derives
        structurally smaller variants from them (:func:`conformance.plugin.shrinks`)."""
        ...

    def opening(self) -> Opening | None:
        """A fresh session opener for a new connection, or None when the protocol needs
        none (its replies are read with :meth:`new_deframer`)."""
        ...

    def describe(self, payload: bytes) -> str: ...
