"""Steps of the Kafka cases, built on the verifiers of :mod:`.verify`.

Each step checks what it relies on and blames the requirement that covers it:
``create_topic`` that Metadata lists the partitions asked for (KAF-ADMIN-1),
``produce`` that the write is acknowledged (KAF-PRODUCE-1 unless told otherwise),
``fetch`` that the partition is answered, ``join_group``/``sync_group`` that the group
forms (KAF-GROUP-2/3).  Versions: the highest both the target and the revision speak,
unless a case passes its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.errors import ProtocolError
from conformance.protocols.kafka import records
from conformance.protocols.kafka.apis import BY_NAME
from conformance.protocols.kafka.errors import CODES
from conformance.suite.case import Unsupported, Violation, require
from conformance.suite.kafka.verify import KafkaClient, advertised, expect_code, name_of, usable
from conformance.suite.target import CaseContext

# ------------------------------------------------------------------ topics


def create_topic(ctx: CaseContext, k: KafkaClient, base: str, partitions: int = 1) -> str:
    """A new topic with ``partitions`` partitions, by CreateTopics where the target serves
    it, else by Metadata's auto-creation (a convention, KAF-CONV-1); checked in Metadata."""
    name = ctx.name(base)
    if BY_NAME["CreateTopics"].key in advertised(ctx):
        v = usable(ctx, "CreateTopics")
        body = {
            "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1}],
            "timeout_ms": 5000,
        }
        reply = k.call("CreateTopics", v, body, "KAF-ADMIN-1", f"CreateTopics {name}")
        expect_code(reply["topics"][0]["error_code"], "NONE", "KAF-ADMIN-1", f"CreateTopics {name}")
    elif partitions != 1:
        raise Unsupported("the target serves no CreateTopics; this case needs several partitions")
    found = metadata(ctx, k, [name], create=True)
    t = found.get(name)
    if t is None or t["error_code"] != 0:
        why = "not listed" if t is None else name_of(t["error_code"])
        if BY_NAME["CreateTopics"].key in advertised(ctx):
            raise Violation("KAF-ADMIN-1", f"topic {name} after CreateTopics: {why} in Metadata")
        raise Unsupported(
            f"cannot create a topic (no CreateTopics, Metadata auto-creation: {why})", "KAF-CONV-1"
        )
    got = len(t["partitions"])
    require(
        got == partitions,
        "KAF-ADMIN-1",
        f"topic {name}: {got} partition(s) in Metadata, expected {partitions}",
    )
    return name


def metadata(
    ctx: CaseContext,
    k: KafkaClient,
    topics: list[str] | None,
    *,
    create: bool = False,
    version: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Metadata's topics by name (``topics`` None: all, from v1)."""
    v = version if version is not None else usable(ctx, "Metadata")
    body: dict[str, Any] = {"topics": None if topics is None else [{"name": t} for t in topics]}
    body["allow_auto_topic_creation"] = create
    reply = k.call("Metadata", v, body, "KAF-ADMIN-2", f"Metadata v{v}")
    return {str(t["name"]): t for t in reply["topics"]}


def topic_id(ctx: CaseContext, k: KafkaClient, topic: str) -> str:
    """The topic's id (Metadata v10+), for Fetch v13+."""
    v = usable(ctx, "Metadata", lowest=10)
    t = metadata(ctx, k, [topic], version=v).get(topic)
    require(
        t is not None and t["error_code"] == 0,
        "KAF-ADMIN-2",
        f"Metadata v{v} does not list {topic}",
    )
    assert t is not None
    tid: str = t["topic_id"]
    return tid


# ------------------------------------------------------------------ produce


def batch(values: Sequence[bytes | None], **kw: Any) -> bytes:
    """A RecordBatch v2 (see :func:`records.make_batch` for the keywords)."""
    return records.encode_batch(records.make_batch(values, **kw))


def produce_body(topic: str, parts: Mapping[int, bytes | None], acks: int = -1) -> dict[str, Any]:
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": 5000,
        "topic_data": [
            {
                "name": topic,
                "partition_data": [{"index": p, "records": r} for p, r in parts.items()],
            }
        ],
    }


