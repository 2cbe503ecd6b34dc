"""Steps of the cluster administration cases (SPEC-cluster-admin.md), built on
:mod:`.verify` and :mod:`.steps`: each sends one request at the highest version both sides
speak (unless told), checks that the answer names what was asked, and hands back the
node a case judges.

Kafka applies CreatePartitions and IncrementalAlterConfigs on its KRaft controller and a
broker learns of them from the metadata log, so what Metadata and DescribeConfigs show
afterwards is read again until it settles (:func:`until`), for :data:`SETTLE_S` at most.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from conformance.evidence import Node
from conformance.suite.kafka.steps import metadata
from conformance.suite.kafka.verify import (
    KafkaClient,
    expect_code,
    find,
    find_partition,
    first,
    missing,
    usable,
)
from conformance.suite.target import CaseContext

T = TypeVar("T")

SETTLE_S = 5.0
"""How long a change made through the controller may take to show (bounded retry)."""

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC_CONFIG = 1


def until(ctx: CaseContext, ask: Callable[[], T], settled: Callable[[T], bool]) -> T:
    """``ask()`` again until ``settled`` holds of its answer, for SETTLE_S (or the case
    timeout) at most; the last answer, settled or not (the caller judges it)."""
    deadline = time.monotonic() + max(SETTLE_S, ctx.timeout)
    pause = 0.05
    got = ask()
    while not settled(got) and time.monotonic() < deadline:
        time.sleep(pause)
        pause = min(2 * pause, 0.5)
        got = ask()
    return got


# ------------------------------------------------------------------ partitions


def partition_of(
    ctx: CaseContext, k: KafkaClient, topic: str, partition: int, requirement: str, lowest: int = 0
) -> Node:
    """Metadata's entry of ``topic``/``partition`` (Metadata v``lowest``+)."""
    v = usable(ctx, "Metadata", lowest=lowest)
    found = metadata(ctx, k, [topic], version=v)
    t = found.get(topic)
    what = f"Metadata v{v} of {topic}"
    if t is None:
        missing(found.array, f"topic {topic}", requirement, what)
    expect_code(t, "error_code", "NONE", requirement, what)
    return find(
        t["partitions"], "partition_index", partition, f"partition {partition}", requirement, what
    )


def leader_epoch(ctx: CaseContext, k: KafkaClient, topic: str, partition: int) -> int:
    """The partition's leader epoch as Metadata v7+ reports it."""
    return int(partition_of(ctx, k, topic, partition, "KAF-EPOCH-1", lowest=7)["leader_epoch"])


def partitions_until(ctx: CaseContext, k: KafkaClient, topic: str, count: int) -> Node | None:
    """Metadata's entry of ``topic`` once it lists ``count`` partitions (the last one
    seen otherwise, None if the topic was never listed)."""

    def ask() -> Node | None:
        got: Node | None = metadata(ctx, k, [topic]).get(topic)
        return got

    return until(ctx, ask, lambda t: t is not None and len(t["partitions"]) == count)


def create_partitions(
    ctx: CaseContext,
    k: KafkaClient,
    requirement: str,
    *topics: tuple[str, int, list[list[int]] | None],
    validate_only: bool = False,
    version: int | None = None,
) -> Node:
    """One CreatePartitions of ``topics`` ((name, count, assignments)); its answer."""
    v = version if version is not None else usable(ctx, "CreatePartitions")
    body = {
        "topics": [{"name": n, "count": c, "assignments": _assigned(a)} for n, c, a in topics],
        "timeout_ms": 5000,
        "validate_only": validate_only,
    }
    what = f"CreatePartitions v{v}" + (" validate_only" if validate_only else "")
    return k.call("CreatePartitions", v, body, requirement, what)


def _assigned(assignments: list[list[int]] | None) -> list[dict[str, Any]] | None:
    if assignments is None:
        return None
    return [{"broker_ids": ids} for ids in assignments]


def result_of(reply: Node, topic: str, requirement: str) -> Node:
    return find(reply["results"], "name", topic, f"topic {topic}", requirement, "CreatePartitions")


# ------------------------------------------------------------ offsets and records


def epoch_end(
    ctx: CaseContext,
    k: KafkaClient,
    topic: str,
    partition: int,
    epoch: int,
    requirement: str,
    *,
    current: int = -1,
    lowest: int = 0,
    version: int | None = None,
) -> tuple[Node, int]:
    """OffsetForLeaderEpoch of one partition (v``lowest``+, or ``version``); its entry and
    the version."""
    v = version if version is not None else usable(ctx, "OffsetForLeaderEpoch", lowest=lowest)
    body = {
        "replica_id": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": partition, "current_leader_epoch": current, "leader_epoch": epoch}
                ],
            }
        ],
    }
    what = f"OffsetForLeaderEpoch v{v} {topic}/{partition} epoch {epoch}"
    if current != -1:
        what += f" (current {current})"
    reply = k.call("OffsetForLeaderEpoch", v, body, requirement, what)
    t = find(reply["topics"], "topic", topic, f"topic {topic}", requirement, what)
    part = find(
        t["partitions"], "partition", partition, f"partition {partition}", requirement, what
    )
    return part, v


