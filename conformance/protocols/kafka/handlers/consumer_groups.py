"""The handlers of the consumer group protocol of KIP-848: ConsumerGroupHeartbeat (68)
and ConsumerGroupDescribe (69), served by :mod:`..consumer_group`.

Behaviour / version notes:

* v0 and v1 of both.  A heartbeat is checked first as Kafka 4's
  ``GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid`` checks it
  (INVALID_REQUEST with a message): an empty group id, instance id or rack id; in v1 an
  empty member id (KIP-1082: the client makes it), in v0 an empty one with epoch > 0 or
  -1; a join (epoch 0) without a rebalance timeout, with owned partitions that are null
  or not empty, or with neither topic names nor a regex (an empty list of names is a
  member subscribed to nothing); epoch -2 without an instance id; an epoch below -2.
  An assignor other than ``uniform`` or ``range`` is UNSUPPORTED_ASSIGNOR.  Then the
  coordinator's errors (GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
  UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID).
  An error answer carries only the error code and message (epoch 0, interval 0).
* A group id is either a classic group (:mod:`..coordinator`) or a consumer group.  A
  join to a classic group with members is GROUP_ID_NOT_FOUND ("not a consumer group");
  an empty classic group gives up its id and becomes a consumer group (Kafka 4's
  ``getOrMaybeCreateConsumerGroup``, its committed offsets kept).
* ConsumerGroupDescribe of a group that is not a consumer group is GROUP_ID_NOT_FOUND;
  v1 reports each member's type (1: a consumer-protocol member).

Not served: regular-expression subscriptions (v1's SubscribedTopicRegex; Kafka 4.0 serves
them) are INVALID_REQUEST, as Kafka 3.9 answered (an empty regex, which librdkafka sends
with topic names, is no regex); classic members inside a consumer group and the online
upgrade of a non-empty classic group of type "consumer" (Kafka's migration policy: such
a join is GROUP_ID_NOT_FOUND here, converted by Kafka 4 by default).
"""

from __future__ import annotations

import weakref
from typing import Any

from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.consumer_group import (
    ConsumerGroups,
    GroupError,
    Heartbeat,
    named,
)
from conformance.protocols.kafka.consumer_group_assignors import ASSIGNORS, DEFAULT, Topics
from conformance.protocols.kafka.consumer_group_state import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    as_wire,
    from_wire,
)
from conformance.protocols.kafka.context import Broker, Handler
from conformance.protocols.kafka.errors import code
from conformance.protocols.kafka.group_store import classic_groups

_GROUPS: weakref.WeakKeyDictionary[Broker, ConsumerGroups] = weakref.WeakKeyDictionary()
CONSUMER_MEMBER = 1
"""ConsumerGroupDescribe v1's member type of a consumer-protocol member (KIP-1099)."""


def consumer_groups(broker: Broker) -> ConsumerGroups:
    """The broker's consumer groups (made at first use).  A group id is a classic group's
    or a consumer group's: the classic groups stored before a restart are taken back first
    (:func:`..group_store.classic_groups`), so no caller sees an id free that one holds."""
    groups = _GROUPS.get(broker)
    if groups is None:
        classic_groups(broker)
        groups = _GROUPS[broker] = ConsumerGroups(
            broker.clock,
            lambda names: _topics(broker, names),
            session_timeout_ms=broker.config.consumer_session_timeout_ms,
        )
    return groups


def _topics(broker: Broker, names: list[str]) -> Topics:
    return {
        n: (broker.topic_id(n), broker.engine.topic(n).partitions)
        for n in names
        if broker.engine.has_topic(n)
    }


