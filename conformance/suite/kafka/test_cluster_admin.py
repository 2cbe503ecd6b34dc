"""Kafka leader epochs, partitions and the cluster (SPEC-cluster-admin.md, areas
"leader-epoch", "partitions" and "cluster"); DeleteRecords is in
test_cluster_admin_records.py, configs in test_cluster_admin_configs.py."""

from __future__ import annotations

from conformance.suite.case import case, require
from conformance.suite.kafka.cluster_admin_steps import (
    create_partitions,
    epoch_end,
    leader_epoch,
    partition_of,
    partitions_until,
    result_of,
)
from conformance.suite.kafka.steps import batch, create_topic, metadata, produce
from conformance.suite.kafka.verify import (
    KafkaClient,
    at_every_version,
    expect_code,
    need,
    usable,
)
from conformance.suite.shown import show_all
from conformance.suite.target import CaseContext

NOT_ASKED = -2147483648
CLUSTER_OPS = {5, 7, 8, 9, 10, 11, 12}

# ------------------------------------------------------------------ leader-epoch


@case("kafka/leader-epoch/1", "KAF-EPOCH-1")
@at_every_version("OffsetForLeaderEpoch")
def test_the_current_epoch_ends_at_the_log_end(target: CaseContext, version: int) -> None:
    """The current leader epoch ends at the log end offset.

    KAF-EPOCH-1: "OffsetForLeaderEpoch for a partition's current leader epoch (the leader_epoch
    Metadata v7+ reports) answers error 0, that epoch (v1+) and the partition's log end offset as
    end_offset."
    """
    need(target, "OffsetForLeaderEpoch", version)
    with KafkaClient(target) as k:
        name = create_topic(target, k, "epochs")
        produce(target, k, name, batch([b"a", b"b", b"c"]), requirement="KAF-EPOCH-1")
        epoch = leader_epoch(target, k, name, 0)
        got, v = epoch_end(target, k, name, 0, epoch, "KAF-EPOCH-1", version=version)
    expect_code(got, "error_code", "NONE", "KAF-EPOCH-1", f"epoch {epoch}")
    require(
        got["end_offset"] == 3,
        "KAF-EPOCH-1",
        f"end_offset {got['end_offset']} for the current epoch {epoch}, expected 3 (three "
        "records written, acks -1)",
        got.at("end_offset"),
    )
    if v >= 1:
        require(
            got["leader_epoch"] == epoch,
            "KAF-EPOCH-1",
            f"leader_epoch {got['leader_epoch']}, expected {epoch} (Metadata's)",
            got.at("leader_epoch"),
        )


@case("kafka/leader-epoch/2", "KAF-EPOCH-2")
def test_an_epoch_above_the_current_one_is_undefined(target: CaseContext) -> None:
    """An epoch above the current one answers leader_epoch -1 and end_offset -1.

    KAF-EPOCH-2: "OffsetForLeaderEpoch for an epoch above the partition's current one answers
    error 0 with leader_epoch -1 (v1+) and end_offset -1."
    """
    with KafkaClient(target) as k:
        name = create_topic(target, k, "future")
        produce(target, k, name, batch([b"a"]), requirement="KAF-EPOCH-2")
        epoch = leader_epoch(target, k, name, 0) + 5
        got, v = epoch_end(target, k, name, 0, epoch, "KAF-EPOCH-2")
    expect_code(got, "error_code", "NONE", "KAF-EPOCH-2", f"epoch {epoch}")
    fields = ["end_offset"] + (["leader_epoch"] if v >= 1 else [])
    wrong = [f for f in fields if got[f] != -1]
    require(
        not wrong,
        "KAF-EPOCH-2",
        f"epoch {epoch}: " + ", ".join(f"{f} {got[f]}" for f in fields) + ", expected -1",
        got.at(*wrong) if wrong else got.at(),
    )