def delete_records(
    ctx: CaseContext,
    k: KafkaClient,
    topic: str,
    offsets: dict[int, int],
    requirement: str,
    version: int | None = None,
) -> dict[int, Node]:
    """One DeleteRecords of ``offsets`` (partition -> offset); each partition's answer."""
    v = version if version is not None else usable(ctx, "DeleteRecords")
    body = {
        "topics": [
            {
                "name": topic,
                "partitions": [{"partition_index": p, "offset": o} for p, o in offsets.items()],
            }
        ],
        "timeout_ms": 5000,
    }
    what = f"DeleteRecords v{v} {topic} {offsets}"
    reply = k.call("DeleteRecords", v, body, requirement, what)
    t = find(reply["topics"], "name", topic, f"topic {topic}", requirement, what)
    return {
        p: find(t["partitions"], "partition_index", p, f"partition {p}", requirement, what)
        for p in offsets
    }


def list_offset(
    ctx: CaseContext,
    k: KafkaClient,
    topic: str,
    partition: int,
    timestamp: int,
    requirement: str,
    *,
    version: int | None = None,
    what: str | None = None,
) -> Node:
    """ListOffsets (v1+, or ``version``) of one partition at ``timestamp``; the partition's
    answer."""
    v = version if version is not None else usable(ctx, "ListOffsets", lowest=1)
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": partition,
                        "timestamp": timestamp,
                        "current_leader_epoch": -1,
                        "max_num_offsets": 1,  # v0 only
                    }
                ],
            }
        ],
    }
    what = what or f"ListOffsets v{v} {topic}/{partition} at {timestamp}"
    reply = k.call("ListOffsets", v, body, requirement, what)
    return find_partition(reply["topics"], topic, partition, requirement, what)


# ------------------------------------------------------------------------ configs


def describe(
    ctx: CaseContext,
    k: KafkaClient,
    kind: int,
    name: str,
    requirement: str,
    *,
    keys: Sequence[str] | None = None,
    synonyms: bool = False,
    docs: bool = False,
    lowest: int = 1,
    version: int | None = None,
) -> tuple[Node, int]:
    """DescribeConfigs (v``lowest``+, or ``version``) of one resource; its result and the
    version."""
    v = version if version is not None else usable(ctx, "DescribeConfigs", lowest=lowest)
    body = {
        "resources": [
            {
                "resource_type": kind,
                "resource_name": name,
                "configuration_keys": None if keys is None else list(keys),
            }
        ],
        "include_synonyms": synonyms,
        "include_documentation": docs,
    }
    what = f"DescribeConfigs v{v} of {name!r}"
    reply = k.call("DescribeConfigs", v, body, requirement, what)
    return first(reply["results"], "results[0]", requirement, what), v


def config_entry(result: Node, name: str, requirement: str) -> Node:
    return find(result["configs"], "name", name, f"config {name}", requirement, "DescribeConfigs")


def config_until(
    ctx: CaseContext,
    k: KafkaClient,
    topic: str,
    name: str,
    settled: Callable[[Node], bool],
    requirement: str,
    *,
    synonyms: bool = False,
) -> Node:
    """DescribeConfigs' entry of config ``name`` of ``topic``, read again until
    ``settled`` holds of it (bounded); error 0 checked."""

    def ask() -> Node:
        result, _ = describe(ctx, k, TOPIC, topic, requirement, keys=[name], synonyms=synonyms)
        expect_code(result, "error_code", "NONE", requirement, f"DescribeConfigs of {topic}")
        return config_entry(result, name, requirement)

    return until(ctx, ask, settled)


def alter(
    ctx: CaseContext,
    k: KafkaClient,
    requirement: str,
    topic: str,
    changes: Sequence[tuple[str, int, str | None]],
    *,
    validate_only: bool = False,
    kind: int = TOPIC,
    version: int | None = None,
) -> Node:
    """One IncrementalAlterConfigs of ``changes`` (name, operation, value) on one
    resource; its answer for it."""
    v = version if version is not None else usable(ctx, "IncrementalAlterConfigs")
    body = {
        "resources": [
            {
                "resource_type": kind,
                "resource_name": topic,
                "configs": [
                    {"name": n, "config_operation": op, "value": value} for n, op, value in changes
                ],
            }
        ],
        "validate_only": validate_only,
    }
    ops = ", ".join(
        f"{['SET', 'DELETE', 'APPEND', 'SUBTRACT'][op]} {n}={val!r}" for n, op, val in changes
    )
    what = f"IncrementalAlterConfigs v{v} {topic}: {ops}" + (
        " (validate_only)" if validate_only else ""
    )
    reply = k.call("IncrementalAlterConfigs", v, body, requirement, what)
    return first(reply["responses"], "responses[0]", requirement, what)
