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
missing, with the array that lacks it (a Fetch partition asked for and left out blames
KAF-FETCH-8, never reads as error 0).

Timing.  The steps rely on no moment Kafka does not promise.  A KRaft broker learns a
topic created or deleted (by CreateTopics, DeleteTopics or Metadata's auto-creation) from
the controller's metadata log a little later, and answers the Metadata request that starts
an auto-creation UNKNOWN_TOPIC_OR_PARTITION (``AutoTopicCreationManager``): so
:func:`metadata_until` asks Metadata again, bounded by :data:`METADATA_WAIT_S`, and a step
that still does not see the change fails naming how long it waited; :func:`produce_parts`
sends again, within the same bound, a write whose every partition was refused with a
retriable leadership error (nothing was written; as a producer does).  The group steps
find the coordinator first and wait for the join window (:mod:`.group_steps`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from conformance.errors import ProtocolError
from conformance.evidence import Evidence, Node, NodeList, combined
from conformance.protocols.kafka import records
from conformance.protocols.kafka.apis import BY_NAME
from conformance.protocols.kafka.errors import CODES
from conformance.suite.case import Unsupported, Violation, require
from conformance.suite.kafka.metadata_steps import METADATA_WAIT_S as METADATA_WAIT_S
from conformance.suite.kafka.metadata_steps import SETTLING as SETTLING
from conformance.suite.kafka.metadata_steps import Topics as Topics
from conformance.suite.kafka.metadata_steps import metadata as metadata
from conformance.suite.kafka.metadata_steps import metadata_until as metadata_until
from conformance.suite.kafka.metadata_steps import settled as settled
from conformance.suite.kafka.metadata_steps import topic_id as topic_id
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
    it, else by Metadata's auto-creation (a convention, KAF-CONV-1); checked in Metadata,
    asked again until the topic shows (:func:`metadata_until`)."""
    name = ctx.name(base)
    by_admin = BY_NAME["CreateTopics"].key in advertised(ctx)
    if by_admin:
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
    found = metadata_until(ctx, k, [name], lambda f: settled(f.get(name)), create=True)
    t = found.get(name)
    if t is None or t["error_code"] != 0:
        if by_admin:
            what = f"Metadata after CreateTopics {name}{found.waited_for()}"
            if t is None:
                missing(found.array, f"topic {name}", "KAF-ADMIN-1", what)
            expect_code(t, "error_code", "NONE", "KAF-ADMIN-1", what)
        why = "not listed" if t is None else name_of(t["error_code"])
        raise Unsupported(
            f"cannot create a topic (no CreateTopics, Metadata auto-creation: {why}"
            f"{found.waited_for()})",
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


LEADERLESS = ("NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE")
"""What Kafka answers a write to a partition its ReplicaManager has not brought online yet
(``BrokerMetadataPublisher`` updates the metadata cache first, so Metadata may list a new
topic a moment before it can be written): nothing was written, the producer sends again."""


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
    """One Produce writing ``parts`` (partition -> records); the answer per partition.
    Sent again, within :data:`METADATA_WAIT_S`, while every partition is refused with one of
    :data:`LEADERLESS` (so nothing was written), as a producer does."""
    v = version if version is not None else usable(ctx, "Produce", lowest=3)
    what = f"Produce v{v} to {topic}"
    deadline = time.monotonic() + max(METADATA_WAIT_S, ctx.timeout)
    leaderless = [CODES[e] for e in LEADERLESS]
    while True:
        reply = k.call("Produce", v, produce_body(topic, parts, acks), requirement, what)
        out = {int(p["index"]): p for t in reply["responses"] for p in t["partition_responses"]}
        lacking = sorted(set(parts) - set(out))
        if lacking:
            where = reply["responses"]
            missing(where, f"partition(s) {lacking} of topic {topic}", requirement, what)
        waiting = out and all(p["error_code"] in leaderless for p in out.values())
        if not waiting or time.monotonic() >= deadline:
            return out
        time.sleep(0.1)


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
    ``base_offset``), error 0 checked (a partition not yet online is written again, see
    :func:`produce_parts`)."""
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
            if b.magic < 2 and len(b.records) == 1:  # a legacy message (a down-converted fetch)
                out.append(Located(b.base_offset, b.records[0], b, f"message[{i}]"))
                continue
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
    there come at once and an empty partition costs 100 ms.  A partition not yet online
    (:data:`LEADERLESS`) is fetched again, within :data:`METADATA_WAIT_S`."""
    v = version if version is not None else usable(ctx, "Fetch")
    ref = topic_id(ctx, k, topic) if v >= 13 else topic
    deadline = time.monotonic() + max(METADATA_WAIT_S, ctx.timeout)
    what = f"Fetch v{v} {topic}/{partition} at {offset}"
    while True:
        body = fetch_body(ref, partition, offset, v, **kw)
        reply = k.call("Fetch", v, body, requirement, what, timeout=timeout)
        part = fetched_partition(reply, topic, partition, requirement, f"Fetch v{v}", ref)
        offline = part["error_code"] in [CODES[e] for e in LEADERLESS]
        if not offline or time.monotonic() >= deadline:
            return Fetched(part)
        time.sleep(0.1)


ABSENT = "KAF-FETCH-8"
"""The requirement a Fetch answer breaks when it leaves out a partition it was asked for."""


def fetched_partitions(
    reply: Node, topic: str, partitions: Sequence[int], what: str, ref: str | None = None
) -> dict[int, Node]:
    """Partitions ``partitions`` of topic ``topic`` (asked by ``ref``, its id from v13, if
    given) in a sessionless Fetch answer, by index.  One the answer leaves out is named as
    "requested but absent" (KAF-FETCH-8), with the arrays that lack it: never read as an
    answer with error 0."""
    topics: NodeList = reply["responses"]
    names = {topic} | ({ref} if ref is not None else set())
    mine = [t for t in topics if t.get("topic", t.get("topic_id")) in names]
    found: dict[int, Node] = {}
    for t in mine:
        for node in t["partitions"]:
            found.setdefault(int(node["partition_index"]), node)
    absent = [p for p in partitions if p not in found]
    if absent:
        where = combined(t["partitions"].at() for t in mine) if mine else topics.at()
        which = ", ".join(str(p) for p in absent)
        raise Violation(
            ABSENT,
            f"{what}: partition {which} of topic {topic} requested but absent from the answer"
            + ("" if mine else " (the topic itself is absent)"),
            where,
        )
    return found


def fetched_partition(
    reply: Node, topic: str, partition: int, requirement: str, what: str, ref: str | None = None
) -> Node:
    """Partition ``partition`` of a Fetch answer about one topic (see
    :func:`fetched_partitions`: an absent one breaks KAF-FETCH-8, whatever ``requirement``
    the case judges the partition by)."""
    return fetched_partitions(reply, topic, [partition], what, ref)[partition]
