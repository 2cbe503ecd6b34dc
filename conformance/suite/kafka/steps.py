"""Steps of the Kafka cases, built on the verifiers of :mod:`.verify`.

Each step checks what it relies on and blames the requirement that covers it:
``create_topic`` that Metadata lists the partitions asked for (KAF-ADMIN-1),
``produce`` that the write is acknowledged (KAF-PRODUCE-1 unless told otherwise),
``fetch`` that the partition is answered.  The group steps are in :mod:`.group_steps`.
Versions: the highest both the target and the revision speak, unless a case passes its
own.

Evidence.  A step hands back the answers as :class:`~conformance.evidence.Node` trees
(a Produce's partition, a Fetch's partition inside :class:`Fetched`), so that a case's
own check names the field it judges; a topic or partition an answer lacks is named as
missing, with the array that lacks it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from conformance.errors import ProtocolError
from conformance.evidence import Evidence, Node, NodeList, combined
from conformance.protocols.kafka import records
from conformance.protocols.kafka.apis import BY_NAME
from conformance.suite.case import Unsupported, Violation, require
from conformance.suite.kafka.verify import (
    KafkaClient,
    advertised,
    expect_code,
    first,
    missing,
    name_of,
    usable,
)
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
        what = f"CreateTopics {name}"
        reply = k.call("CreateTopics", v, body, "KAF-ADMIN-1", what)
        created = first(reply["topics"], "topics[0]", "KAF-ADMIN-1", what)
        expect_code(created, "error_code", "NONE", "KAF-ADMIN-1", what)
    elif partitions != 1:
        raise Unsupported("the target serves no CreateTopics; this case needs several partitions")
    found = metadata(ctx, k, [name], create=True)
    t = found.get(name)
    if t is None or t["error_code"] != 0:
        if BY_NAME["CreateTopics"].key in advertised(ctx):
            what = f"Metadata after CreateTopics {name}"
            if t is None:
                missing(found.array, f"topic {name}", "KAF-ADMIN-1", what)
            expect_code(t, "error_code", "NONE", "KAF-ADMIN-1", what)
        why = "not listed" if t is None else name_of(t["error_code"])
        raise Unsupported(
            f"cannot create a topic (no CreateTopics, Metadata auto-creation: {why})",
            "KAF-CONV-1",
            found.array.at() if t is None else t.at("error_code"),
        )
    got = len(t["partitions"])
    require(
        got == partitions,
        "KAF-ADMIN-1",
        f"topic {name}: {got} partition(s) in Metadata, expected {partitions}",
        t["partitions"].at(),
    )
    return name


class Topics(dict[str, Node]):
    """Metadata's topics by name; ``array`` is the answer's topics array (the evidence
    when a topic is missing, or listed when it should not be)."""

    array: NodeList


def metadata(
    ctx: CaseContext,
    k: KafkaClient,
    topics: list[str] | None,
    *,
    create: bool = False,
    version: int | None = None,
) -> Topics:
    """Metadata's topics by name (``topics`` None: all, from v1)."""
    v = version if version is not None else usable(ctx, "Metadata")
    body: dict[str, Any] = {"topics": None if topics is None else [{"name": t} for t in topics]}
    body["allow_auto_topic_creation"] = create
    reply = k.call("Metadata", v, body, "KAF-ADMIN-2", f"Metadata v{v}")
    found = Topics((str(t["name"]), t) for t in reply["topics"])
    found.array = reply["topics"]
    return found


