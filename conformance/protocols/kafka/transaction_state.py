"""A transactional id's state machine, as data: states, events, the transition table, and
the answer each transaction request gets in each state.

The states are Apache Kafka's (``TransactionState`` in its transaction coordinator,
``TransactionMetadata.scala``): a new transactional id starts Empty; AddPartitionsToTxn
(or AddOffsetsToTxn) makes it Ongoing; EndTxn goes through PrepareCommit or PrepareAbort
to CompleteCommit or CompleteAbort once the markers are written; a new producer (an
InitProducerId) or the transaction timeout fences an Ongoing transaction with a bumped
epoch (PrepareEpochFence) and aborts it.  The events:

* ``add``: partitions or a group's offsets added (AddPartitionsToTxn, AddOffsetsToTxn);
* ``init``: InitProducerId bumps the epoch (or rotates the producer id) of a transactional
  id with no transaction under way;
* ``end_commit`` / ``end_abort``: EndTxn, or the broker's own abort (``end_abort`` also
  from PrepareEpochFence, and, for an EndTxn v5 of transactions V2 (KIP-890 part 2), from
  Empty, CompleteCommit and CompleteAbort: an abort with nothing under way);
* ``fence``: a new producer with the same transactional id, or the timeout, fences the
  ongoing transaction;
* ``markers_written``: every partition of the transaction has its marker.

Valid previous states are Kafka's ``validPreviousStates`` (4.x: ``TransactionState.java``
in ``transaction-coordinator``, PrepareAbort from Empty and the Complete states too).
:data:`TRANSITIONS` is the whole machine; an event not in it for the current state raises
:class:`InvalidTransition` naming transactional id, state and event (a coordinator bug:
requests are answered with an error code, from :data:`INIT_ANSWERS`, :data:`ADD_ANSWERS`,
:data:`END_ANSWERS` and :data:`END_V2_ANSWERS`, before any event fires).  This broker
writes markers at once, so a Prepare state lasts only within one request; the answers for
Prepare states are kept for the table's sake.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EMPTY = "Empty"
ONGOING = "Ongoing"
PREPARE_COMMIT = "PrepareCommit"
PREPARE_ABORT = "PrepareAbort"
COMPLETE_COMMIT = "CompleteCommit"
COMPLETE_ABORT = "CompleteAbort"
PREPARE_EPOCH_FENCE = "PrepareEpochFence"
STATES = (
    EMPTY,
    ONGOING,
    PREPARE_COMMIT,
    PREPARE_ABORT,
    COMPLETE_COMMIT,
    COMPLETE_ABORT,
    PREPARE_EPOCH_FENCE,
)

ADD = "add"
INIT = "init"
END_COMMIT = "end_commit"
END_ABORT = "end_abort"
FENCE = "fence"
MARKERS_WRITTEN = "markers_written"
EVENTS = (ADD, INIT, END_COMMIT, END_ABORT, FENCE, MARKERS_WRITTEN)

_DONE = (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)

TRANSITIONS: dict[tuple[str, str], str] = {
    **{(s, ADD): ONGOING for s in (*_DONE, ONGOING)},
    **{(s, INIT): EMPTY for s in _DONE},
    (ONGOING, END_COMMIT): PREPARE_COMMIT,
    (ONGOING, END_ABORT): PREPARE_ABORT,
    (PREPARE_EPOCH_FENCE, END_ABORT): PREPARE_ABORT,
    **{(s, END_ABORT): PREPARE_ABORT for s in _DONE},  # EndTxn v5: an abort of nothing
    (ONGOING, FENCE): PREPARE_EPOCH_FENCE,
    (PREPARE_COMMIT, MARKERS_WRITTEN): COMPLETE_COMMIT,
    (PREPARE_ABORT, MARKERS_WRITTEN): COMPLETE_ABORT,
}
"""``(state, event) -> next state``: every transition a transactional id can make."""

GO = "go"
"""An answer: the request is carried out (its event fires)."""

INIT_ANSWERS: dict[str, str] = {
    **{s: GO for s in _DONE},
    ONGOING: "fence",  # fence and abort, then CONCURRENT_TRANSACTIONS: the client retries
    PREPARE_COMMIT: "CONCURRENT_TRANSACTIONS",
    PREPARE_ABORT: "CONCURRENT_TRANSACTIONS",
}
"""What InitProducerId does in each state (``prepareInitProducerIdTransit``)."""

ADD_ANSWERS: dict[str, str] = {
    **{s: GO for s in (*_DONE, ONGOING)},
    PREPARE_COMMIT: "CONCURRENT_TRANSACTIONS",
    PREPARE_ABORT: "CONCURRENT_TRANSACTIONS",
}
"""What AddPartitionsToTxn and AddOffsetsToTxn get (``handleAddPartitionsToTransaction``)."""

END_ANSWERS: dict[tuple[str, bool], str] = {
    (ONGOING, True): GO,
    (ONGOING, False): GO,
    (COMPLETE_COMMIT, True): "NONE",  # a retried commit
    (COMPLETE_COMMIT, False): "INVALID_TXN_STATE",
    (COMPLETE_ABORT, False): "NONE",  # a retried abort
    (COMPLETE_ABORT, True): "INVALID_TXN_STATE",
    (PREPARE_COMMIT, True): "CONCURRENT_TRANSACTIONS",
    (PREPARE_COMMIT, False): "INVALID_TXN_STATE",
    (PREPARE_ABORT, False): "CONCURRENT_TRANSACTIONS",
    (PREPARE_ABORT, True): "INVALID_TXN_STATE",
    (EMPTY, True): "INVALID_TXN_STATE",
    (EMPTY, False): "INVALID_TXN_STATE",
}
"""What EndTxn (committed?) gets in each state (``TransactionCoordinator.endTransaction``)."""

BUMP = "bump"
"""An answer of EndTxn v5: the transaction ends (an abort with nothing under way ends
none) and the producer epoch goes up by one."""

END_V2_ANSWERS: dict[tuple[str, bool, bool], str] = {
    (ONGOING, True, False): BUMP,
    (ONGOING, False, False): BUMP,
    (EMPTY, False, False): BUMP,
    (EMPTY, True, False): "INVALID_TXN_STATE",
    (COMPLETE_COMMIT, True, True): "NONE",  # a retried commit: the epoch it gave
    (COMPLETE_COMMIT, True, False): "INVALID_TXN_STATE",
    (COMPLETE_COMMIT, False, True): "INVALID_TXN_STATE",
    (COMPLETE_COMMIT, False, False): BUMP,
    (COMPLETE_ABORT, False, True): "NONE",  # a retried abort
    (COMPLETE_ABORT, False, False): BUMP,
    (COMPLETE_ABORT, True, True): "INVALID_TXN_STATE",
    (COMPLETE_ABORT, True, False): "INVALID_TXN_STATE",
    (PREPARE_COMMIT, True, True): "CONCURRENT_TRANSACTIONS",
    (PREPARE_COMMIT, False, True): "INVALID_TXN_STATE",
    (PREPARE_ABORT, False, True): "CONCURRENT_TRANSACTIONS",
    (PREPARE_ABORT, True, True): "INVALID_TXN_STATE",
}
"""What EndTxn v5 (transactions V2) gets: ``(state, committed, retry) -> answer``, where
``retry`` is a request at the epoch just below the current one (the epoch the last end
bumped).  A request at the current epoch is not a retry; one at any other epoch, or a
retry in Empty or Ongoing, or a current one in a Prepare state, is not in the table: it is
PRODUCER_FENCED (:func:`end_v2_answer`).  Kafka's ``TransactionCoordinator.endTransaction``
(the TV2 branch, with its table of Empty, CompleteAbort and CompleteCommit)."""


def end_v2_answer(state: str, committed: bool, current: bool, retry: bool) -> str:
    """EndTxn v5's answer in ``state`` for a request at the current epoch (``current``) or
    a retry's (``retry``); PRODUCER_FENCED for any other epoch (Kafka's ``isValidEpoch``)."""
    if not (current or retry):
        return "PRODUCER_FENCED"
    return END_V2_ANSWERS.get((state, committed, retry), "PRODUCER_FENCED")


MAX_EPOCH = 32767


def epoch_exhausted(epoch: int) -> bool:
    """Kafka's ``TransactionMetadata.isEpochExhausted``: no epoch left to bump to."""
    return epoch >= MAX_EPOCH - 1


