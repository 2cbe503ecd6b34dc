"""Conventions of the Kafka reference broker (SPEC.md, area "conventions"): a target that
does otherwise is UNSUPPORTED, never FAIL."""

from __future__ import annotations

from conformance.suite.case import case, require
from conformance.suite.kafka.steps import metadata
from conformance.suite.kafka.verify import KafkaClient, usable
from conformance.suite.target import CaseContext


@case("kafka/conventions/1", "KAF-CONV-1")
def test_metadata_creates_a_topic_it_is_asked_about(target: CaseContext) -> None:
    """The reference broker makes a topic Metadata asks about, with its default partition count (1).

    KAF-CONV-1: "the reference broker creates a topic it is asked about in Metadata (v0-v3, or
    allow_auto_topic_creation from v4), with its default partition count."
    """
    name = target.name("auto")
    v = usable(target, "Metadata")
    with KafkaClient(target) as k:
        got = metadata(target, k, [name], create=True, version=v).get(name)
        if got is not None and got["error_code"] != 0:  # created now, served on the next ask
            got = metadata(target, k, [name], create=True, version=v).get(name)
    require(
        got is not None and got["error_code"] == 0,
        "KAF-CONV-1",
        f"Metadata v{v} did not create {name}: {got and got['error_code']}",
    )
    assert got is not None
    require(
        len(got["partitions"]) == 1,
        "KAF-CONV-1",
        f"{len(got['partitions'])} partitions, expected 1",
    )