def topic_id(ctx: CaseContext, k: KafkaClient, topic: str) -> str:
    """The topic's id (Metadata v10+), for Fetch v13+."""
    v = usable(ctx, "Metadata", lowest=10)
    found = metadata(ctx, k, [topic], version=v)
    t = found.get(topic)
    if t is None:
        missing(found.array, f"topic {topic}", "KAF-ADMIN-2", f"Metadata v{v}")
    expect_code(t, "error_code", "NONE", "KAF-ADMIN-2", f"Metadata v{v} of {topic}")
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
) -> dict[int, Node]:
    """One Produce writing ``parts`` (partition -> records); the answer per partition."""
    v = version if version is not None else usable(ctx, "Produce", lowest=3)
    what = f"Produce v{v} to {topic}"
    reply = k.call("Produce", v, produce_body(topic, parts, acks), requirement, what)
    out = {int(p["index"]): p for t in reply["responses"] for p in t["partition_responses"]}
    lacking = sorted(set(parts) - set(out))
    if lacking:
        missing(reply["responses"], f"partition(s) {lacking} of topic {topic}", requirement, what)
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
) -> Node:
    """Produce ``data`` (a batch) with acks -1; the partition's answer (its
    ``base_offset``), error 0 checked."""
    p = produce_parts(ctx, k, topic, {partition: data}, version=version, requirement=requirement)[
        partition
    ]
    expect_code(p, "error_code", "NONE", requirement, f"Produce to {topic}/{partition}")
    return p


# ------------------------------------------------------------------ fetch


class Located(NamedTuple):
    """A fetched record: its offset, the record, its batch, and its name under the
    records field (``batch[0].record[1]``, ``batch[0].decompressed.record[1]``)."""

    offset: int
    record: records.Record
    batch: records.RecordBatch
    name: str


@dataclass
class Fetched:
    """One partition of a Fetch answer; ``part`` is its node (``responses[0].partitions[0]``)."""

    part: Node

    @property
    def error_code(self) -> int:
        return int(self.part["error_code"])

    @property
    def high_watermark(self) -> int:
        return int(self.part["high_watermark"])

    @property
    def data(self) -> bytes:
        """The partition's raw records field."""
        return bytes(self.part["records"] or b"")

    def at(self, *keys: str | int) -> Evidence:
        """The partition's field ``keys`` (nothing: the partition) as the evidence."""
        return self.part.at(*keys)

    def records_at(self, *names: str) -> Evidence:
        """The records field, or what it holds (``batch[0].crc``, ``batch[0].record[1].value``)."""
        if not names:
            return self.part.at("records")
        return combined(self.part.at("records", n) for n in names)

    def batches(self, requirement: str = "KAF-REC-9") -> list[records.RecordBatch]:
        try:
            return records.decode_batches(self.data)
        except ProtocolError as exc:
            raise Violation(
                requirement, f"the fetched records do not decode: {exc}", self.records_at()
            ) from None

    def located(self, requirement: str = "KAF-REC-9") -> list[Located]:
        """Every record fetched, with its offset and its name under the records field."""
        out = []
        for i, b in enumerate(self.batches(requirement)):
            inner = f"batch[{i}].decompressed" if b.compression else f"batch[{i}]"
            for j, r in enumerate(b.records):
                out.append(Located(b.base_offset + r.offset_delta, r, b, f"{inner}.record[{j}]"))
        return out

    def values(self, requirement: str = "KAF-REC-9") -> list[tuple[int, bytes | None]]:
        """``(offset, value)`` of every record fetched."""
        return [(x.offset, x.record.value) for x in self.located(requirement)]

    def values_at(self, requirement: str = "KAF-REC-9") -> Evidence:
        """Every fetched record's value (the records field when none is there)."""
        found = self.located(requirement)
        if not found:
            return self.records_at()
        return self.records_at(*(f"{x.name}.value" for x in found))


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
    return Fetched(fetched_partition(reply, topic, partition, requirement, f"Fetch v{v}"))


def fetched_partition(reply: Node, topic: str, partition: int, requirement: str, what: str) -> Node:
    """Partition ``partition`` of a Fetch answer about one topic; one it lacks is named as
    missing, with the arrays that lack it (the topics, or each topic's partitions)."""
    topics: NodeList = reply["responses"]
    for t in topics:
        for p in t["partitions"]:
            if p["partition_index"] == partition:
                node: Node = p
                return node
    lacking = f"partition {partition} of topic {topic}"
    if not topics:
        missing(topics, lacking, requirement, what)
    where = combined(t["partitions"].at() for t in topics)
    raise Violation(requirement, f"{what}: the answer has no {lacking}", where)
