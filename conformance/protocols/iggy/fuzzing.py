"""Iggy for the fuzzer: the valid pool, structure-aware mutators, the canary, requirements.

ORACLE (the harness's, :mod:`conformance.fuzz.harness`): every whole request frame is
answered -- Iggy has no silent command; an unknown code is answered 3 -- or the
connection is closed, within the deadline; the broker keeps accepting and serving; what
the canary wrote is read back.

The pool (:mod:`.fuzz_pool`) is drawn from the Hypothesis strategies of
:mod:`.strategies`, per command and revision, aimed mostly at what
:meth:`IggyFuzzing.setup_payloads` creates: stream ``fuzz`` with topics ``fuzz`` (3
partitions) and ``fuzz-scratch`` and group ``fuzz-group``.  The structure-aware mutators
(:mod:`.fuzz_mutators`) are hand-made lies in identifiers, partitioning, batches, user
headers, polling, login, codes and cuts, and mutators on the scapy layers of
:mod:`.layers` (``layer-field``, ``scapy-fuzz``).  Iggy is length-prefixed: the generic
frame mutators apply.

Login (classic, ``--login``): ``after`` -- the plug-in's opener logs each case's
connection in; ``before`` -- no case logs in (the gate is fuzzed); ``both`` -- each case
draws whether its connection logs in (``session_choice``: ``FuzzCase.session``, half
the cases), and one that does is logged in by the plug-in's opener with the campaign's
credentials at run time, so neither that LOGIN_USER nor the password is ever in a
case's bytes or a reproducer (a replay is given ``--password`` again; the pool's own
LOGIN_USER requests carry fixed credentials).  The fuzzer's own connections
(set-up, canary, probe) always log in (``own_options``).  Doc has no login.

Canary: stream and topic ``__conformance_canary`` (1 partition), named by string only.
SEND_MESSAGES is answered an empty OK, with no offset: the canary's write is followed on
its connection by a POLL of the partition's last messages (``canary_readback``), and the
offset acknowledged is the one of the message carrying the value just written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from conformance.fuzz.case import Blame, FrameMutator, Pool, StructureMutator
from conformance.fuzz.mutators import FRAME_MUTATORS
from conformance.protocols.iggy import codec
from conformance.protocols.iggy.errors import IggyError
from conformance.protocols.iggy.fuzz_mutators import make_mutators
from conformance.protocols.iggy.fuzz_pool import (
    CANARY,
    CANARY_DOC_ID,
    FUZZ,
    GROUP,
    IDS,
    PARTITIONS,
    SCRATCH,
    U32,
    pool,
    request,
)
from conformance.protocols.iggy.messages import NAMES, identifier

__all__ = ["CANARY", "IggyFuzzing", "blame"]

READBACK = 100
"""How many of the canary partition's last messages are read back to find a write."""
ORIGIN_US = 1_700_000_000_000_000


def _partition(revision: str, p: int | None) -> dict[str, Any]:
    if revision == "doc":
        return {"partition_id": p or 0}
    return {"partition_flag": 0 if p is None else 1, "partition_id": p or 0}


# ------------------------------------------------------------------ requirements

COMMAND_REQUIREMENTS = {
    "ping": "IGG-SYS-1", "get_stats": "IGG-SYS-2", "get_me": "IGG-SYS-3",
    "get_client": "IGG-SYS-4", "get_clients": "IGG-SYS-4", "get_cluster_metadata": "IGG-FRAME-2",
    "login_user": "IGG-LOGIN-3", "logout_user": "IGG-LOGIN-5",
    "create_stream": "IGG-STREAM-1", "get_stream": "IGG-STREAM-3", "get_streams": "IGG-STREAM-4",
    "delete_stream": "IGG-STREAM-5", "create_topic": "IGG-TOPIC-1", "get_topic": "IGG-TOPIC-4",
    "get_topics": "IGG-TOPIC-5", "delete_topic": "IGG-TOPIC-6",
    "create_partitions": "IGG-PART-1", "delete_partitions": "IGG-PART-2",
    "send_messages": "IGG-SEND-1", "poll_messages": "IGG-POLL-1",
    "get_consumer_offset": "IGG-OFF-1", "store_consumer_offset": "IGG-OFF-1",
    "delete_consumer_offset": "IGG-OFF-5", "create_consumer_group": "IGG-GROUP-1",
    "get_consumer_group": "IGG-GROUP-2", "get_consumer_groups": "IGG-GROUP-3",
    "join_consumer_group": "IGG-GROUP-4", "leave_consumer_group": "IGG-GROUP-5",
    "delete_consumer_group": "IGG-GROUP-6",
}  # fmt: skip
"""The requirement of each command whose request, decoded, was left unanswered."""
UNGATED = frozenset({"ping", "login_user"})