def produce_parts(
    ctx: CaseContext,
    k: KafkaClient,
    topic: str,
    parts: Mapping[int, bytes | None],
    *,
    acks: int = -1,
    version: int | None = None,
    requirement: str = "KAF-PRODUCE-1",
) -> dict[int, dict[str, Any]]:
    """One Produce writing ``parts`` (partition -> records); the answer per partition."""
    v = version if version is not None else usable(ctx, "Produce", lowest=3)
    reply = k.call(
        "Produce", v, produce_body(topic, parts, acks), requirement, f"Produce v{v} to {topic}"
    )
    out = {int(p["index"]): p for t in reply["responses"] for p in t["partition_responses"]}
    missing = set(parts) - set(out)
    require(not missing, requirement, f"Produce v{v}: no answer for partition(s) {sorted(missing)}")
    return out


def produce(
    ctx: CaseContext,
    k: KafkaClient,
    topic: str,
    data: bytes,
    *,
    partition: int = 0,
    version: int | None = None,
    requirement: str = "KAF-PRODUCE-1",
) -> int:
    """Produce ``data`` (a batch) with acks -1; the base offset, error 0 checked."""
    p = produce_parts(ctx, k, topic, {partition: data}, version=version, requirement=requirement)[
        partition
    ]
    expect_code(p["error_code"], "NONE", requirement, f"Produce to {topic}/{partition}")
    return int(p["base_offset"])


# ------------------------------------------------------------------ fetch


@dataclass
class Fetched:
    error_code: int
    high_watermark: int
    data: bytes
    """The partition's raw records field."""

    def batches(self, requirement: str = "KAF-REC-9") -> list[records.RecordBatch]:
        try:
            return records.decode_batches(self.data)
        except ProtocolError as exc:
            raise Violation(requirement, f"the fetched records do not decode: {exc}") from None

    def values(self, requirement: str = "KAF-REC-9") -> list[tuple[int, bytes | None]]:
        """``(offset, value)`` of every record fetched."""
        return [
            (b.base_offset + r.offset_delta, r.value)
            for b in self.batches(requirement)
            for r in b.records
        ]


def fetch_body(
    topic: str,
    partition: int,
    offset: int,
    version: int,
    *,
    max_wait_ms: int = 100,
    min_bytes: int = 1,
    max_bytes: int = 0x7FFFFFFF,
    partition_max_bytes: int = 1 << 20,
) -> dict[str, Any]:
    t: dict[str, Any] = {"topic_id": topic} if version >= 13 else {"topic": topic}
    t["partitions"] = [
        {"partition": partition, "fetch_offset": offset, "partition_max_bytes": partition_max_bytes}
    ]
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [t],
    }


def fetch(
    ctx: CaseContext,
    k: KafkaClient,
    topic: str,
    partition: int,
    offset: int,
    *,
    version: int | None = None,
    requirement: str = "KAF-FETCH-5",
    timeout: float | None = None,
    **kw: Any,
) -> Fetched:
    """One partition fetched (Fetch v13+ by topic id); its error, high watermark, records.
    As a consumer asks: min_bytes 1 and a short max_wait_ms (100), so records already
    there come at once and an empty partition costs 100 ms."""
    v = version if version is not None else usable(ctx, "Fetch")
    ref = topic_id(ctx, k, topic) if v >= 13 else topic
    reply = k.call(
        "Fetch",
        v,
        fetch_body(ref, partition, offset, v, **kw),
        requirement,
        f"Fetch v{v} {topic}/{partition} at {offset}",
        timeout=timeout,
    )
    parts = [
        p for t in reply["responses"] for p in t["partitions"] if p["partition_index"] == partition
    ]
    require(parts, requirement, f"Fetch v{v}: no answer for partition {partition}")
    p = parts[0]
    return Fetched(int(p["error_code"]), int(p["high_watermark"]), bytes(p["records"] or b""))


# ------------------------------------------------------------------ groups


PROTOCOL_TYPE = "consumer"


@dataclass
class Member:
    group: str
    member_id: str
    generation: int
    leader: str
    members: list[dict[str, Any]]


