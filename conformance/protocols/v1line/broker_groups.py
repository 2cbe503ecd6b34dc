"""The V1 broker's group commands: JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT and OFFSET.

Groups are the engine's, under the front-end's :class:`~conformance.engine.GroupPolicy`
(groups.py's table, V1 column; :meth:`.handler.V1Config.policy`): the consumer id is the
member id, first generation 2 in ``real`` and 1 in ``doc``, session reaping with
``--session-timeout-ms``, groups made by their first JOIN, commits checked against the
generation and ownership.  Every group refusal is GENERATION_MISMATCH with the real broker's
text (V1L-GRP-9, -10, -13, V1L-OFF-2..4); after every group command the front-end rewrites
whichever of groups.json and offsets.json changed (broker_files.py), before the reply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from conformance.engine import Engine, EngineError
from conformance.protocols.v1line.commands import PayloadValue, Request
from conformance.protocols.v1line.errors import BAD_REQUEST, GENERATION_MISMATCH
from conformance.protocols.v1line.quirks import Quirks
from conformance.server import Outcome

if TYPE_CHECKING:
    from conformance.protocols.v1line.handler import V1Frontend

GROUP_ERRORS = {
    "UNKNOWN_GROUP": "group not found",
    "UNKNOWN_MEMBER": "unknown member",
    "GENERATION_MISMATCH": "stale generation",
    "PARTITION_NOT_OWNED": "partition not assigned to member",
}
"""Engine group refusals -> the real broker's GENERATION_MISMATCH texts (FACTS.md, groups)."""


class Refused(Exception):
    """A request a handler refuses: ``code`` and ``message`` with the request's id."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class GroupCommands:
    """The group commands of a :class:`~.handler.V1Session`."""

    engine: Engine
    frontend: V1Frontend
    quirks: Quirks

    def ok(self, request: Request, values: dict[str, PayloadValue]) -> Outcome:
        raise NotImplementedError

    def _group_call(self, request: Request, call: Callable[[], Outcome]) -> Outcome:
        try:
            outcome = call()
        except EngineError as exc:
            text = GROUP_ERRORS.get(exc.code)
            if text is None:
                raise Refused(BAD_REQUEST, exc.message) from None
            raise Refused(GENERATION_MISMATCH, text) from None
        finally:
            self.frontend.save_durable()
        return outcome

    def _assigned(self, group: str, topic: str, member: str, generation: int) -> tuple[int, ...]:
        shares = self.engine.sync_group(group, member, generation)
        if topic not in shares:
            raise Refused(GENERATION_MISMATCH, "unknown member")
        return tuple(shares[topic])

    def do_join(
        self, request: Request, group: str, topic: str, consumer: str, assignor: str | None
    ) -> Outcome:
        self.frontend.partition_count(topic, create=True)

        def join() -> Outcome:
            joined = self.engine.join_group(
                group,
                topic,
                consumer,
                policy=self.frontend.policy,
                assignor=self.quirks.assignor(assignor),
            )
            assigned = self._assigned(group, topic, consumer, joined.generation)
            return self.ok(request, {"generation": joined.generation, "assigned": assigned})

        return self._group_call(request, join)

    def _check_generation(self, group: str, consumer: str, generation: int) -> None:
        current = self.engine.group_generation(group)
        if consumer not in self.engine.members_of(group, consumer):
            raise Refused(GENERATION_MISMATCH, "unknown member")
        if generation != current:
            raise Refused(GENERATION_MISMATCH, "stale generation")

    def do_sync(
        self, request: Request, group: str, topic: str, consumer: str, generation: int
    ) -> Outcome:
        def sync() -> Outcome:
            self._check_generation(group, consumer, generation)
            assigned = self._assigned(group, topic, consumer, generation)
            return self.ok(request, {"generation": generation, "assigned": assigned})

        return self._group_call(request, sync)

    def do_heartbeat(
        self, request: Request, group: str, topic: str, consumer: str, generation: int
    ) -> Outcome:
        def beat() -> Outcome:
            self._check_generation(group, consumer, generation)
            self.engine.heartbeat(group, consumer, generation)
            return self.ok(request, {"heartbeat": "ok"})

        return self._group_call(request, beat)

    def do_leave(
        self, request: Request, group: str, topic: str, consumer: str, generation: int
    ) -> Outcome:
        def leave() -> Outcome:
            self._check_generation(group, consumer, generation)
            self.engine.leave_group(group, consumer, generation)
            return self.ok(request, {"left": True})

        return self._group_call(request, leave)

    def do_commit(
        self,
        request: Request,
        group: str,
        topic: str,
        consumer: str,
        generation: int,
        partition: int,
        offset: int,
    ) -> Outcome:
        def commit() -> Outcome:
            self._check_generation(group, consumer, generation)
            if offset < 0:
                raise Refused(BAD_REQUEST, "invalid offset")
            if not 0 <= partition < self.frontend.partition_count(topic, create=False):
                raise Refused(GENERATION_MISMATCH, "partition not assigned to member")
            self.engine.commit_many(
                group,
                topic,
                {partition: offset},
                consumer,
                generation,
                policy=self.frontend.policy,
            )
            return self.ok(request, {"committed": True})

        return self._group_call(request, commit)

    def do_offset(self, request: Request, group: str, topic: str, partition: int) -> Outcome:
        committed = self.engine.committed(group, topic, partition)
        return self.ok(request, {"offset": 0 if committed is None else committed})
