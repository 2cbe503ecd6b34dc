"""``serve --protocol v1line --validate``: the V1 line broker as a checking peer for clients.

Every line a client sends is read against SPEC.md's client requirements (V1L-CLI-*):
the envelope and each command's arguments by :mod:`.validation_lines`, what a member
or a follower was told by :mod:`.validation_state`, and here what spans one connection
(V1L-CLI-5: a correlation id in use by a request still waiting).  The broker answers as
usual whatever a client breaks.

Faults a plan may name (``--fault list``):

* errors, each answered as the real broker words it (FACTS.md), with the request's
  correlation id, and nothing served: ``NOT_LEADER`` on PRODUCE, ``REPLICATION_TIMEOUT``
  on a PRODUCE with ``acks=all`` (the only one a real broker times out), and
  ``GENERATION_MISMATCH`` on SYNC, HEARTBEAT or COMMIT (not LEAVE: a member leaving is done);
* ``rebalance`` (an action): before a SYNC, HEARTBEAT or COMMIT is served, a
  member no client knows joins that request's group and leaves it again, so the group's
  generation rises by 2 and its partitions are assigned afresh (to the same members, as
  before): the request's generation is then stale and the broker answers it
  GENERATION_MISMATCH;
* ``slow``, ``split`` and ``reset``, the generic transport faults.

After a fault the report reads what the client did next (:mod:`conformance.validate.
reactions`); a JOIN after it counts as "re-joined" and a SYNC as "re-synced".  A request's
*target* (what a later request of the same command repeats) is its topic-partition for
PRODUCE (the partition its key hashes to), CONSUME, REPLICA_FETCH and
SET_PARTITION_ROLE, and its group for the group commands; its *identity* (the same
request sent again) is, for PRODUCE, the topic and the ``key:value``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from conformance.engine import EngineError
from conformance.plugin import ServeConfig
from conformance.protocols.v1line import codec
from conformance.protocols.v1line.commands import KeyValue, Revision
from conformance.protocols.v1line.errors import (
    GENERATION_MISMATCH,
    NOT_LEADER,
    REPLICATION_TIMEOUT,
)
from conformance.protocols.v1line.handler import V1Frontend, fnv1a32
from conformance.protocols.v1line.replication import DEFAULT_REPLICATION_FACTOR
from conformance.protocols.v1line.validation_lines import LINE_LIMIT, Line, read_line, shown
from conformance.protocols.v1line.validation_state import MEMBER_COMMANDS, ClientState
from conformance.validate.contract import Expectation, Seen, Violation
from conformance.validate.reactions import RECONNECTED, RETRIED, WENT_ON

if TYPE_CHECKING:
    from conformance.server import Frontend

REUSED = "V1L-CLI-5"
REJOIN = "V1L-CLI-14"
RESEND = "V1L-CLI-18"
READ_REPLY = "V1L-CLI-19"
AFTER_RESET = "V1L-CLI-20"

REJOINED = "re-joined"
RESYNCED = "re-synced"
NEXT_STEPS = {"JOIN": REJOINED, "SYNC": RESYNCED}
WAITING_KEPT = 4096
"""Requests of one connection remembered while they wait for their replies."""

STAYING = tuple(c for c in MEMBER_COMMANDS if c != "LEAVE")
"""Member commands after which the member stays in its group, so must join again after a
rebalance (a member leaving is done with the group)."""

ERROR_TEXTS = {
    NOT_LEADER: "partition leader unavailable on this broker",
    REPLICATION_TIMEOUT: "acks=all timeout",
    GENERATION_MISMATCH: "stale generation",
}
"""The real broker's messages for the errors a plan may inject (FACTS.md)."""

ERRORS: Mapping[str, Expectation] = {
    NOT_LEADER: Expectation(RESEND, (RETRIED, RECONNECTED), kinds=("PRODUCE",)),
    REPLICATION_TIMEOUT: Expectation(RESEND, (RETRIED, RECONNECTED), kinds=("PRODUCE",)),
    GENERATION_MISMATCH: Expectation(REJOIN, (REJOINED,), kinds=STAYING),
}
ACTIONS: Mapping[str, Expectation] = {
    "rebalance": Expectation(
        REJOIN,
        (REJOINED,),
        description=(
            "on SYNC, HEARTBEAT or COMMIT: another member joins and leaves the "
            "request's group first, raising its generation by 2 (the request then gets "
            "GENERATION_MISMATCH)"
        ),
        kinds=STAYING,
    )
}
_GOING_ON = (WENT_ON, RETRIED, REJOINED, RESYNCED)
TRANSPORT: Mapping[str, Expectation] = {
    "slow": Expectation(READ_REPLY, (*_GOING_ON, RECONNECTED)),
    "split": Expectation(READ_REPLY, _GOING_ON),
    "reset": Expectation(AFTER_RESET, (RECONNECTED,)),
}


def _args_text(line: Line) -> str:
    parts = line.text.split("|", 3)
    return parts[3] if len(parts) == 4 else ""


@dataclass
class _Waiting:
    payload: bytes
    line: Line


