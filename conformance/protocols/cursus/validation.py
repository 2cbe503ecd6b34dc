"""``serve --protocol cursus --validate``: the Cursus broker as a checking peer for clients.

Every frame a client sends is read against SPEC.md's client requirements (CUR-CLI-*) of
the revision served: its layout by :mod:`.validation_read`, and here what spans frames
and connections, learnt from the broker's replies as the client got them:

* a member (a group and the member id a JOIN_GROUP answer gave) is held to the generation
  and assignment of the broker's latest JOIN_GROUP or SYNC_GROUP answer *to it*
  (CUR-CLI-13, -14): a rebalance it was not told about makes nothing it sends stale; a
  member id this session never gave is not judged (it may come from before);
* its JOIN_GROUP, SYNC_GROUP and HEARTBEAT requests keep it alive (CUR-CLI-15);
* an idempotent producer's sequence per topic-partition (CUR-CLI-10), the topics created
  with ``idempotent=true`` (CUR-CLI-11, real) and the acks-0 batches answered ``OK``
  (CUR-CLI-12, real).

Faults a plan may name (``--fault list``) are in :mod:`.validation_faults`.
A batch's *identity* is its producer, topic-partition and seqNums; a request's *target*
its topic-partition, or ``group G`` for the group commands.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from conformance.engine import Engine
from conformance.errors import ProtocolError
from conformance.plugin import ServeConfig
from conformance.protocols.cursus import codec, real_codec
from conformance.protocols.cursus import validation_faults as faults
from conformance.protocols.cursus.messages import Batch, OkReply
from conformance.protocols.cursus.validation_read import (
    FRAMING,
    Request,
    read_request,
)
from conformance.validate.contract import Expectation, Seen, Violation

if TYPE_CHECKING:
    from conformance.server import Frontend

NO_GAP = "CUR-CLI-10"
IDEMPOTENT_TOPIC = "CUR-CLI-11"
ACKS0_AGAIN = "CUR-CLI-12"
GENERATION = "CUR-CLI-13"
OWNED = "CUR-CLI-14"
SESSION = "CUR-CLI-15"
MEMBER_COMMANDS = {
    "doc": ("SYNC_GROUP", "HEARTBEAT", "BATCH_COMMIT"),
    "real": (
        "SYNC_GROUP",
        "HEARTBEAT",
        "LEAVE_GROUP",
        "COMMIT_OFFSET",
        "BATCH_COMMIT",
        "CONSUME",
        "STREAM",
    ),
}
KEEP_ALIVE = ("JOIN_GROUP", "SYNC_GROUP", "HEARTBEAT")
WAITING_KEPT = 4096
MAX_TRACKED = 100_000


@dataclass
class Member:
    generation: int | None = None
    assigned: tuple[int, ...] | None = None
    alive_at: float | None = None


@dataclass
class _Waiting:
    payload: bytes
    request: Request
    at: float


def _identity(batch: Batch) -> str | None:
    if not batch.messages:
        return None
    producer = batch.messages[0].producer_id
    return f"{producer!r} {batch.topic}/{batch.partition} seq {batch.seq_start}..{batch.seq_end}"


def _target(req: Request) -> str | None:
    if req.batch is not None:
        return f"{req.batch.topic}/{req.batch.partition}"
    v = req.values
    if "group" in v and req.kind not in ("CONSUME", "STREAM", "FETCH_OFFSET"):
        return f"group {v['group']}"
    if "topic" in v and "partition" in v:
        return f"{v['topic']}/{v['partition']}"
    return None


class CursusChecker:
    """One client connection: its requests in order, each until its reply comes (a
    STREAM's pushes all answer the STREAM)."""

    def __init__(self, validation: CursusValidation, conn: int) -> None:
        self.validation = validation
        self.conn = conn
        self.waiting: deque[_Waiting] = deque()

    def request(self, payload: bytes, now: float) -> Seen:
        v = self.validation
        req = read_request(payload, v.revision, v.compression)
        v.judge(req, now)
        if len(self.waiting) < WAITING_KEPT:
            self.waiting.append(_Waiting(payload, req, now))
        return Seen(
            kind=req.kind,
            summary=req.summary,
            checked=tuple(req.checked),
            violations=req.violations,
            identity=_identity(req.batch) if req.batch is not None else None,
            target=_target(req),
        )

    def reply(self, payload: bytes, request: bytes) -> None:
        for i, waiting in enumerate(self.waiting):
            if waiting.payload == request:
                if waiting.request.kind != "STREAM":
                    del self.waiting[i]
                self.validation.told(waiting.request, payload, waiting.at)
                return

    def framing(self, error: str) -> Violation:
        limit = "64 MiB" if self.validation.revision == "doc" else "16 MiB"
        return Violation(FRAMING, f"a frame the broker cannot read ({error}; the limit is {limit})")

    def closed(self, now: float) -> list[Violation]:
        self.waiting.clear()
        return []


class CursusValidation:
    """The Cursus client checks and faults of one ``serve --validate`` session."""

    transport = faults.TRANSPORT
    next_steps = faults.NEXT_STEPS

    def __init__(
        self,
        revision: str,
        compression: str = "none",
        session_timeout_s: float = 10.0,
        frontend: object | None = None,
        engine: Engine | None = None,
    ) -> None:
        self.revision = "real" if revision == "real" else "doc"
        self.compression = compression
        self.session_timeout_s = session_timeout_s
        self.frontend = frontend
        self.errors: Mapping[str, Expectation] = faults.errors(self.revision)
        self.engine = engine
        self.actions: Mapping[str, Expectation] = (
            {} if engine is None else faults.actions(self.revision)
        )
        self.rebalances = 0
        self.members: dict[tuple[str, str], Member] = {}
        self.sequences: dict[tuple[str, str, str], int] = {}
        self.idempotent_topics: dict[str, bool] = {}
        self.told_idempotent: set[str] = set()
        self.stored_acks0: set[str] = set()

    def connection(self, conn: int) -> CursusChecker:
        return CursusChecker(self, conn)

    # ------------------------------------------------------------------ requests

    def judge(self, req: Request, now: float) -> None:
        """Check a request already read against what its client was told."""
        if not req.sound:
            return
        if req.batch is not None:
            self._batch(req, req.batch)
            return
        v = req.values
        if req.kind == "CREATE" and self.revision == "real":
            flag = str(v.get("idempotent", "")).lower() in ("true", "1")
            if len(self.idempotent_topics) < MAX_TRACKED:
                self.idempotent_topics[str(v.get("topic"))] = flag
        if req.kind in MEMBER_COMMANDS[self.revision] and "generation" in v:
            self._member_command(req, now)

    def _batch(self, req: Request, batch: Batch) -> None:
        identity = _identity(batch)
        if self.revision == "real":
            req.check(ACKS0_AGAIN)
            if identity is not None and identity in self.stored_acks0:
                req.broke(
                    ACKS0_AGAIN,
                    f"the batch {identity} was sent before at acks 0 and answered OK (stored)",
                )
            created = self.idempotent_topics.get(batch.topic)
            if batch.idempotent and created is not None:
                req.check(IDEMPOTENT_TOPIC)
                if not created and batch.topic not in self.told_idempotent:
                    self.told_idempotent.add(batch.topic)
                    req.broke(
                        IDEMPOTENT_TOPIC,
                        f"an idempotent batch to topic {batch.topic!r}, whose CREATE did not ask "
                        "idempotent=true: the real broker does not deduplicate it",
                        "idempotent",
                    )
        if not batch.idempotent or not batch.messages:
            return
        req.check(NO_GAP)
        key = (batch.messages[0].producer_id, batch.topic, batch.partition)
        high = self.sequences.get(key)
        if high is not None and batch.seq_start > high + 1:
            req.broke(
                NO_GAP,
                f"producer {key[0]!r} on {batch.topic}/{batch.partition} sent seqNums up to "
                f"{high}, then a batch from {batch.seq_start}: {high + 1}..{batch.seq_start - 1} "
                "were never sent",
                "seq_start",
            )
        if high is not None or len(self.sequences) < MAX_TRACKED:
            self.sequences[key] = max(batch.seq_end, high if high is not None else batch.seq_end)

    def _member_command(self, req: Request, now: float) -> None:
        v = req.values
        group, member_id = str(v.get("group", "")), str(v.get("member", ""))
        generation = v["generation"]
        member = self.members.get((group, member_id))
        if member is None or member.generation is None:
            return  # not given by this session: not judged
        req.check(GENERATION, SESSION)
        late = None if member.alive_at is None else now - member.alive_at
        if late is not None and late > self.session_timeout_s:
            req.broke(
                SESSION,
                f"{req.kind} {late:.1f} s after member {member_id!r}'s last JOIN_GROUP, "
                f"SYNC_GROUP or HEARTBEAT; the session timeout is {self.session_timeout_s:g} s",
            )
        if req.kind in KEEP_ALIVE:
            member.alive_at = now
        if generation != member.generation:
            how = (
                "stale"
                if isinstance(generation, int) and generation < member.generation
                else "never given"
            )
            req.broke(
                GENERATION,
                f"generation {generation} is {how}: the broker's latest JOIN_GROUP or SYNC_GROUP "
                f"answer to {member_id!r} in group {group!r} gave generation {member.generation}",
                "generation",
            )
            return
        if req.kind in ("COMMIT_OFFSET", "BATCH_COMMIT") and member.assigned is not None:
            req.check(OWNED)
            partitions: list[object] = [p for p, _ in req.entries] or [v.get("partition")]
            for p in partitions:
                if p not in member.assigned:
                    held = " ".join(map(str, member.assigned))
                    req.broke(
                        OWNED,
                        f"partition {p} is not in {member_id!r}'s assignment [{held}] "
                        f"(generation {member.generation})",
                        "partition",
                    )

    # -------------------------------------------------------------------- replies

    def told(self, req: Request, payload: bytes, at: float) -> None:
        """The client got ``payload`` in answer to ``req`` (sent at ``at``)."""
        if not req.sound:
            return
        if req.batch is not None:
            if payload == b"OK" and req.batch.acks == "0" and self.revision == "real":
                identity = _identity(req.batch)
                if identity is not None and len(self.stored_acks0) < MAX_TRACKED:
                    self.stored_acks0.add(identity)
            return
        if req.kind not in ("JOIN_GROUP", "SYNC_GROUP", "LEAVE_GROUP"):
            return
        try:
            reply = (
                real_codec.decode_reply(payload)
                if self.revision == "real"
                else codec.decode_reply(payload)
            )
        except ProtocolError:
            return
        if not isinstance(reply, OkReply):
            return
        group = str(req.values.get("group", ""))
        member_id = reply.get("member") or str(req.values.get("member", ""))
        key = (group, member_id)
        if req.kind == "LEAVE_GROUP":
            self.members.pop(key, None)
            return
        member = self.members.get(key)
        if member is None:
            if len(self.members) >= MAX_TRACKED:
                return
            member = self.members[key] = Member(alive_at=at)
        generation = real_codec.atoi(reply.get("generation"))
        if generation is not None:
            member.generation = generation
        assigned = self._assigned(reply)
        if assigned is not None:
            member.assigned = assigned

    def _assigned(self, reply: OkReply) -> tuple[int, ...] | None:
        if self.revision == "real":
            parts = real_codec.assignment(reply.get("assignments") or "")
            return None if parts is None else tuple(parts)
        text = reply.get("assignment")
        if text is None:
            return None
        numbers = [real_codec.atoi(p) for p in text.split(",") if p]
        return tuple(n for n in numbers if n is not None)

    # --------------------------------------------------------------------- faults

    def error_reply(self, request: bytes, error: str) -> bytes | None:
        expected = self.errors.get(error)
        if expected is None:
            return None
        req = read_request(request, self.revision, self.compression)
        if not req.sound or req.kind not in expected.kinds:
            return None
        leader = str(getattr(self.frontend, "leader", "") or "")
        return faults.error_reply(self.revision, req, error, leader)

    def act(self, action: str, request: bytes) -> None:
        expected = self.actions.get(action)
        if expected is None or self.engine is None:
            return
        req = read_request(request, self.revision, self.compression)
        if req.sound and req.kind in expected.kinds:
            self.rebalances += 1
            stranger = f"conformance-rebalance-{self.rebalances}"
            faults.rebalance(self.engine, self.revision, req, stranger)


def validation(frontend: Frontend, config: ServeConfig) -> CursusValidation:
    """The plug-in's ``validation`` factory: the Cursus front-end ``serve`` made, and its
    options (compression)."""
    engine = getattr(frontend, "engine", None)
    timeout = float(getattr(engine, "session_timeout_s", 10.0))
    return CursusValidation(
        config.revision,
        str(config.options.get("compression") or "none"),
        float(timeout) if isinstance(timeout, (int, float)) else 10.0,
        frontend,
        engine if isinstance(engine, Engine) else None,
    )
