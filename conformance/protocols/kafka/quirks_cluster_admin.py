"""Spec quirks of partition and cluster administration (OffsetForLeaderEpoch,
DeleteRecords, CreatePartitions, DescribeConfigs, IncrementalAlterConfigs,
DescribeCluster) (see :mod:`.quirks` for what a quirk may do).  Each breaks exactly the
requirements of SPEC-cluster-admin.md it names:

* ``leader-epoch-not-fenced``: OffsetForLeaderEpoch ignores current_leader_epoch;
* ``delete-records-past-high-watermark``: DeleteRecords answers an offset it refuses
  (OFFSET_OUT_OF_RANGE) with error 0 and that offset as low watermark, moving nothing;
* ``create-partitions-shrink-ok``: CreatePartitions answers a count that is not an
  increase with error 0, changing nothing;
* ``topic-config-source-default``: DescribeConfigs says DEFAULT_CONFIG for every config,
  the ones set on the topic too;
* ``cluster-id-mismatch``: DescribeCluster answers another cluster id than Metadata.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from conformance.plugin import QuirkSpec

if TYPE_CHECKING:
    from conformance.protocols.kafka.codec import Request

DELETE_RECORDS, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_CONFIGS, CREATE_PARTITIONS = 21, 23, 32, 37
DESCRIBE_CLUSTER = 60
OFFSET_OUT_OF_RANGE, INVALID_PARTITIONS = 1, 37
TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5


QUIRKS: dict[str, QuirkSpec] = {
    q.name: q
    for q in (
        QuirkSpec.spec(
            "leader-epoch-not-fenced",
            "leader-epoch",
            "KAF-EPOCH-3",
            "OffsetForLeaderEpoch ignores the current leader epoch a request carries, so a "
            "stale or future one is never fenced",
        ),
        QuirkSpec.spec(
            "delete-records-past-high-watermark",
            "delete-records",
            "KAF-DELREC-4",
            "DeleteRecords answers an offset past the high watermark (or below 0) with error 0 "
            "and that offset as low watermark, though nothing moved",
        ),
        QuirkSpec.spec(
            "create-partitions-shrink-ok",
            "partitions",
            "KAF-PARTS-2",
            "CreatePartitions answers a count that is not an increase with error 0 (the topic "
            "keeps its partitions)",
        ),
        QuirkSpec.spec(
            "topic-config-source-default",
            "configs",
            "KAF-CONFIG-2,KAF-CONFIG-10",
            "DescribeConfigs says DEFAULT_CONFIG (5) for every topic config, those set on the "
            "topic too",
        ),
        QuirkSpec.spec(
            "cluster-id-mismatch",
            "cluster",
            "KAF-CLUSTER-1",
            "DescribeCluster answers a cluster id other than the one Metadata answers",
        ),
    )
}


def before(quirks: tuple[str, ...], request: Request) -> Request | dict[str, Any]:
    """The request as these quirks make the broker see it, or the response instead."""
    if request.api_key == OFFSET_FOR_LEADER_EPOCH and "leader-epoch-not-fenced" in quirks:
        topics = [
            {
                **t,
                "partitions": [{**p, "current_leader_epoch": -1} for p in t.get("partitions", [])],
            }
            for t in request.body.get("topics", [])
        ]
        return dataclasses.replace(request, body={**request.body, "topics": topics})
    return request


def after(quirks: tuple[str, ...], request: Request, response: dict[str, Any]) -> dict[str, Any]:
    """The response as these quirks change it."""
    key = request.api_key
    if key == DELETE_RECORDS and "delete-records-past-high-watermark" in quirks:
        asked = {
            (t.get("name"), p.get("partition_index")): p.get("offset")
            for t in request.body.get("topics", [])
            for p in t.get("partitions", [])
        }
        for t in response.get("topics", []):
            for p in t.get("partitions", []):
                if p.get("error_code") == OFFSET_OUT_OF_RANGE:
                    p["error_code"] = 0
                    p["low_watermark"] = asked.get((t.get("name"), p.get("partition_index")), -1)
    if key == CREATE_PARTITIONS and "create-partitions-shrink-ok" in quirks:
        for r in response.get("results", []):
            if r.get("error_code") == INVALID_PARTITIONS:
                r["error_code"], r["error_message"] = 0, None
    if key == DESCRIBE_CONFIGS and "topic-config-source-default" in quirks:
        for result in response.get("results", []):
            for c in result.get("configs", []):
                if c.get("config_source") == TOPIC_CONFIG:
                    c["config_source"] = DEFAULT_CONFIG
                    c["is_default"] = True
                    c["synonyms"] = [{**s, "source": DEFAULT_CONFIG} for s in c.get("synonyms", [])]
    if key == DESCRIBE_CLUSTER and "cluster-id-mismatch" in quirks and response.get("cluster_id"):
        response["cluster_id"] = response["cluster_id"] + "-other"
    return response
