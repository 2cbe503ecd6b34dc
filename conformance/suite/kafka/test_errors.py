"""Kafka error codes (SPEC.md, area "errors")."""

from __future__ import annotations

from collections.abc import Callable

from conformance.evidence import Node
from conformance.suite.case import case
from conformance.suite.kafka.group_steps import heartbeat, settle
from conformance.suite.kafka.steps import batch, create_topic, fetch, produce_parts
from conformance.suite.kafka.verify import KafkaClient, expect_code
from conformance.suite.target import CaseContext


def _refusals(target: CaseContext, k: KafkaClient) -> list[tuple[str, Callable[[], Node], str]]:
    """(what, how to provoke it (the struct of the answer holding its error code), the code
    the requirements name)."""
    topic = create_topic(target, k, "errs")
    return [
        (
            "Fetch past the log",
            lambda: fetch(target, k, topic, 0, 99, requirement="KAF-ERR-1").part,
            "OFFSET_OUT_OF_RANGE",
        ),
        (
            "Produce to partition 5",
            lambda: produce_parts(target, k, topic, {5: batch([b"x"])}, requirement="KAF-ERR-1")[5],
            "UNKNOWN_TOPIC_OR_PARTITION",
        ),
        (
            "Heartbeat from 'nobody'",
            lambda: heartbeat(
                target,
                k,
                settle(target, k, target.name("g")),
                member_id="nobody",
                requirement="KAF-ERR-1",
            ),
            "UNKNOWN_MEMBER_ID",
        ),
    ]


@case("kafka/errors/1", "KAF-ERR-1")
def test_refusals_use_the_codes_the_requirements_name(target: CaseContext) -> None:
    """Every error code is from the protocol's table, and a refusal uses the code named for it.

    KAF-ERR-1: "every error code in a response is 0 or a code of the protocol's error table, and a
    refusal uses the code the requirement names."
    """
    with KafkaClient(target) as k:
        for what, provoke, name in _refusals(target, k):
            expect_code(provoke(), "error_code", name, "KAF-ERR-1", what)


@case("kafka/errors/2", "KAF-ERR-2")
def test_a_refused_request_leaves_the_connection_usable(target: CaseContext) -> None:
    """After a request refused with an error code, the next request on it is answered.

    KAF-ERR-2: "a request refused with an error code leaves the connection usable: the next request
    on it is answered."
    """
    with KafkaClient(target) as k:
        for what, provoke, _ in _refusals(target, k):
            provoke()
            k.call("ApiVersions", 0, {}, "KAF-ERR-2", f"ApiVersions after {what}")