class InvalidTransition(Exception):
    """An event fired in a state where the table has no transition for it (a coordinator bug)."""

    def __init__(self, transactional_id: str, state: str, event: str) -> None:
        super().__init__(
            f"transactional id {transactional_id!r}: no transition for event {event!r} "
            f"in state {state!r}"
        )
        self.transactional_id = transactional_id
        self.state = state
        self.event = event


def next_state(transactional_id: str, state: str, event: str) -> str:
    """The state ``event`` leads to from ``state``, or :class:`InvalidTransition`."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise InvalidTransition(transactional_id, state, event) from None


Partition = tuple[str, int]


@dataclass
class TxnMeta:
    """One transactional id's metadata (Kafka's ``TransactionMetadata``, the parts served)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int = -1
    last_producer_epoch: int = -1
    previous_producer_id: int = -1
    timeout_ms: int = 60_000
    state: str = EMPTY
    partitions: set[Partition] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    offsets: dict[str, dict[Partition, tuple[int, str | None]]] = field(default_factory=dict)
    """Offsets TxnOffsetCommit stored, per group: committed at EndTxn(commit)."""
    started: float = 0.0
    """When the transaction began (the broker's clock, seconds)."""

    def fire(self, event: str) -> None:
        self.state = next_state(self.transactional_id, self.state, event)

    @property
    def deadline(self) -> float | None:
        """When an Ongoing transaction times out (None when none is under way)."""
        return self.started + self.timeout_ms / 1000 if self.state == ONGOING else None

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.producer_id,
            "epoch": self.producer_epoch,
            "last": self.last_producer_epoch,
            "prev": self.previous_producer_id,
            "timeout": self.timeout_ms,
            "state": self.state,
            "partitions": sorted([t, p] for t, p in self.partitions),
            "groups": sorted(self.groups),
            "offsets": {
                g: [[t, p, o, m] for (t, p), (o, m) in sorted(offs.items())]
                for g, offs in self.offsets.items()
            },
        }

    @classmethod
    def from_json(cls, transactional_id: str, d: dict[str, Any], now: float) -> TxnMeta:
        return cls(
            transactional_id,
            int(d["pid"]),
            int(d["epoch"]),
            int(d["last"]),
            int(d["prev"]),
            int(d["timeout"]),
            str(d["state"]),
            {(str(t), int(p)) for t, p in d["partitions"]},
            set(d["groups"]),
            {
                g: {(str(t), int(p)): (int(o), m) for t, p, o, m in offs}
                for g, offs in d["offsets"].items()
            },
            now,  # an Ongoing transaction's timeout starts again at a restart
        )
