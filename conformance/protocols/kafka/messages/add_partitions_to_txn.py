"""AddPartitionsToTxn (key 24): a transactional producer names the partitions it is about
to write to in its ongoing transaction; the coordinator answers per partition.  v0-3 carry
one transaction (the client's form); v4+ a batch of transactions, each with a
``verify_only`` flag (the form brokers send each other to check a partition is in a
transaction before a transactional write), and a top-level error code.

Versions: 0-5, flexible 3+.
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import BOOL, INT16, INT32, INT64, STRING, Field, array_of, f


def _topics(name: str, versions: str) -> Field:
    return f(
        name,
        array_of("AddPartitionsToTxnTopic", f("name", STRING), f("partitions", array_of(INT32))),
        versions,
    )


def _topic_results(name: str, versions: str) -> Field:
    return f(
        name,
        array_of(
            "AddPartitionsToTxnTopicResult",
            f("name", STRING),
            f(
                "results_by_partition",
                array_of(
                    "AddPartitionsToTxnPartitionResult",
                    f("partition_index", INT32),
                    f("partition_error_code", INT16),
                ),
            ),
        ),
        versions,
    )


REQUEST = message(
    "AddPartitionsToTxnRequest",
    "0-5",
    "3+",
    [
        f(
            "transactions",
            array_of(
                "AddPartitionsToTxnTransaction",
                f("transactional_id", STRING, "4+"),
                f("producer_id", INT64, "4+"),
                f("producer_epoch", INT16, "4+"),
                f("verify_only", BOOL, "4+"),
                _topics("topics", "4+"),
            ),
            "4+",
        ),
        f("v3_and_below_transactional_id", STRING, "0-3"),
        f("v3_and_below_producer_id", INT64, "0-3"),
        f("v3_and_below_producer_epoch", INT16, "0-3"),
        _topics("v3_and_below_topics", "0-3"),
    ],
    doc="partitions to add to a transaction",
    api_key=24,
)

RESPONSE = message(
    "AddPartitionsToTxnResponse",
    "0-5",
    "3+",
    [
        f("throttle_time_ms", INT32),
        f("error_code", INT16, "4+"),
        f(
            "results_by_transaction",
            array_of(
                "AddPartitionsToTxnResult",
                f("transactional_id", STRING, "4+"),
                _topic_results("topic_results", "4+"),
            ),
            "4+",
        ),
        _topic_results("results_by_topic_v3_and_below", "0-3"),
    ],
    doc="each partition's error",
    api_key=24,
)