def unanswered(revision: str, login: str) -> Callable[[bytes], str]:
    """The requirement a whole request left without a reply breaks."""
    classic = revision == "classic"

    def blame(payload: bytes) -> str:
        if len(payload) < 4:
            return "IGG-FRAME-5" if classic else "IGG-FRAME-2"
        name = NAMES.get(U32.unpack_from(payload)[0])
        if name is None or name not in codec.tables(revision)[0]:
            return "IGG-FRAME-7"
        try:
            codec.decode_request(payload, revision, strict=False)
        except IggyError:
            return "IGG-FRAME-8" if classic else "IGG-FRAME-2"
        if classic and login == "before" and name not in UNGATED:
            return "IGG-LOGIN-2"
        if name == "send_messages" and not classic:
            return "IGG-SEND-8"
        return COMMAND_REQUIREMENTS.get(name, "IGG-FRAME-2")

    return blame


def serving_of(revision: str) -> Callable[[Sequence[bytes]], str]:
    """The requirement of a broker that stopped serving after ``frames``: IGG-FRAME-7 when
    one of them has an unknown code, else IGG-FRAME-8 (classic: a payload that does not
    decode, or any other) / IGG-FRAME-7 (doc, which has no requirement on payloads)."""
    table = codec.tables(revision)[0]

    def blame(frames: Sequence[bytes]) -> str:
        for frame in frames:
            if len(frame) >= 4 and NAMES.get(U32.unpack_from(frame)[0]) not in table:
                return "IGG-FRAME-7"
        return "IGG-FRAME-8" if revision == "classic" else "IGG-FRAME-7"

    return blame


def blame(revision: str, login: str) -> Blame:
    classic = revision == "classic"
    return Blame(
        corruption="IGG-POLL-9",  # a polled message carries the payload as sent
        # the broker keeps serving: after a payload that does not decode (classic), after
        # an unknown code (doc has no such requirement on payloads)
        serving="IGG-FRAME-8" if classic else "IGG-FRAME-7",
        bad_reply="IGG-FRAME-2",
        oversize="IGG-FRAME-6" if classic else "IGG-FRAME-1",
        partial="IGG-FRAME-4",
        unanswered=unanswered(revision, login),
        serving_of=serving_of(revision),
        unopened=unanswered(revision, "before"),  # a case not logged in (--login both)
    )


# ------------------------------------------------------------------ the part


