"""Kafka clients checked by ``serve --validate``: the KAF-CLI requirements of SPEC.md.

Each request is decoded strictly at its version (:func:`_decode`): a size that cuts the
request is KAF-CLI-1, bytes after the body KAF-CLI-2, a field its type does not allow
KAF-CLI-3, a header of the wrong version for the API's flexibility KAF-CLI-5 (found by
decoding with the other header when the right one fails), an API or version the broker
does not advertise KAF-CLI-4.  Produce's records (:mod:`.client_records`) and the
producer's ids and sequences, and the group member's id, generation and heartbeats, are
checked against what the broker answered, on any connection: InitProducerId answers
hand out producer ids; JoinGroup answers give a member its id, generation and session.

Faults: the errors a fault plan may answer with are Kafka's retriable and group errors,
each with the request kinds that carry it (:data:`ERRORS`); the action ``rebalance``
bumps the group's generation before the request is served (its members learn it from
their next heartbeat, REBALANCE_IN_PROGRESS).  NOT_COORDINATOR is a coordinator that
moved.
"""

from __future__ import annotations

import struct
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from conformance.errors import ProtocolError, Truncated
from conformance.plugin import ServeConfig
from conformance.protocols.kafka import codec
from conformance.protocols.kafka.apis import APIS, REQUEST_HEADER, request_header_version
from conformance.protocols.kafka.broker import KafkaFrontend
from conformance.protocols.kafka.client_records import check_records
from conformance.protocols.kafka.codec import MAX_FRAME, Request
from conformance.protocols.kafka.fault_replies import error_body
from conformance.protocols.kafka.handlers.api_versions import supported
from conformance.validate.contract import Expectation, Seen, Violation
from conformance.validate.reactions import RECONNECTED, RETRIED, WENT_ON