@case("kafka/leader-epoch/3", "KAF-EPOCH-3")
def test_a_stale_or_future_current_epoch_is_fenced(target: CaseContext) -> None:
    """A current_leader_epoch below the partition's is FENCED_LEADER_EPOCH, one above it
    UNKNOWN_LEADER_EPOCH.

    KAF-EPOCH-3: "a current_leader_epoch (v2+) below the partition's leader epoch is answered
    FENCED_LEADER_EPOCH (74), one above it UNKNOWN_LEADER_EPOCH (75); -1 means none and is not
    checked."
    """
    usable(target, "OffsetForLeaderEpoch", lowest=2)
    with KafkaClient(target) as k:
        name = create_topic(target, k, "fenced")
        epoch = leader_epoch(target, k, name, 0)
        stale = epoch - 1 if epoch > 0 else -2  # -1 would mean "no epoch"
        for current, error in ((stale, "FENCED_LEADER_EPOCH"), (epoch + 1, "UNKNOWN_LEADER_EPOCH")):
            got, _ = epoch_end(target, k, name, 0, epoch, "KAF-EPOCH-3", current=current, lowest=2)
            expect_code(
                got, "error_code", error, "KAF-EPOCH-3", f"current epoch {current} of {epoch}"
            )
        got, _ = epoch_end(target, k, name, 0, epoch, "KAF-EPOCH-3", current=-1, lowest=2)
    expect_code(got, "error_code", "NONE", "KAF-EPOCH-3", "current epoch -1 (none)")


@case("kafka/leader-epoch/4", "KAF-EPOCH-4")
def test_an_unknown_partition_has_no_epoch(target: CaseContext) -> None:
    """An unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION (3).

    KAF-EPOCH-4: "OffsetForLeaderEpoch for a topic or partition the broker does not have answers
    UNKNOWN_TOPIC_OR_PARTITION (3) for it."
    """
    with KafkaClient(target) as k:
        name = create_topic(target, k, "oneepoch")
        for topic, partition in ((target.name("noepoch"), 0), (name, 7)):
            got, _ = epoch_end(target, k, topic, partition, 0, "KAF-EPOCH-4")
            expect_code(
                got,
                "error_code",
                "UNKNOWN_TOPIC_OR_PARTITION",
                "KAF-EPOCH-4",
                f"{topic}/{partition}",
            )


# -------------------------------------------------------------------- partitions


@case("kafka/partitions/1", "KAF-PARTS-1")
@at_every_version("CreatePartitions")
def test_create_partitions_adds_writable_partitions(target: CaseContext, version: int) -> None:
    """CreatePartitions raises the count; Metadata lists the new partitions, which take writes.

    KAF-PARTS-1: "CreatePartitions with a count above the topic's partition count answers error 0,
    and Metadata then lists that many partitions, the new ones writable."
    """
    need(target, "CreatePartitions", version)
    with KafkaClient(target) as k:
        name = create_topic(target, k, "grow")
        reply = create_partitions(target, k, "KAF-PARTS-1", (name, 3, None), version=version)
        expect_code(
            result_of(reply, name, "KAF-PARTS-1"), "error_code", "NONE", "KAF-PARTS-1", "1 -> 3"
        )
        t = partitions_until(target, k, name, 3)
        count = len(t["partitions"]) if t is not None else 0
        require(
            count == 3,
            "KAF-PARTS-1",
            f"Metadata lists {count} partition(s) of {name} after CreatePartitions to 3",
            t["partitions"].at() if t is not None else reply.at(),
        )
        produce(target, k, name, batch([b"new"]), partition=2, requirement="KAF-PARTS-1")


@case("kafka/partitions/2", "KAF-PARTS-2")
def test_a_count_that_is_no_increase_is_invalid(target: CaseContext) -> None:
    """An equal or lower count is INVALID_PARTITIONS (37); the topic keeps its partitions.

    KAF-PARTS-2: "CreatePartitions with a count equal to or below the topic's partition count
    answers INVALID_PARTITIONS (37), and the topic keeps its partitions."
    """
    with KafkaClient(target) as k:
        name = create_topic(target, k, "keep", partitions=2)
        for count in (2, 1):
            reply = create_partitions(target, k, "KAF-PARTS-2", (name, count, None))
            got = result_of(reply, name, "KAF-PARTS-2")
            expect_code(got, "error_code", "INVALID_PARTITIONS", "KAF-PARTS-2", f"2 -> {count}")
        t = metadata(target, k, [name]).get(name)
    count = len(t["partitions"]) if t is not None else 0
    require(count == 2, "KAF-PARTS-2", f"{name} has {count} partition(s), expected 2", got.at())