class V1Checker:
    """One client connection: its requests in order, each until its reply comes."""

    def __init__(self, validation: V1Validation, conn: int) -> None:
        self.validation = validation
        self.conn = conn
        self.waiting: deque[_Waiting] = deque()

    def request(self, payload: bytes, now: float) -> Seen:
        v = self.validation
        line = read_line(payload, v.revision, v.replication_factor)
        cid = line.correlation_id
        if cid is not None:
            line.check(REUSED)
            if any(w.line.correlation_id == cid for w in self.waiting):
                line.broke(
                    REUSED,
                    f"correlation id {shown(cid)} is already in use on this connection by a "
                    "request still waiting for its reply",
                    "correlation_id",
                )
        v.state.request(line, now)
        if len(self.waiting) < WAITING_KEPT:
            self.waiting.append(_Waiting(payload, line))
        target, identity = v.target(line)
        return Seen(
            kind=line.kind,
            summary=_summary(line),
            checked=tuple(line.checked),
            violations=line.violations,
            identity=identity,
            target=target,
        )

    def reply(self, payload: bytes, request: bytes) -> None:
        while self.waiting:
            waiting = self.waiting.popleft()
            if waiting.payload == request:
                self.validation.state.reply(waiting.line, payload)
                return

    def framing(self, error: str) -> Violation:
        return Violation(LINE_LIMIT, f"a request line over 64 KiB ({error}); the broker closes")

    def closed(self, now: float) -> list[Violation]:
        self.waiting.clear()
        return []


def _summary(line: Line) -> str:
    if line.command is None:
        what = "unknown command" if line.sent_command else "unreadable line"
        return f"{what}: {shown(line.text, 100)}"
    args = _args_text(line)
    return f"{line.command} corr {line.correlation_id}" + (
        f": {shown(args, 100)[1:-1]}" if args else ""
    )


class V1Validation:
    """The V1 client checks and faults of one ``serve --validate`` session."""

    errors = ERRORS
    transport = TRANSPORT
    next_steps = NEXT_STEPS

    def __init__(
        self,
        revision: Revision,
        replication_factor: int,
        session_timeout_s: float,
        frontend: V1Frontend | None = None,
        partitions: int = 3,
    ) -> None:
        self.revision: Revision = revision
        self.replication_factor = replication_factor
        self.frontend = frontend
        self.partitions = partitions
        held = self._held if frontend is not None else None
        self.state = ClientState(session_timeout_s, held)
        self.actions: Mapping[str, Expectation] = ACTIONS if frontend is not None else {}
        self.rebalances = 0

    def connection(self, conn: int) -> V1Checker:
        return V1Checker(self, conn)

    # ------------------------------------------------------------- what it is about

    def _partition_count(self, topic: str) -> int:
        if self.frontend is not None:
            count = self.frontend.partition_count(topic, create=False)
            if count:
                return count
        return self.partitions

    def target(self, line: Line) -> tuple[str | None, str | None]:
        """What ``line`` is about, and what makes a later line the same one again."""
        v = line.values
        if not line.complete:
            return None, None
        if line.command == "PRODUCE":
            topic, message = str(v["topic"]), v["message"]
            assert isinstance(message, KeyValue)
            partition = fnv1a32(message.key.encode()) % self._partition_count(topic)
            return f"{topic}/{partition}", f"{topic} {message}"
        if "group" in v:
            named = " ".join(str(x) for x in v.values() if x is not None)
            return f"group {v['group']}", f"{line.command} {named}"
        if "topic" in v:
            return f"{v['topic']}/{v['partition']}", None
        return None, None

    def _held(self, group: str, consumer: str) -> int | None:
        """The generation the broker holds for ``consumer`` in ``group`` (None: not a
        member there): for a member from before this session."""
        assert self.frontend is not None
        try:
            info = self.frontend.engine.group_info(group)
        except EngineError:
            return None
        if any(m.member_id == consumer for m in info.members):
            return info.generation
        return None

    # ------------------------------------------------------------------- faults

    def error_reply(self, request: bytes, error: str) -> bytes | None:
        line = read_line(request, self.revision, self.replication_factor)
        expected = ERRORS.get(error)
        if expected is None or line.correlation_id is None or not line.complete:
            return None
        if line.command not in expected.kinds:
            return None
        if error == REPLICATION_TIMEOUT and line.values.get("acks") != "all":
            return None
        return codec.encode_err(line.correlation_id, error, ERROR_TEXTS[error])[:-1]

    def act(self, action: str, request: bytes) -> None:
        if action != "rebalance" or self.frontend is None:
            return
        line = read_line(request, self.revision, self.replication_factor)
        if line.command not in MEMBER_COMMANDS or not line.complete:
            return
        group = str(line.values["group"])
        frontend = self.frontend
        engine = frontend.engine
        try:
            info = engine.group_info(group)
        except EngineError:
            return
        topic = info.topics[0] if info.topics else str(line.values["topic"])
        self.rebalances += 1
        stranger = f"conformance-rebalance-{self.rebalances}"
        try:
            engine.join_group(group, topic, stranger, policy=frontend.policy)
            engine.leave_group(group, stranger)
        except EngineError:
            pass
        finally:
            frontend.save_durable()


def validation(frontend: Frontend, config: ServeConfig) -> V1Validation:
    """The plug-in's ``validation`` factory: the V1 front-end ``serve`` made, and its
    options (replication factor, session timeout, partitions)."""
    options = config.options

    def number(name: str, default: int) -> int:
        value = options.get(name)
        return default if value is None else int(value)

    revision: Revision = "real" if config.revision == "real" else "doc"
    return V1Validation(
        revision,
        number("replication_factor", DEFAULT_REPLICATION_FACTOR),
        number("session_timeout_ms", 10_000) / 1000.0,
        frontend if isinstance(frontend, V1Frontend) else None,
        number("partitions", 3),
    )