_RETRIABLE = ("Produce", "Fetch", "ListOffsets")
_MEMBER = ("Heartbeat", "SyncGroup", "OffsetCommit")
_GROUP = ("JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "OffsetFetch")
"""Group requests after which a client should look the coordinator up again; not
LeaveGroup: a client leaving is done with the group."""
_RETRY = (RETRIED, "refreshed metadata")
_REJOIN = ("re-joined",)
_FIND = ("looked up the coordinator", RETRIED)

ERRORS = {
    "NOT_LEADER_OR_FOLLOWER": Expectation("KAF-CLI-13", _RETRY, kinds=_RETRIABLE),
    "LEADER_NOT_AVAILABLE": Expectation("KAF-CLI-13", _RETRY, kinds=_RETRIABLE),
    "UNKNOWN_TOPIC_OR_PARTITION": Expectation("KAF-CLI-13", _RETRY, kinds=_RETRIABLE),
    "NOT_ENOUGH_REPLICAS": Expectation("KAF-CLI-13", _RETRY, kinds=("Produce",)),
    "REQUEST_TIMED_OUT": Expectation("KAF-CLI-13", _RETRY, kinds=("Produce",)),
    "REBALANCE_IN_PROGRESS": Expectation("KAF-CLI-14", _REJOIN, kinds=_MEMBER),
    "ILLEGAL_GENERATION": Expectation("KAF-CLI-14", _REJOIN, kinds=_MEMBER),
    "UNKNOWN_MEMBER_ID": Expectation("KAF-CLI-14", _REJOIN, kinds=_MEMBER),
    "COORDINATOR_NOT_AVAILABLE": Expectation(
        "KAF-CLI-15", _FIND, kinds=("FindCoordinator", *_GROUP)
    ),
    "NOT_COORDINATOR": Expectation("KAF-CLI-15", _FIND, kinds=_GROUP),
    "COORDINATOR_LOAD_IN_PROGRESS": Expectation("KAF-CLI-15", _FIND, kinds=_GROUP),
}
ACTIONS = {
    "rebalance": Expectation(
        "KAF-CLI-14",
        _REJOIN,
        "start a rebalance of the request's group (a generation bump) before serving it",
        kinds=_MEMBER,  # a member staying in the group: it must join again
    )
}
_ON = (WENT_ON, RETRIED, RECONNECTED, "refreshed metadata", "looked up the coordinator")
TRANSPORT = {
    "slow": Expectation("KAF-CLI-17", _ON),
    "split": Expectation("KAF-CLI-17", _ON),
    "reset": Expectation("KAF-CLI-16", (RECONNECTED,)),
}
NEXT_STEPS = {
    "Metadata": "refreshed metadata",
    "FindCoordinator": "looked up the coordinator",
    "JoinGroup": "re-joined",
    "InitProducerId": "asked for a producer id",
    "ApiVersions": "asked for versions",
}
_I32 = struct.Struct(">i")
_SEQ_WRAP = 1 << 31


@dataclass
class _Member:
    generation: int
    session_s: float
    last: float


@dataclass
class _Sequence:
    bases: set[int] = field(default_factory=set)
    next: int = 0


class KafkaValidation:
    def __init__(self, frontend: KafkaFrontend, config: ServeConfig) -> None:
        self.frontend = frontend
        self.revision = config.revision
        self.advertised = {
            a["api_key"]: (a["min_version"], a["max_version"]) for a in supported(self.revision)
        }
        self.errors = ERRORS
        self.actions = ACTIONS
        self.transport = TRANSPORT
        self.next_steps = NEXT_STEPS
        self.producers: dict[int, int] = {}
        """Producer id -> the epoch the broker last gave it."""
        self.remembers = frontend.broker.engine.data_dir is not None
        """A broker with a data directory may have handed out ids before this run (before
        a restart): an id this run never gave is then not judged."""
        self.sequences: dict[tuple[int, int, str, int], _Sequence] = {}
        self.members: dict[tuple[str, str], _Member] = {}

    def connection(self, conn: int) -> KafkaChecker:
        return KafkaChecker(self)

    def error_reply(self, request: bytes, error: str) -> bytes | None:
        try:
            decoded = codec.decode_request(request)
        except ProtocolError:
            return None
        if decoded.api_key == 0 and decoded.body.get("acks") == 0:
            return None  # a Produce with acks=0 gets no response at all, not even an error
        body = error_body(decoded, error)
        if body is None:
            return None
        header = 0 if self.revision == "doc" else None
        return codec.encode_response(
            decoded.api_key,
            decoded.api_version,
            decoded.correlation_id,
            body,
            header_version=header,
        )

    def act(self, action: str, request: bytes) -> None:
        if action != "rebalance":
            return
        try:
            decoded = codec.decode_request(request)
        except ProtocolError:
            return
        group = decoded.body.get("group_id")
        if isinstance(group, str):
            self.frontend.broker.coordinator.rebalance(group)


def _decode(payload: bytes, key: int, version: int, header_version: int) -> Request:
    api = APIS[key]
    header, end = REQUEST_HEADER.decode_at(payload, header_version)
    body, stop = api.request.decode_at(payload, version, end)
    return Request(
        api.key,
        version,
        header["correlation_id"],
        header.get("client_id"),
        body,
        header_version,
        trailing=len(payload) - stop,
    )


class KafkaChecker:
    def __init__(self, validation: KafkaValidation) -> None:
        self.v = validation
        self.waiting: dict[int, int] = {}
        """Correlation id -> requests with it still waiting for a response."""
        self.together: set[int] = set()
        """Correlation ids of the requests of the read being handled: all sent before the
        client could have read a response to any of them."""
        self.left = 0

    # ---------------------------------------------------------------- requests

    def request(self, payload: bytes, now: float) -> Seen:
        if len(payload) < 8:
            return Seen(
                "?",
                f"a {len(payload)}-byte request",
                ("KAF-CLI-1",),
                [Violation("KAF-CLI-1", f"a request of {len(payload)} bytes has no header")],
            )
        key, version, corr = codec.peek(payload)
        api = APIS.get(key)
        name = api.name if api is not None else f"API {key}"
        summary = f"{name} v{version} corr {corr}"
        seen = Seen(
            name, summary, ("KAF-CLI-1", "KAF-CLI-3", "KAF-CLI-4", "KAF-CLI-5", "KAF-CLI-6")
        )
        low, high = self.v.advertised.get(key, (0, -1))
        if not low <= version <= high and key != 18:
            shown = f"versions {low}-{high}" if key in self.v.advertised else "no such API"
            seen.violations.append(
                Violation(
                    "KAF-CLI-4",
                    f"{summary}: the broker advertises {shown}",
                    ("header.request_api_key", "header.request_api_version"),
                )
            )
        if api is None or version not in api.request.versions:
            return seen
        pipelined = self.left > 0 and corr in self.together
        if self.left > 0:
            self.left -= 1
            self.together.add(corr)
        if corr in self.waiting or pipelined:
            seen.violations.append(
                Violation(
                    "KAF-CLI-6",
                    f"correlation id {corr} is still waiting for its response",
                    ("header.correlation_id",),
                )
            )
        request = self._read(payload, version, seen)
        if request is None:
            return seen
        if not (key == 0 and request.body.get("acks") == 0):
            self.waiting[corr] = self.waiting.get(corr, 0) + 1
        seen.checked += ("KAF-CLI-2",)
        if request.trailing:
            seen.violations.append(
                Violation("KAF-CLI-2", f"{summary}: {request.trailing} bytes after the body")
            )
        if name == "Produce":
            self._produce(request, seen)
        elif name in ("JoinGroup", *_MEMBER, "LeaveGroup"):
            self._group(request, seen, now)
        # a retry comes from the same client (its client id) about the same thing
        seen.target = f"{request.client_id} {seen.target or ''}".rstrip()
        return seen

    def _read(self, payload: bytes, version: int, seen: Seen) -> Request | None:
        key = codec.peek(payload)[0]
        right = request_header_version(key, version)
        try:
            return _decode(payload, key, version, right)
        except ProtocolError as exc:
            first = exc
        other = 1 if right == 2 else 2
        try:
            request = _decode(payload, key, version, other)
        except ProtocolError:
            request = None
        if request is not None and not request.trailing:
            seen.violations.append(
                Violation(
                    "KAF-CLI-5",
                    f"{seen.summary}: request header v{other}; this version takes v{right}",
                    ("header",),
                )
            )
            return request
        if isinstance(first, Truncated):
            why = f"{seen.summary}: the frame ends inside the request ({first})"
            seen.violations.append(Violation("KAF-CLI-1", why))
        else:
            seen.violations.append(Violation("KAF-CLI-3", f"{seen.summary}: {first}"))
        return None

    def _produce(self, request: Request, seen: Seen) -> None:
        seen.checked += ("KAF-CLI-7", "KAF-CLI-8")
        topics = request.body.get("topic_data") or []
        seen.target = ",".join(
            f"{t['name']}/{p['index']}" for t in topics for p in t.get("partition_data") or []
        )
        seen.summary += f": {seen.target}"
        for i, topic in enumerate(topics):
            for j, part in enumerate(topic.get("partition_data") or []):
                path = f"topic_data[{i}].partition_data[{j}].records"
                found, batches = check_records(part.get("records"), request.api_version, path)
                seen.violations += found
                for batch in batches:
                    if batch.producer_id >= 0:
                        self._sequence(batch, topic["name"], part["index"], path, seen)
        if seen.identity is None:  # not idempotent: a resend carries the same records
            carried = b"".join(
                p.get("records") or b"" for t in topics for p in t.get("partition_data") or []
            )
            seen.identity = f"records crc32 {zlib.crc32(carried):08x}"

    def _sequence(self, batch: Any, topic: str, partition: int, path: str, seen: Seen) -> None:
        pid, epoch, base, count = (
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            len(batch.records),
        )
        seen.checked += ("KAF-CLI-9", "KAF-CLI-10")
        seen.identity = f"producer {pid} epoch {epoch} {topic}/{partition} sequence {base}"
        seen.summary += f" pid {pid} epoch {epoch} seq {base}..{base + count - 1}"
        where = f"{path}.batch[0]"
        given = self.v.producers.get(pid)
        if given is None and self.v.remembers:
            return  # handed out before this run, maybe: not judged
        if given is None or epoch < given:
            told = "never handed out" if given is None else f"given epoch {given}"
            seen.violations.append(
                Violation(
                    "KAF-CLI-9",
                    f"producer id {pid} epoch {epoch}: the broker {told}",
                    (f"{where}.producer_id", f"{where}.producer_epoch"),
                )
            )
            return
        state = self.v.sequences.setdefault((pid, epoch, topic, partition), _Sequence())
        if base in state.bases:
            return  # sent again: a retry
        if base != state.next:
            seen.violations.append(
                Violation(
                    "KAF-CLI-10",
                    f"producer {pid} epoch {epoch} to {topic}/{partition}: base sequence "
                    f"{base}, expected {state.next}",
                    (f"{where}.base_sequence",),
                )
            )
        state.bases.add(base)
        state.next = (base + count) % _SEQ_WRAP

    def _group(self, request: Request, seen: Seen, now: float) -> None:
        b = request.body
        group, member = b.get("group_id", ""), b.get("member_id", "")
        seen.target = group
        name = request.api.name
        known = self.v.members.get((group, member))
        if name == "LeaveGroup" or name == "JoinGroup":
            if known is not None:
                known.last = now
            return
        generation = b.get("generation_id", b.get("generation_id_or_member_epoch"))
        seen.summary += f": group {group} member {member or '-'} generation {generation}"
        if name == "OffsetCommit" and (generation is None or generation < 0 or not member):
            return  # a commit outside a group generation
        if known is None and self.v.remembers:
            return  # joined before this run (before a restart), maybe: not judged
        seen.checked += ("KAF-CLI-11", "KAF-CLI-12")
        if known is None:
            seen.violations.append(
                Violation(
                    "KAF-CLI-11",
                    f"{name} from member {member!r} of group {group!r}: no JoinGroup answer "
                    "gave that member id",
                    ("member_id",),
                )
            )
            return
        if generation != known.generation:
            gen_field = "generation_id" if "generation_id" in b else "generation_id_or_member_epoch"
            seen.violations.append(
                Violation(
                    "KAF-CLI-11",
                    f"{name} with generation {generation}; the member's latest JoinGroup "
                    f"answer gave generation {known.generation}",
                    (gen_field,),
                )
            )
        if now - known.last > known.session_s:
            seen.violations.append(
                Violation(
                    "KAF-CLI-12",
                    f"{name} {now - known.last:.1f} s after the member's last group request "
                    "or its answer; "
                    f"its session timeout is {known.session_s:g} s",
                )
            )
        known.last = now

    # ----------------------------------------------------------------- replies

    def received(self, count: int) -> None:
        """The next ``count`` requests came in one read (optional hook of the checker)."""
        self.together, self.left = set(), count

    def reply(self, payload: bytes, request: bytes) -> None:
        if len(payload) >= 4:
            corr = _I32.unpack_from(payload)[0]
            if self.waiting.get(corr, 0) > 1:
                self.waiting[corr] -= 1
            else:
                self.waiting.pop(corr, None)
        try:
            asked = codec.decode_request(request)
            header = 0 if self.v.revision == "doc" else None
            _, body = codec.decode_response(
                payload, asked.api_key, asked.api_version, header_version=header
            )
        except ProtocolError:
            return
        who = (str(asked.body.get("group_id", "")), str(asked.body.get("member_id", "")))
        member = self.v.members.get(who)
        if member is not None and asked.api.name in _MEMBER:
            member.last = time.monotonic()  # the session runs from the answer the client got
        if body.get("error_code", 0) != 0:
            return
        if asked.api.name == "InitProducerId":
            self.v.producers[body["producer_id"]] = body["producer_epoch"]
        elif asked.api.name == "JoinGroup":
            key = (asked.body["group_id"], body["member_id"])
            session = asked.body.get("session_timeout_ms", 10_000) / 1000
            self.v.members[key] = _Member(body["generation_id"], session, time.monotonic())

    def framing(self, error: str) -> Violation:
        return Violation(
            "KAF-CLI-1", f"a size prefix the broker refuses: {error} (limit {MAX_FRAME})"
        )

    def closed(self, now: float) -> list[Violation]:
        return []
