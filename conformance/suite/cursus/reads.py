"""What a Cursus verifier read, with the evidence of the exchange it came in.

The reply dataclasses (:class:`~conformance.protocols.cursus.messages.BatchAck`, ...)
know nothing of the wire log, so a verifier returns a :class:`Read`: the value it
read, the evidence of its exchange (the request sent before the reply on that
connection, and the reply's entry), captured the moment the reply was read.  A check
names the fields it judged with :meth:`Read.at`, by the Cursus frame annotator's names:

* a JSON ack: ``status``, ``last_offset``, ``producer_id``, ``producer_epoch``,
  ``seq_start``, ``seq_end``, ``leader``, ``error``;
* a batch (a request, a CONSUME reply, a push): ``magic``, ``topic``, ``partition``,
  ``seq_start``, ``seq_end``, ``message_count``, ``message[i].<field>``;
* a text reply: ``word0``, ``word1``...; the key of an ``OK key=value`` reply names its
  word (``read.at("generation")`` is ``word2`` of ``OK member=m generation=3``);
* a text request: ``command`` and the command's argument names.

Fields are named in the reply (``read.at("last_offset")``) and in the request
(``read.at("seq_start", asked=("seq_start",))``).  A field the wire log's entry does
not hold (a frame the annotator could not split, or past the bytes kept) is left out:
the frame itself stays the evidence.  :class:`Consumed` is what several reads of
messages (CONSUME pages, STREAM pushes) gave, with the evidence of every one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

from conformance.client import WireLog, judged
from conformance.evidence import Evidence
from conformance.protocols.cursus.messages import Message

T = TypeVar("T", covariant=True)
U = TypeVar("U")


@dataclass(frozen=True)
class Read(Generic[T]):
    """A value read from the target and the evidence of the exchange it came in."""

    reply: T
    evidence: Evidence
    payload: bytes = b""
    """The reply's payload as it came (for reasons that quote the wire)."""
    log: WireLog | None = None
    words: Mapping[str, str] = field(default_factory=dict)
    """The word of each ``key=`` of an ``OK`` reply (``{"generation": "word2"}``)."""

    def at(self, *fields: str, asked: Sequence[str] = ()) -> Evidence:
        """The evidence with ``fields`` judged in the reply and ``asked`` in the request."""
        names = [self.words.get(f, f) for f in fields]
        return judged(self.log, self.evidence, names, asked)

    def but(self, value: U) -> Read[U]:
        """The same exchange, read as ``value`` (a member id, an assignment...)."""
        return Read(value, self.evidence, self.payload, self.log, self.words)


class Member(NamedTuple):
    """A JOIN_GROUP's answer: the member id and the generation."""

    id: str
    generation: int


@dataclass(frozen=True)
class Consumed:
    """Messages read over several exchanges (CONSUME pages or STREAM pushes)."""

    messages: list[Message]
    pages: tuple[Read[tuple[Message, ...]], ...] = ()

    def at(self, field: str = "") -> Evidence:
        """Every page, with ``field`` of each of its messages judged (``message_count``
        when no field is named, or when the page holds no message)."""
        out = Evidence()
        for page in self.pages:
            count = len(page.reply)
            names = [f"message[{i}].{field}" for i in range(count)] if field and count else []
            out = out + page.at(*(names or ["message_count"]))
        return out

    def payloads(self) -> list[bytes]:
        return [m.payload for m in self.messages]
