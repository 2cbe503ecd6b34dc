"""Static membership (KIP-345) with a real client, confluent-kafka (librdkafka): a member
with a ``group.instance.id`` that restarts within its session takes its old place (its
partitions back) while the other member sees no rebalance; both revisions."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker import Broker
from tests.support.kafka_client import KafkaConn

pytestmark = pytest.mark.slow

DESCRIBE_GROUPS = 15


class Static:
    """A librdkafka consumer with a group instance id, counting its assignment changes."""

    def __init__(self, address: str, topic: str, group: str, instance: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": address,
                "group.id": group,
                "group.instance.id": instance,
                "session.timeout.ms": 10_000,
                "heartbeat.interval.ms": 300,
                "enable.auto.commit": False,
            }
        )
        self.owned: list[int] = []
        self.changes = 0
        self.consumer.subscribe([topic], on_assign=self._assigned, on_revoke=self._revoked)

    def _assigned(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        self.owned, self.changes = sorted(p.partition for p in partitions), self.changes + 1

    def _revoked(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        self.owned, self.changes = [], self.changes + 1

    def poll(self) -> None:
        self.consumer.poll(0.1)


def _until(done: Any, members: list[Static], within: float, what: str) -> None:
    end = time.monotonic() + within
    while not done():
        assert time.monotonic() < end, what
        for m in members:
            m.poll()


def _members(address: str, group: str) -> list[tuple[str, str | None]]:
    host, port = address.rsplit(":", 1)
    conn = KafkaConn((host, int(port)))
    try:
        (described,) = conn.call(DESCRIBE_GROUPS, 4, {"groups": [group]})["groups"]
    finally:
        conn.close()
    return sorted((m["member_id"], m["group_instance_id"]) for m in described["members"])


def test_a_restarted_static_member_takes_its_partitions_back_without_a_rebalance(
    kafka: Broker,
) -> None:
    topic, group = f"st-{uuid.uuid4().hex[:8]}", f"st-group-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.address})
    for future in admin.create_topics([NewTopic(topic, 4, 1)]).values():
        future.result(20)
    a = Static(kafka.address, topic, group, "a")
    b = Static(kafka.address, topic, group, "b")
    _until(lambda: a.owned and b.owned, [a, b], 60, "both members own partitions")
    _until(lambda: len(_members(kafka.address, group)) == 2, [a, b], 20, "two members")
    before, owned_a, b_changes = _members(kafka.address, group), a.owned, b.changes
    a.consumer.close()  # a static member leaves no LeaveGroup behind (KIP-345)
    again = Static(kafka.address, topic, group, "a")
    _until(lambda: again.owned, [again, b], 30, "the restarted member owns partitions")
    end = time.monotonic() + 2  # a rebalance would reach b's callbacks within this
    while time.monotonic() < end:
        again.poll()
        b.poll()
    after = _members(kafka.address, group)
    try:
        assert again.owned == owned_a, "the restarted member got other partitions"
        assert b.changes == b_changes, "the other member went through a rebalance"
        assert [i for _, i in after] == ["a", "b"] == [i for _, i in before]
        ids = {i: m for m, i in before}
        assert ids["a"] not in dict(after), "the old member id was replaced"
        assert ids["b"] in dict(after), "the other member kept its member id"
    finally:
        again.consumer.close()
        b.consumer.close()
