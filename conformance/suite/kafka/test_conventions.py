"""Conventions of the Kafka reference broker (SPEC.md, area "conventions"): a target that
does otherwise is UNSUPPORTED, never FAIL."""

from __future__ import annotations

from conformance.evidence import Node
from conformance.protocols.kafka.errors import CODES
from conformance.suite.case import case, require
from conformance.suite.kafka.steps import metadata_until
from conformance.suite.kafka.verify import KafkaClient, expect_code, missing, usable
from conformance.suite.target import CaseContext


@case("kafka/conventions/1", "KAF-CONV-1")
def test_metadata_creates_a_topic_it_is_asked_about(target: CaseContext) -> None:
    """The reference broker makes a topic Metadata asks about, with its default partition count (1).

    KAF-CONV-1: "the reference broker creates a topic it is asked about in Metadata (v0-v3, or
    allow_auto_topic_creation from v4), with its default partition count."
    """
    name = target.name("auto")
    v = usable(target, "Metadata")
    what = f"Metadata v{v} asked about {name}"
    with KafkaClient(target) as k:
        # Kafka answers the request that starts a creation UNKNOWN_TOPIC_OR_PARTITION (KRaft)
        # or LEADER_NOT_AVAILABLE, and lists the topic a little later: asked again, bounded
        found = metadata_until(
            target, k, [name], lambda f: _listed(f.get(name)), create=True, version=v
        )
        got = found.get(name)
    what += found.waited_for()
    if got is None:
        missing(found.array, f"topic {name}", "KAF-CONV-1", what)
    expect_code(got, "error_code", "NONE", "KAF-CONV-1", what)
    require(
        len(got["partitions"]) == 1,
        "KAF-CONV-1",
        f"{len(got['partitions'])} partitions, expected 1",
        got["partitions"].at(),
    )


def _listed(t: Node | None) -> bool:
    """Listed with error 0, or refused with an error other than the two of a creation under
    way (one that will stay)."""
    settling = (CODES["UNKNOWN_TOPIC_OR_PARTITION"], CODES["LEADER_NOT_AVAILABLE"])
    return t is not None and t["error_code"] not in settling
