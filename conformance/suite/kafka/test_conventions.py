"""Conventions of the Kafka reference broker (SPEC.md, area "conventions"): a target that
does otherwise is UNSUPPORTED, never FAIL."""

from __future__ import annotations

from conformance.suite.case import case, require
from conformance.suite.kafka.steps import metadata
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
        found = metadata(target, k, [name], create=True, version=v)
        got = found.get(name)
        if got is not None and got["error_code"] != 0:  # created now, served on the next ask
            found = metadata(target, k, [name], create=True, version=v)
            got = found.get(name)
    if got is None:
        missing(found.array, f"topic {name}", "KAF-CONV-1", what)
    expect_code(got, "error_code", "NONE", "KAF-CONV-1", what)
    require(
        len(got["partitions"]) == 1,
        "KAF-CONV-1",
        f"{len(got['partitions'])} partitions, expected 1",
        got["partitions"].at(),
    )