@case("kafka/partitions/3", "KAF-PARTS-3")
def test_validate_only_adds_no_partition(target: CaseContext) -> None:
    """validate_only answers error 0 and adds nothing.

    KAF-PARTS-3: "CreatePartitions with validate_only answers as it would otherwise (error 0 for a
    valid request) and adds no partition."
    """
    with KafkaClient(target) as k:
        name = create_topic(target, k, "dryparts")
        reply = create_partitions(target, k, "KAF-PARTS-3", (name, 4, None), validate_only=True)
        got = result_of(reply, name, "KAF-PARTS-3")
        expect_code(got, "error_code", "NONE", "KAF-PARTS-3", "1 -> 4, validate_only")
        t = metadata(target, k, [name]).get(name)
    count = len(t["partitions"]) if t is not None else 0
    require(
        count == 1,
        "KAF-PARTS-3",
        f"{name} has {count} partition(s) after a validate_only CreatePartitions, expected 1",
        t["partitions"].at() if t is not None else got.at(),
    )


@case("kafka/partitions/4", "KAF-PARTS-4")
def test_assignments_are_checked(target: CaseContext) -> None:
    """Assignments of the wrong number or naming an unknown broker are INVALID_REPLICA_ASSIGNMENT
    (39); one replica on a live broker per new partition is accepted.

    KAF-PARTS-4: "CreatePartitions with assignments whose number differs from the partitions added,
    or that name a broker the cluster does not have, answers INVALID_REPLICA_ASSIGNMENT (39);
    assignments naming, for each new partition of a one-replica topic, one broker the cluster has
    are accepted."
    """
    with KafkaClient(target) as k:
        name = create_topic(target, k, "assigned")
        leader = int(partition_of(target, k, name, 0, "KAF-PARTS-4")["leader_id"])
        bad = [
            ([[leader]], "1 assignment for 2 new partitions"),
            ([[leader], [987654]], "broker 987654"),
        ]
        for assignments, what in bad:
            reply = create_partitions(target, k, "KAF-PARTS-4", (name, 3, assignments))
            got = result_of(reply, name, "KAF-PARTS-4")
            expect_code(got, "error_code", "INVALID_REPLICA_ASSIGNMENT", "KAF-PARTS-4", what)
        reply = create_partitions(target, k, "KAF-PARTS-4", (name, 3, [[leader], [leader]]))
    got = result_of(reply, name, "KAF-PARTS-4")
    expect_code(got, "error_code", "NONE", "KAF-PARTS-4", f"two new partitions on broker {leader}")


@case("kafka/partitions/5", "KAF-PARTS-5")
def test_an_unknown_or_repeated_topic_is_refused(target: CaseContext) -> None:
    """An unknown topic is UNKNOWN_TOPIC_OR_PARTITION (3), a repeated one INVALID_REQUEST (42).

    KAF-PARTS-5: "CreatePartitions of a topic the broker does not have answers
    UNKNOWN_TOPIC_OR_PARTITION (3), and a topic named twice in one request answers
    INVALID_REQUEST (42)."
    """
    with KafkaClient(target) as k:
        absent = target.name("nopart")
        reply = create_partitions(target, k, "KAF-PARTS-5", (absent, 2, None))
        got = result_of(reply, absent, "KAF-PARTS-5")
        expect_code(got, "error_code", "UNKNOWN_TOPIC_OR_PARTITION", "KAF-PARTS-5", absent)
        name = create_topic(target, k, "twice")
        reply = create_partitions(target, k, "KAF-PARTS-5", (name, 2, None), (name, 3, None))
    got = result_of(reply, name, "KAF-PARTS-5")
    expect_code(got, "error_code", "INVALID_REQUEST", "KAF-PARTS-5", f"{name} named twice")


# ----------------------------------------------------------------------- cluster


@case("kafka/cluster/1", "KAF-CLUSTER-1")
@at_every_version("DescribeCluster")
def test_describe_cluster_agrees_with_metadata(target: CaseContext, version: int) -> None:
    """DescribeCluster answers Metadata's cluster id and brokers, and a controller among them.

    KAF-CLUSTER-1: "DescribeCluster answers error 0, the cluster_id Metadata (v2+) answers, the
    brokers Metadata lists (node id, host and port) and a controller_id that is one of them or -1."
    """
    need(target, "DescribeCluster", version)
    v = version
    m = usable(target, "Metadata", lowest=2)
    with KafkaClient(target) as k:
        meta = k.call(
            "Metadata",
            m,
            {"topics": [], "allow_auto_topic_creation": False},
            "KAF-CLUSTER-1",
            f"Metadata v{m}",
        )
        got = k.call(
            "DescribeCluster",
            v,
            {"include_cluster_authorized_operations": False},
            "KAF-CLUSTER-1",
            f"DescribeCluster v{v}",
        )
    expect_code(got, "error_code", "NONE", "KAF-CLUSTER-1", f"DescribeCluster v{v}")
    require(
        got["cluster_id"] == meta["cluster_id"],
        "KAF-CLUSTER-1",
        f"cluster_id {got['cluster_id']!r}, Metadata says {meta['cluster_id']!r}",
        got.at("cluster_id") + meta.at("cluster_id"),
    )
    mine = sorted((b["broker_id"], b["host"], b["port"]) for b in got["brokers"])
    theirs = sorted((b["node_id"], b["host"], b["port"]) for b in meta["brokers"])
    require(
        mine == theirs,
        "KAF-CLUSTER-1",
        f"brokers {show_all(mine)}, Metadata lists {show_all(theirs)}",
        got["brokers"].at() + meta["brokers"].at(),
    )
    ids = {b[0] for b in mine}
    require(
        got["controller_id"] in ids | {-1},
        "KAF-CLUSTER-1",
        f"controller_id {got['controller_id']}, expected one of {show_all(sorted(ids))} or -1",
        got.at("controller_id"),
    )


