"""confluent-kafka (librdkafka) with ``group.protocol=consumer`` (KIP-848) against the
reference broker, revision apache: two consumers of one group share the partitions by
the broker's assignment, one leaves and the other takes over its partitions, every
record is read once; offsets committed with the member epoch are honoured by the next
member.  (Revision doc advertises no flexible-only API, so KIP-848 is apache's alone.)

librdkafka took KIP-848 to general availability in 2.12; the venv's confluent-kafka
bundles a later one (:data:`LIBRDKAFKA`)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.kafka import test_interop_confluent as confluent
from tests.kafka.test_interop_confluent import _create, two_then_one
from tests.support import broker as support

pytestmark = pytest.mark.slow

LIBRDKAFKA = confluent_kafka.libversion()[0]


@pytest.fixture(scope="module")
def kafka() -> Iterator[support.Broker]:
    served = support.start("--revision", "apache", protocol="kafka")
    try:
        yield served
    finally:
        served.stop()


class Member(confluent.Member):
    """A consumer of the KIP-848 protocol; it tracks the partitions it owns through the
    incremental assign and revoke callbacks (the only kind this protocol has)."""

    def __init__(self, address: str, topic: str, group: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": address,
                "group.id": group,
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 200,
            }
        )
        self.owned: set[int] = set()  # type: ignore[assignment]
        self.changed = time.monotonic()
        self.group = group
        self.consumer.subscribe([topic], on_assign=self._assigned, on_revoke=self._revoked)

    def _assigned(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        self.owned |= {p.partition for p in partitions}
        self.changed = time.monotonic()

    def _revoked(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        self.owned -= {p.partition for p in partitions}
        self.changed = time.monotonic()


def test_librdkafka_is_recent_enough_for_kip_848() -> None:
    major, minor, *_ = (int(x) for x in LIBRDKAFKA.split("."))
    assert (major, minor) >= (2, 12), f"librdkafka {LIBRDKAFKA} predates KIP-848's GA (2.12)"


def test_two_consumers_share_a_topic_and_one_takes_over_when_the_other_leaves(
    kafka: support.Broker,
) -> None:
    topic, group = f"cp-{uuid.uuid4().hex[:8]}", f"cp-group-{uuid.uuid4().hex[:8]}"
    _create(kafka.address, topic, 4)

    def disjoint(a: Member, b: Member) -> None:
        assert a.owned.isdisjoint(b.owned)

    two_then_one(
        kafka.address, topic, lambda: Member(kafka.address, topic, group), 4, 40, 60, disjoint
    )