def _invalid(body: dict[str, Any], version: int) -> str | None:
    """Why Kafka refuses this heartbeat as INVALID_REQUEST, or None."""
    epoch = int(body.get("member_epoch", 0))
    member_id = body.get("member_id", "")
    if not body.get("group_id"):
        return "GroupId can't be empty."
    if body.get("instance_id") == "":
        return "InstanceId can't be empty."
    if body.get("rack_id") == "":
        return "RackId can't be empty."
    if body.get("subscribed_topic_regex"):
        return "SubscribedTopicRegex is not supported by this broker."
    if version >= 1 and not member_id:
        return "MemberId can't be empty."
    if epoch == JOIN_EPOCH:
        if int(body.get("rebalance_timeout_ms", -1)) == -1:
            return "RebalanceTimeoutMs must be provided in first request."
        if body.get("topic_partitions") is None or body.get("topic_partitions"):
            return "TopicPartitions must be empty when (re-)joining."
        if (
            body.get("subscribed_topic_names") is None
            and body.get("subscribed_topic_regex") is None
        ):
            return "Either SubscribedTopicNames or SubscribedTopicRegex must be set."
    elif epoch > 0 or epoch == LEAVE_EPOCH:
        if not member_id:
            return "MemberId can't be empty."
    elif epoch == STATIC_LEAVE_EPOCH:
        if body.get("instance_id") is None:
            return "InstanceId can't be null."
    else:
        return "MemberEpoch is invalid."
    return None


def _error(error: str, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": code(error),
        "error_message": message,
        "member_id": None,
        "member_epoch": 0,
        "heartbeat_interval_ms": 0,
        "assignment": None,
    }


def consumer_group_heartbeat(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body = request.body
    why = _invalid(body, request.api_version)
    if why is not None:
        return _error("INVALID_REQUEST", why)
    assignor = body.get("server_assignor")
    if assignor is not None and assignor not in ASSIGNORS:
        return _error(
            "UNSUPPORTED_ASSIGNOR",
            f"ServerAssignor {assignor} is not supported. Supported assignors: "
            + ", ".join(ASSIGNORS)
            + ".",
        )
    group_id = body["group_id"]
    hb = Heartbeat(
        group_id=group_id,
        member_id=body.get("member_id", ""),
        member_epoch=int(body.get("member_epoch", 0)),
        instance_id=body.get("instance_id"),
        rack_id=body.get("rack_id"),
        rebalance_timeout_ms=int(body.get("rebalance_timeout_ms", -1)),
        subscribed_topic_names=body.get("subscribed_topic_names"),
        server_assignor=assignor,
        owned=from_wire(body.get("topic_partitions")),
        client_id=request.client_id or "",
        client_host="/" + (peer.rpartition(":")[0] or peer),
    )

    def take_over_classic() -> None:
        classic = classic_groups(broker)
        if classic.describe(group_id).state == "Dead":
            return
        if classic.forget_empty(group_id) != "NONE":
            raise GroupError("GROUP_ID_NOT_FOUND", f"Group {group_id} is not a consumer group")

    try:
        result = consumer_groups(broker).heartbeat(hb, create=take_over_classic)
    except GroupError as exc:
        return _error(exc.error, exc.message)
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "member_id": result.member_id,
        "member_epoch": result.member_epoch,
        "heartbeat_interval_ms": result.heartbeat_interval_ms,
        "assignment": None
        if result.assignment is None
        else {"topic_partitions": as_wire(result.assignment)},
    }


def consumer_group_describe(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    groups = consumer_groups(broker)
    names = {broker.topic_id(t.name): t.name for t in broker.engine.list_topics()}
    out = []
    for group_id in request.body.get("group_ids", []):
        group = groups.group(group_id) if group_id else None
        if group is None:
            error = "GROUP_ID_NOT_FOUND" if group_id else "INVALID_GROUP_ID"
            out.append({"error_code": code(error), "group_id": group_id, "group_state": ""})
            continue
        out.append(
            {
                "error_code": 0,
                "error_message": None,
                "group_id": group_id,
                "group_state": group.state,
                "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch,
                "assignor_name": group.preferred_assignor(DEFAULT),
                "members": [
                    {
                        "member_id": m.member_id,
                        "instance_id": m.instance_id,
                        "rack_id": m.rack_id,
                        "member_epoch": m.member_epoch,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "subscribed_topic_names": sorted(m.subscribed_topic_names),
                        "subscribed_topic_regex": m.subscribed_topic_regex,
                        "assignment": {"topic_partitions": named(m.assigned, names)},
                        "target_assignment": {
                            "topic_partitions": named(group.target.get(m.member_id, {}), names)
                        },
                        "member_type": CONSUMER_MEMBER,
                    }
                    for m in group.members.values()
                ],
            }
        )
    return {"throttle_time_ms": 0, "groups": out}


HANDLERS: dict[int, Handler] = {
    68: consumer_group_heartbeat,
    69: consumer_group_describe,
}