class IggyFuzzing:
    """The fuzzing part (:class:`conformance.fuzz.case.Fuzzing`) of Iggy at one revision,
    with the ``fuzz`` option values (``login``; the credentials are the opener's)."""

    canary_topic = CANARY
    frame_mutators: Mapping[str, FrameMutator] = FRAME_MUTATORS  # length-prefixed

    def __init__(self, options: Mapping[str, Any] | None = None, revision: str = "classic") -> None:
        options = options or {}
        self.revision = revision
        self.classic = revision == "classic"
        self.login = str(options.get("login") or "both") if self.classic else "none"
        self.structure_mutators: Mapping[str, StructureMutator] = make_mutators(revision)
        self.blame = blame(revision, self.login)
        self.own_options: Mapping[str, Any] = {"login": "after"}
        """The fuzzer's own connections log in whatever ``--login`` says (classic)."""
        self.session_choice = self.login == "both"
        """``--login both``: each case draws whether its connection logs in."""
        self._written = b""
        self._read_from = 0

    def pool(self, seed: int) -> Pool:
        return pool(self.revision, seed)

    def owes_reply(self, payload: bytes) -> bool:
        return True  # every request is answered, an unknown code with status 3

    def _request(self, name: str, body: Mapping[str, Any]) -> bytes:
        return request(name, body, self.revision)

    def setup_payloads(self) -> Sequence[bytes]:
        first, second = IDS[self.revision]
        if self.classic:
            streams: list[dict[str, Any]] = [{"name": FUZZ}, {"name": CANARY}]
            topic: dict[str, Any] = {"compression": 1, "message_expiry": 0, "max_topic_size": 0}
            topic["replication_factor"] = 1
            topics = [{**topic, "name": n} for n in (FUZZ, SCRATCH)]
            canary = {**topic, "partitions_count": 1, "name": CANARY}
            group: dict[str, Any] = {"name": GROUP}
        else:
            streams = [
                {"stream_id": first, "name": FUZZ},
                {"stream_id": CANARY_DOC_ID, "name": CANARY},
            ]
            topics = [{"topic_id": i, "name": n} for i, n in ((first, FUZZ), (second, SCRATCH))]
            canary = {"topic_id": CANARY_DOC_ID, "partitions_count": 1, "name": CANARY}
            group = {"consumer_group_id": first}
        out = [self._request("create_stream", streams[0])]
        for t in topics:
            out.append(
                self._request(
                    "create_topic",
                    {**t, "stream": identifier(FUZZ), "partitions_count": PARTITIONS},
                )
            )
        named = {"stream": identifier(FUZZ), "topic": identifier(FUZZ)}
        out.append(self._request("create_consumer_group", {**named, **group}))
        out.append(self._request("create_stream", streams[1]))
        out.append(self._request("create_topic", {**canary, "stream": identifier(CANARY)}))
        return out  # fmt: skip

    # ---------------------------------------------------------------- the canary

    def _canary_head(self) -> dict[str, Any]:
        consumer: dict[str, Any] = {"kind": 1, "value": 0 if not self.classic else identifier(0)}
        return {
            "consumer": consumer,
            "stream": identifier(CANARY),
            "topic": identifier(CANARY),
            **_partition(self.revision, 0),
        }

    def canary_produce(self, values: Sequence[bytes]) -> bytes:
        self._written = values[-1] if values else b""
        messages: list[dict[str, Any]] = [{"id": 0, "payload": bytes(v)} for v in values]
        if self.classic:
            messages = [{**m, "origin_timestamp": ORIGIN_US} for m in messages]
        body = {
            "stream": identifier(CANARY),
            "topic": identifier(CANARY),
            "partitioning": {"kind": 2, "value": 0},
        }
        return self._request("send_messages", {**body, "messages": messages})

    def canary_readback(self) -> Sequence[bytes]:
        """The partition's last :data:`READBACK` messages: where the write just made is."""
        strategy = {"kind": 4, "value": 0}
        return [
            self._request(
                "poll_messages",
                {
                    **self._canary_head(),
                    "strategy": strategy,
                    "count": READBACK,
                    "auto_commit": False,
                },
            )
        ]

    def _polled(self, reply: bytes) -> list[dict[str, Any]]:
        try:
            status, payload = codec.split_reply(reply)
            got = (
                codec.decode_reply("poll_messages", payload, self.revision) if status == 0 else None
            )
        except IggyError:
            return []
        return list(got["messages"]) if got else []

    def canary_acked(self, reply: bytes) -> int | None:
        """The offset of the value just written, read from the readback's reply (the
        write's own reply is an empty OK); None if it is not there."""
        for m in reversed(self._polled(reply)):
            if m.get("payload") == self._written:
                return int(m["offset"])
        return None

    def canary_consume(self, offset: int) -> bytes:
        self._read_from = offset
        strategy = {"kind": 1, "value": offset}
        return self._request(
            "poll_messages",
            {**self._canary_head(), "strategy": strategy, "count": 1000, "auto_commit": False},
        )

    def canary_values(self, reply: bytes) -> list[bytes]:
        """The payloads from the offset asked, by offset (a missing one reads b"")."""
        by_offset = {int(m["offset"]): bytes(m["payload"]) for m in self._polled(reply)}
        later = [o for o in by_offset if o >= self._read_from]
        if not later:
            return []
        return [by_offset.get(o, b"") for o in range(self._read_from, max(later) + 1)]  # fmt: skip
