"""kafka-python's KafkaAdminClient and confluent-kafka's AdminClient (librdkafka) against
the reference broker, both revisions: create partitions, incrementally alter topic
configs and describe them, delete records, describe the cluster, each read back; and
aiokafka's AIOKafkaAdminClient (which has no IncrementalAlterConfigs) reading back what
kafka-python set.

In revision ``doc`` the broker advertises only non-flexible versions, so DescribeCluster
(flexible from v0) is not there: kafka-python then describes the cluster from Metadata
and librdkafka's describe_cluster falls back the same way; both still answer.

A consumer starting at the earliest offset after DeleteRecords starts at the log start
offset (ListOffsets earliest answers it)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete
from aiokafka.admin import NewPartitions as ANewPartitions
from aiokafka.admin.config_resource import ConfigResource as AConfigResource
from aiokafka.admin.config_resource import ConfigResourceType as AConfigResourceType
from aiokafka.structs import TopicPartition as ATopicPartition
from confluent_kafka import Producer as CProducer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource as KConfigResource
from kafka.admin import ConfigResourceType
from kafka.admin import NewPartitions as KNewPartitions
from kafka.admin import NewTopic as KNewTopic

from tests.support.broker import Broker

pytestmark = pytest.mark.slow


def _name(base: str) -> str:
    return f"{base}-{uuid.uuid4().hex[:8]}"


# ------------------------------------------------------------------ kafka-python


@pytest.fixture
def kp_admin(kafka: Broker) -> Iterator[KafkaAdminClient]:
    admin = KafkaAdminClient(bootstrap_servers=kafka.address, request_timeout_ms=10000)
    try:
        yield admin
    finally:
        admin.close()


def _kp_topic(kafka: Broker, admin: KafkaAdminClient, records: int) -> str:
    name = _name("kpca")
    admin.create_topics([KNewTopic(name, 1, 1)])
    producer = KafkaProducer(bootstrap_servers=kafka.address, acks="all")
    try:
        for i in range(records):
            producer.send(name, b"value-%d" % i, partition=0)
        producer.flush(10)
    finally:
        producer.close()
    return name


def test_kafka_python_creates_partitions(kafka: Broker, kp_admin: KafkaAdminClient) -> None:
    name = _kp_topic(kafka, kp_admin, 0)
    kp_admin.create_partitions({name: KNewPartitions(3)})
    described = kp_admin.describe_topics([name])
    assert len(described[0]["partitions"]) == 3
    producer = KafkaProducer(bootstrap_servers=kafka.address, acks="all")
    try:
        meta = producer.send(name, b"to-the-new-one", partition=2).get(10)
    finally:
        producer.close()
    assert (meta.partition, meta.offset) == (2, 0)


def test_kafka_python_alters_and_describes_topic_configs(
    kafka: Broker, kp_admin: KafkaAdminClient
) -> None:
    name = _kp_topic(kafka, kp_admin, 0)
    changes = {"retention.ms": "3600000", "cleanup.policy": ("APPEND", "compact")}
    kp_admin.alter_configs([KConfigResource(ConfigResourceType.TOPIC, name, configs=changes)])
    got = kp_admin.describe_configs([KConfigResource(ConfigResourceType.TOPIC, name)])
    configs = got["topic"][name]
    assert configs["retention.ms"]["value"] == "3600000"
    assert sorted(configs["cleanup.policy"]["value"].split(",")) == ["compact", "delete"]
    every = kp_admin.describe_configs(
        [KConfigResource(ConfigResourceType.TOPIC, name)], config_filter="all"
    )["topic"][name]
    assert every["max.message.bytes"]["value"] == "1048588"


def test_kafka_python_deletes_records(kafka: Broker, kp_admin: KafkaAdminClient) -> None:
    name = _kp_topic(kafka, kp_admin, 10)
    tp = TopicPartition(name, 0)
    got = kp_admin.delete_records({tp: 4})
    assert got[tp]["low_watermark"] == 4 and got[tp]["error_code"] == 0
    again = kp_admin.delete_records({tp: 0})  # below the log start: it stays
    assert again[tp]["low_watermark"] == 4


def test_kafka_python_consumer_starts_at_the_log_start(
    kafka: Broker, kp_admin: KafkaAdminClient
) -> None:
    name = _kp_topic(kafka, kp_admin, 10)
    tp = TopicPartition(name, 0)
    kp_admin.delete_records({tp: 4})
    consumer = KafkaConsumer(bootstrap_servers=kafka.address, auto_offset_reset="earliest")
    try:
        assert consumer.beginning_offsets([tp]) == {tp: 4}
    finally:
        consumer.close()


def test_kafka_python_describes_the_cluster(kafka: Broker, kp_admin: KafkaAdminClient) -> None:
    got = kp_admin.describe_cluster()
    assert got["cluster_id"] == "conformance-reference"
    assert [(b["broker_id"], b["port"]) for b in got["brokers"]] == [(1, kafka.port)]
    assert got["controller_id"] == 1


# ---------------------------------------------------------------- confluent-kafka


@pytest.fixture
def c_admin(kafka: Broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": kafka.address})


def _c_topic(kafka: Broker, admin: AdminClient, records: int) -> str:
    name = _name("cca")
    for future in admin.create_topics([NewTopic(name, 1, 1)]).values():
        future.result(20)
    producer = CProducer({"bootstrap.servers": kafka.address, "acks": "all"})
    for i in range(records):
        producer.produce(name, b"value-%d" % i, partition=0)
    assert producer.flush(10) == 0
    return name


def test_confluent_creates_partitions(kafka: Broker, c_admin: AdminClient) -> None:
    name = _c_topic(kafka, c_admin, 0)
    for future in c_admin.create_partitions([NewPartitions(name, 4)]).values():
        future.result(20)
    assert len(c_admin.list_topics(name, timeout=20).topics[name].partitions) == 4


def test_confluent_alters_and_describes_topic_configs(kafka: Broker, c_admin: AdminClient) -> None:
    name = _c_topic(kafka, c_admin, 0)
    changes = [
        ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry(
            "max.message.bytes", "not-a-number", incremental_operation=AlterConfigOpType.SET
        ),
    ]
    resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=changes)
    for future in c_admin.incremental_alter_configs([resource]).values():
        with pytest.raises(Exception, match=r"INVALID_CONFIG|not a"):
            future.result(20)  # one bad value: none of the changes is applied
    resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=changes[:2])
    for future in c_admin.incremental_alter_configs([resource]).values():
        future.result(20)
    for future in c_admin.describe_configs([ConfigResource(ResourceType.TOPIC, name)]).values():
        configs = future.result(20)
    assert configs["retention.ms"].value == "1000"
    assert configs["retention.ms"].source == 1  # DYNAMIC_TOPIC_CONFIG
    assert sorted(configs["cleanup.policy"].value.split(",")) == ["compact", "delete"]
    assert (
        configs["max.message.bytes"].value == "1048588" and configs["max.message.bytes"].source == 5
    )


def test_confluent_deletes_records(kafka: Broker, c_admin: AdminClient) -> None:
    name = _c_topic(kafka, c_admin, 10)
    for future in c_admin.delete_records([CTopicPartition(name, 0, 6)]).values():
        assert future.result(20).low_watermark == 6
    for future in c_admin.delete_records([CTopicPartition(name, 0, 2)]).values():
        assert future.result(20).low_watermark == 6  # never back


def test_confluent_describes_the_cluster(kafka: Broker, c_admin: AdminClient) -> None:
    got = c_admin.describe_cluster(request_timeout=10).result(20)
    assert got.cluster_id == "conformance-reference"
    assert [(n.id, n.port) for n in got.nodes] == [(1, kafka.port)]
    assert got.controller is not None and got.controller.id == 1


# ----------------------------------------------------------------------- aiokafka


def test_aiokafka_reads_back_partitions_configs_records_and_the_cluster(
    kafka: Broker, kp_admin: KafkaAdminClient
) -> None:
    name = _kp_topic(kafka, kp_admin, 5)
    changes = {"retention.ms": "7200000"}
    kp_admin.alter_configs([KConfigResource(ConfigResourceType.TOPIC, name, configs=changes)])

    async def run() -> tuple[Any, ...]:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka.address)
        await admin.start()
        try:
            await admin.create_partitions({name: ANewPartitions(2)})
            described = await admin.describe_topics([name])
            low = await admin.delete_records({ATopicPartition(name, 0): RecordsToDelete(3)})
            resource = AConfigResource(AConfigResourceType.TOPIC, name)
            configs = await admin.describe_configs([resource], include_synonyms=True)
            cluster = await admin.describe_cluster()
        finally:
            await admin.close()
        return described, low, configs, cluster

    described, low, configs, cluster = asyncio.run(run())
    assert len(described[0]["partitions"]) == 2
    assert low == {ATopicPartition(name, 0): 3}
    entries = {e[0]: e for r in configs for res in r.resources for e in res[4]}
    assert entries["retention.ms"][1] == "7200000" and entries["retention.ms"][3] == 1
    assert cluster["cluster_id"] == "conformance-reference" and cluster["controller_id"] == 1
