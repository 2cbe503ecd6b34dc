"""What a protocol gives ``serve --validate``: a :class:`Validation`.

``serve --validate`` reads every frame a client sends against the *client requirements*
of the protocol's SPEC.md (the sections whose area starts with ``client``, see
:mod:`conformance.spec`), while the broker answers as usual.  The generic part
(:mod:`conformance.validate`) owns the sockets, the fault plan, the records and the
report; the protocol's part is sans-IO and small:

* :meth:`Validation.connection` makes one :class:`ConnectionChecker` per client
  connection.  Its :meth:`~ConnectionChecker.request` reads one request payload, in
  order, and says what it was (:class:`Seen`: the *kind* a fault plan names, a summary,
  the requirements it was checked against and the :class:`Violation` s found); its
  :meth:`~ConnectionChecker.reply` is shown each reply payload the client got (the
  broker's own, or a fault's), so that it can learn what the client was told (the
  versions advertised, a generation, a producer id).  What spans connections (a group's
  members, a producer's sequences) lives in the Validation, which sees every connection.
* :meth:`Validation.error_reply` builds the reply a real broker gives when it refuses a
  request with a named error (a fault of kind ``error``), and :attr:`Validation.errors`
  says which error names a plan may use, and what a client should do next
  (:class:`Expectation`); :attr:`Validation.transport` says the same for the faults every
  protocol has (a slow, split or reset reply).
* :attr:`Validation.next_steps` names the request kinds that mean something after a
  fault (``Metadata``: "refreshed metadata"), for the report's "what the client did next".
* :meth:`Validation.act` carries out a protocol's own fault kinds (Kafka's ``rebalance``:
  the group's generation is bumped), listed in :attr:`Validation.actions`.

A checker may also have ``received(count)``: the next ``count`` requests came in one read,
so all were sent before the client could read a response to any (Kafka's check that a
correlation id is not reused while in flight uses it).

A checker never raises for bad client bytes: what it cannot read is itself a violation
(of the framing or layout requirement).  An exception out of a checker is a bug of the
tool; the session logs it and goes on without checking that frame.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Violation:
    """A client requirement a request broke: its ID, why (one line, naming values), and
    the annotated fields of the request the judgement rests on ([]: the frame as a whole)."""

    requirement: str
    message: str
    fields: tuple[str, ...] = ()


@dataclass
class Seen:
    """One request as the checker read it."""

    kind: str
    """What a fault plan's ``on`` names: a Kafka API (``Produce``), a command (``CONSUME``)."""
    summary: str
    """One line for people: ``Produce v9 corr 7: t/0 pid 1000 seq 0..4``."""
    checked: tuple[str, ...] = ()
    """The client requirements this request was checked against (broken or not)."""
    violations: list[Violation] = field(default_factory=list)
    identity: str | None = None
    """What makes a later request *the same one sent again* (a producer's batch: its
    producer id, partition and sequence), shown in the report; None: not comparable."""
    target: str | None = None
    """What the request is about (a topic-partition, a group): a later request of the
    same kind about the same target is a retry."""


@dataclass(frozen=True)
class Expectation:
    """What a client should do after one kind of fault: one of ``expect`` (next-step
    tags, :mod:`conformance.validate.reactions`); ``requirement`` is the client
    requirement that says so (its level decides what a client that does otherwise gets)."""

    requirement: str
    expect: tuple[str, ...]
    description: str = ""
    """For a protocol's own fault action: what it does, one line."""
    kinds: tuple[str, ...] = ()
    """The request kinds an error can answer, or an action can apply to (empty: any)."""
    closes: bool = False
    """An error a real broker closes the connection after (Iggy's StaleClient)."""


class ConnectionChecker(Protocol):
    def request(self, payload: bytes, now: float) -> Seen:
        """Read one request payload (``now``: monotonic seconds it arrived)."""
        ...

    def reply(self, payload: bytes, request: bytes) -> None:
        """The reply payload the client got to the ``request`` payload."""
        ...

    def framing(self, error: str) -> Violation:
        """A frame the deframer refused (``error``: why); the connection ends."""
        ...

    def closed(self, now: float) -> list[Violation]:
        """The connection ended; violations only its end reveals (usually none)."""
        ...


class Validation(Protocol):
    # read-only properties, so that a plain attribute of a more precise type fits
    @property
    def errors(self) -> Mapping[str, Expectation]:
        """The error names a fault plan may use, each with what a client should do next."""
        ...

    @property
    def actions(self) -> Mapping[str, Expectation]:
        """The protocol's own fault actions (Kafka's ``rebalance``), each with what it does
        (``description``) and what a client should do next."""
        ...

    @property
    def transport(self) -> Mapping[str, Expectation]:
        """What a client should do after a ``slow``, ``split`` or ``reset`` fault (keys: those
        three), under this protocol's client requirements."""
        ...

    @property
    def next_steps(self) -> Mapping[str, str]:
        """Request kinds that mean something when they follow a fault, and what they mean
        (``{"Metadata": "refreshed metadata", "JoinGroup": "re-joined"}``)."""
        ...

    def connection(self, conn: int) -> ConnectionChecker:
        """A checker for the client connection numbered ``conn`` (1, 2, ...)."""
        ...

    def error_reply(self, request: bytes, error: str) -> bytes | None:
        """The reply payload refusing ``request`` with ``error`` (a name in
        :attr:`errors`), as a real broker gives it; None when this request cannot carry
        that error (a plan naming such a pair is refused up front where it can be)."""
        ...

    def act(self, action: str, request: bytes) -> None:
        """Carry out the protocol's fault ``action`` (a key of :attr:`actions`) before the
        broker answers ``request``."""
        ...
