"""Metadata steps of the Kafka cases: Metadata asked once (:func:`metadata`), or again
until a change shows (:func:`metadata_until`), and a topic's id (:func:`topic_id`).

Kafka's metadata is eventually consistent: a KRaft broker learns a topic created or
deleted from the controller's metadata log a little later, and answers the Metadata
request that starts an auto-creation UNKNOWN_TOPIC_OR_PARTITION
(``AutoTopicCreationManager``).  So a step that waits for a change asks again, bounded by
:data:`METADATA_WAIT_S`, and hands back the last answer with how long it waited.
:mod:`.steps` re-exports these names.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from conformance.evidence import Node, NodeList
from conformance.protocols.kafka.errors import CODES
from conformance.suite.kafka.verify import KafkaClient, expect_code, missing, usable
from conformance.suite.target import CaseContext

SETTLING = ("UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE")
"""What Kafka answers for a topic whose creation it has not finished: KRaft
UNKNOWN_TOPIC_OR_PARTITION (``AutoTopicCreationManager``), ZooKeeper mode and a partition
without a leader yet LEADER_NOT_AVAILABLE."""


def settled(t: Node | None) -> bool:
    """A topic Metadata lists with its leaders, or refuses with an error that will stay."""
    settling = [CODES[e] for e in SETTLING]
    if t is None or t["error_code"] in settling:
        return False
    return all(p["error_code"] not in settling for p in t["partitions"])


METADATA_WAIT_S = 5.0
"""How long :func:`metadata_until` asks again (at least; the case timeout if longer)."""


class Topics(dict[str, Node]):
    """Metadata's topics by name; ``array`` is the answer's topics array (the evidence
    when a topic is missing, or listed when it should not be); ``tries`` and ``waited``
    say how often and how long :func:`metadata_until` asked."""

    array: NodeList
    tries: int = 1
    waited: float = 0.0

    def waited_for(self) -> str:
        """`` (after N answers over S s)`` when Metadata was asked more than once."""
        if self.tries <= 1:
            return ""
        return f" (after {self.tries} answers over {self.waited:.1f} s)"


def metadata(
    ctx: CaseContext,
    k: KafkaClient,
    topics: list[str] | None,
    *,
    create: bool = False,
    version: int | None = None,
) -> Topics:
    """Metadata's topics by name (``topics`` None: all, from v1)."""
    v = version if version is not None else usable(ctx, "Metadata")
    body: dict[str, Any] = {"topics": None if topics is None else [{"name": t} for t in topics]}
    body["allow_auto_topic_creation"] = create
    reply = k.call("Metadata", v, body, "KAF-ADMIN-2", f"Metadata v{v}")
    found = Topics((str(t["name"]), t) for t in reply["topics"])
    found.array = reply["topics"]
    return found


def metadata_until(
    ctx: CaseContext,
    k: KafkaClient,
    topics: list[str] | None,
    settled: Callable[[Topics], bool],
    *,
    create: bool = False,
    version: int | None = None,
) -> Topics:
    """Metadata asked again until ``settled`` holds of its answer, for
    :data:`METADATA_WAIT_S` (or the case timeout) at most: Kafka's metadata is eventually
    consistent (KRaft brokers follow the controller's log), so a change shows a little
    later.  The last answer, whether or not it settled; the caller judges it."""
    start = time.monotonic()
    deadline = start + max(METADATA_WAIT_S, ctx.timeout)
    pause, tries = 0.05, 1
    found = metadata(ctx, k, topics, create=create, version=version)
    while not settled(found) and time.monotonic() < deadline:
        time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
        pause = min(2 * pause, 0.5)
        found = metadata(ctx, k, topics, create=create, version=version)
        tries += 1
    found.tries, found.waited = tries, time.monotonic() - start
    return found


def topic_id(ctx: CaseContext, k: KafkaClient, topic: str) -> str:
    """The topic's id (Metadata v10+), for Fetch v13+."""
    v = usable(ctx, "Metadata", lowest=10)
    found = metadata(ctx, k, [topic], version=v)
    t = found.get(topic)
    if t is None:
        missing(found.array, f"topic {topic}", "KAF-ADMIN-2", f"Metadata v{v}")
    expect_code(t, "error_code", "NONE", "KAF-ADMIN-2", f"Metadata v{v} of {topic}")
    tid: str = t["topic_id"]
    return tid