def join_body(
    group: str,
    member_id: str = "",
    *,
    session_ms: int = 10_000,
    protocol: str = "range",
    protocol_type: str = PROTOCOL_TYPE,
    metadata: bytes = b"\x00\x01",
) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout_ms": session_ms,
        "rebalance_timeout_ms": session_ms,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": protocol_type,
        "protocols": [{"name": protocol, "metadata": metadata}],
        "reason": None,
    }


def join_group(
    ctx: CaseContext,
    k: KafkaClient,
    group: str,
    *,
    version: int | None = None,
    requirement: str = "KAF-GROUP-2",
    timeout: float | None = None,
    **kw: Any,
) -> Member:
    """Join ``group`` (answering MEMBER_ID_REQUIRED by joining again with the given id)."""
    v = version if version is not None else usable(ctx, "JoinGroup")
    wait = timeout if timeout is not None else ctx.timeout + 5
    reply = k.call(
        "JoinGroup", v, join_body(group, **kw), requirement, f"JoinGroup v{v} {group}", timeout=wait
    )
    if reply["error_code"] == CODES["MEMBER_ID_REQUIRED"]:
        again = join_body(group, str(reply["member_id"]), **kw)
        reply = k.call(
            "JoinGroup", v, again, "KAF-GROUP-7", f"JoinGroup v{v} {group} again", timeout=wait
        )
    expect_code(reply["error_code"], "NONE", requirement, f"JoinGroup v{v} {group}")
    return Member(
        group,
        str(reply["member_id"]),
        int(reply["generation_id"]),
        str(reply["leader"]),
        list(reply["members"]),
    )


def sync_group(
    ctx: CaseContext,
    k: KafkaClient,
    m: Member,
    assignments: Mapping[str, bytes] | None = None,
    *,
    version: int | None = None,
    requirement: str = "KAF-GROUP-3",
    timeout: float | None = None,
) -> dict[str, Any]:
    v = version if version is not None else usable(ctx, "SyncGroup")
    body = {
        "group_id": m.group,
        "generation_id": m.generation,
        "member_id": m.member_id,
        "group_instance_id": None,
        "protocol_type": PROTOCOL_TYPE,
        "protocol_name": "range",
        "assignments": [
            {"member_id": mid, "assignment": a} for mid, a in (assignments or {}).items()
        ],
    }
    wait = timeout if timeout is not None else ctx.timeout + 5
    return k.call("SyncGroup", v, body, requirement, f"SyncGroup v{v} {m.group}", timeout=wait)


def settle(ctx: CaseContext, k: KafkaClient, group: str, **kw: Any) -> Member:
    """A group of one member, joined and synced (the member assigns itself ``b"a"``)."""
    m = join_group(ctx, k, group, **kw)
    reply = sync_group(ctx, k, m, {m.member_id: b"a"})
    expect_code(reply["error_code"], "NONE", "KAF-GROUP-3", f"SyncGroup {group}")
    return m


def heartbeat(
    ctx: CaseContext,
    k: KafkaClient,
    m: Member,
    *,
    generation: int | None = None,
    member_id: str | None = None,
    version: int | None = None,
    requirement: str = "KAF-GROUP-10",
) -> int:
    """Heartbeat; its error code."""
    v = version if version is not None else usable(ctx, "Heartbeat")
    body = {
        "group_id": m.group,
        "generation_id": m.generation if generation is None else generation,
        "member_id": m.member_id if member_id is None else member_id,
        "group_instance_id": None,
    }
    return int(k.call("Heartbeat", v, body, requirement, f"Heartbeat v{v} {m.group}")["error_code"])


def leave_group(
    ctx: CaseContext,
    k: KafkaClient,
    group: str,
    member_id: str,
    *,
    version: int | None = None,
    requirement: str = "KAF-GROUP-6",
) -> dict[str, Any]:
    v = version if version is not None else usable(ctx, "LeaveGroup")
    body: dict[str, Any] = {"group_id": group}
    if v >= 3:
        body["members"] = [{"member_id": member_id, "group_instance_id": None, "reason": None}]
    else:
        body["member_id"] = member_id
    return k.call("LeaveGroup", v, body, requirement, f"LeaveGroup v{v} {group}")