@case("kafka/cluster/2", "KAF-CLUSTER-2")
def test_authorized_operations_only_when_asked(target: CaseContext) -> None:
    """cluster_authorized_operations is -2147483648 unless asked for, then cluster operations.

    KAF-CLUSTER-2: "DescribeCluster without include_cluster_authorized_operations answers
    cluster_authorized_operations -2147483648; with it, a bit field of cluster operations (no bit
    outside CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
    IDEMPOTENT_WRITE 12; all of them without an authorizer)."
    """
    v = usable(target, "DescribeCluster")
    with KafkaClient(target) as k:
        plain = k.call(
            "DescribeCluster",
            v,
            {"include_cluster_authorized_operations": False},
            "KAF-CLUSTER-2",
            "not asked",
        )
        asked = k.call(
            "DescribeCluster",
            v,
            {"include_cluster_authorized_operations": True},
            "KAF-CLUSTER-2",
            "asked",
        )
    got = plain["cluster_authorized_operations"]
    require(
        got == NOT_ASKED,
        "KAF-CLUSTER-2",
        f"cluster_authorized_operations {got} when not asked for, expected {NOT_ASKED}",
        plain.at("cluster_authorized_operations"),
    )
    ops = asked["cluster_authorized_operations"]
    bits = {i for i in range(32) if (ops & 0xFFFFFFFF) >> i & 1}
    require(
        ops != NOT_ASKED and bits <= CLUSTER_OPS,
        "KAF-CLUSTER-2",
        f"cluster_authorized_operations {ops} (bits {show_all(sorted(bits))}) when asked for, "
        f"expected a subset of bits {show_all(sorted(CLUSTER_OPS))}",
        asked.at("cluster_authorized_operations"),
    )


@case("kafka/cluster/3", "KAF-CLUSTER-3")
def test_endpoint_types(target: CaseContext) -> None:
    """v1: brokers are described; controllers are MISMATCHED_ENDPOINT_TYPE, others
    UNSUPPORTED_ENDPOINT_TYPE.

    KAF-CLUSTER-3: "DescribeCluster v1 with endpoint_type 1 (brokers) answers endpoint_type 1; on a
    broker listener endpoint_type 2 (controllers) answers MISMATCHED_ENDPOINT_TYPE (114) and an
    unknown endpoint type UNSUPPORTED_ENDPOINT_TYPE (115)."
    """
    v = usable(target, "DescribeCluster", lowest=1)
    with KafkaClient(target) as k:
        answers = {
            t: k.call(
                "DescribeCluster",
                v,
                {"include_cluster_authorized_operations": False, "endpoint_type": t},
                "KAF-CLUSTER-3",
                f"DescribeCluster v{v} endpoint_type {t}",
            )
            for t in (1, 2, 7)
        }
    brokers = answers[1]
    expect_code(brokers, "error_code", "NONE", "KAF-CLUSTER-3", "endpoint_type 1")
    require(
        brokers["endpoint_type"] == 1,
        "KAF-CLUSTER-3",
        f"endpoint_type {brokers['endpoint_type']} in the answer, expected 1",
        brokers.at("endpoint_type"),
    )
    expect_code(
        answers[2], "error_code", "MISMATCHED_ENDPOINT_TYPE", "KAF-CLUSTER-3", "endpoint_type 2"
    )
    expect_code(
        answers[7], "error_code", "UNSUPPORTED_ENDPOINT_TYPE", "KAF-CLUSTER-3", "endpoint_type 7"
    )
