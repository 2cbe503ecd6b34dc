"""The group APIs, served by the coordinator (:mod:`..coordinator`): FindCoordinator
(10), JoinGroup (11), SyncGroup (14), Heartbeat (12), LeaveGroup (13), DescribeGroups
(15), ListGroups (16).

Behavior: this broker is the coordinator of every group (and of every transactional id);
FindCoordinator names it, v4+ once per key asked (an unknown key type is INVALID_REQUEST).
DescribeGroups of the empty group id is INVALID_GROUP_ID.  JoinGroup and SyncGroup wait in the
coordinator until the rebalance completes or the leader's assignment arrives; v4+ of
JoinGroup asks a new member without a group instance id to join again with the member id
it is given (MEMBER_ID_REQUIRED; never before v4, KIP-394).  LeaveGroup v0-2 names one
member, v3+ a list; a LeaveGroup to a group that does not exist is UNKNOWN_MEMBER_ID as a
whole (Kafka's ``GroupMetadataManager.classicGroupLeave``).  DescribeGroups of a group that
does not exist reports state Dead, as Kafka does.

A group id held by a consumer group of KIP-848 (:mod:`.consumer_groups`): a JoinGroup is
refused with INCONSISTENT_GROUP_PROTOCOL while it has members, as Kafka's
``classicGroupJoinToConsumerGroup`` refuses a protocol type other than "consumer" (Kafka 4
admits a "consumer" one as a classic member of the consumer group; not served here); an
empty consumer group gives its id up to the classic join (``classicGroupJoinToClassicGroup``).
ListGroups lists consumer groups too (type "consumer") and honours the v5 type filter.

Static membership (KIP-345): a JoinGroup v5+ with a group instance id and an empty member id
takes the place of the member holding that instance id (no rebalance while the group is
Stable and its protocol stays; from v9 a replaced leader is told ``skip_assignment``); a
request naming a group instance id with another member id than the one holding it is
FENCED_INSTANCE_ID (JoinGroup v5+, SyncGroup v3+, Heartbeat v3+, each member of LeaveGroup
v3+; an empty member id with an instance id in LeaveGroup removes that static member), as
the coordinator (:mod:`..coordinator`) says.

With ``--data-dir`` the classic groups survive a restart (:mod:`..group_store`): every
handler here reaches the coordinator through :func:`..group_store.classic_groups`.
"""

from __future__ import annotations

from typing import Any

from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import NODE_ID, Broker
from conformance.protocols.kafka.coordinator import JoinResult, SyncResult
from conformance.protocols.kafka.errors import code
from conformance.protocols.kafka.group_store import classic_groups
from conformance.protocols.kafka.handlers.consumer_groups import consumer_groups

KEY_TYPES = (0, 1)
"""FindCoordinator key types: 0 a group, 1 a transactional id."""


def find_coordinator(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body = request.body
    where = {"node_id": NODE_ID, "host": broker.host, "port": broker.port}
    keys = body.get("coordinator_keys") if request.api_version >= 4 else None
    error, message = "NONE", None
    if int(body.get("key_type", 0)) not in KEY_TYPES:
        error, message = "INVALID_REQUEST", f"unknown key type {body.get('key_type')}"
        where = {"node_id": -1, "host": "", "port": -1}
    out: dict[str, Any] = {
        "throttle_time_ms": 0,
        "error_code": code(error),
        "error_message": message,
        **where,
    }
    if keys is not None:
        out["coordinators"] = [
            {"key": k, **where, "error_code": code(error), "error_message": message} for k in keys
        ]
    return out


def _host(peer: str) -> str:
    return peer.rpartition(":")[0] or peer


class _JoinWait:
    def __init__(self, broker: Broker, ticket: Any, version: int) -> None:
        self.ticket = ticket
        self.version = version
        self.deadline = ticket.deadline

    def poll(self, now: float) -> dict[str, Any] | None:
        result: JoinResult | None = self.ticket.result()
        if result is None:
            return None
        return {
            "throttle_time_ms": 0,
            "error_code": code(result.error),
            "generation_id": result.generation,
            "protocol_type": result.protocol_type,
            "protocol_name": result.protocol_name or "",
            "leader": result.leader,
            "skip_assignment": result.skip_assignment,
            "member_id": result.member_id,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "metadata": m.metadata,
                }
                for m in result.members
            ],
        }


def join_group(broker: Broker, request: Request, peer: str) -> _JoinWait | dict[str, Any]:
    body, version = request.body, request.api_version
    modern = consumer_groups(broker)
    group_id = body.get("group_id", "")
    if modern.is_consumer(group_id) and not modern.delete_if_empty(group_id):
        return {
            "throttle_time_ms": 0,
            "error_code": code("INCONSISTENT_GROUP_PROTOCOL"),
            "generation_id": -1,
            "protocol_type": None,
            "protocol_name": None,
            "leader": "",
            "skip_assignment": False,
            "member_id": "",
            "members": [],
        }
    session_ms = int(body.get("session_timeout_ms", 0))
    instance = body.get("group_instance_id") if version >= 5 else None
    ticket = classic_groups(broker).join(
        body.get("group_id", ""),
        body.get("member_id", ""),
        protocol_type=body.get("protocol_type", ""),
        protocols=[(p.get("name", ""), p.get("metadata", b"")) for p in body.get("protocols", [])],
        session_timeout_ms=session_ms,
        # v0 has no rebalance timeout: the session timeout is used, as Kafka does
        rebalance_timeout_ms=int(body.get("rebalance_timeout_ms", session_ms))
        if version >= 1
        else session_ms,
        client_id=request.client_id or "",
        client_host=_host(peer),
        group_instance_id=instance,
        # Kafka's JoinGroupRequest.requiresKnownMemberId: v4+, and not for a static member
        require_known_member_id=version >= 4 and instance is None,
        # Kafka's JoinGroupRequest.supportsSkippingAssignment: v9+
        skip_assignment=version >= 9,
    )
    return _JoinWait(broker, ticket, version)


class _SyncWait:
    def __init__(self, ticket: Any) -> None:
        self.ticket = ticket
        self.deadline = ticket.deadline

    def poll(self, now: float) -> dict[str, Any] | None:
        result: SyncResult | None = self.ticket.result()
        if result is None:
            return None
        return {
            "throttle_time_ms": 0,
            "error_code": code(result.error),
            "protocol_type": result.protocol_type,
            "protocol_name": result.protocol_name,
            "assignment": result.assignment,
        }


def sync_group(broker: Broker, request: Request, peer: str) -> _SyncWait:
    body = request.body
    assignments = {
        a.get("member_id", ""): a.get("assignment", b"") or b"" for a in body.get("assignments", [])
    }
    ticket = classic_groups(broker).sync(
        body.get("group_id", ""),
        body.get("member_id", ""),
        int(body.get("generation_id", -1)),
        protocol_type=body.get("protocol_type"),
        protocol_name=body.get("protocol_name"),
        assignments=assignments,
        group_instance_id=body.get("group_instance_id") if request.api_version >= 3 else None,
    )
    return _SyncWait(ticket)


def heartbeat(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body = request.body
    error = classic_groups(broker).heartbeat(
        body.get("group_id", ""),
        body.get("member_id", ""),
        int(body.get("generation_id", -1)),
        body.get("group_instance_id") if request.api_version >= 3 else None,
    )
    return {"throttle_time_ms": 0, "error_code": code(error)}


def leave_group(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    body = request.body
    group_id = body.get("group_id", "")
    coordinator = classic_groups(broker)
    if group_id and coordinator.describe(group_id).state == "Dead":
        # Kafka's classicGroupLeave: a group it does not have is UNKNOWN_MEMBER_ID for the
        # whole request (no member listed), at every version
        return {"throttle_time_ms": 0, "error_code": code("UNKNOWN_MEMBER_ID"), "members": []}
    if request.api_version < 3:
        (error,) = coordinator.leave(group_id, [(body.get("member_id", ""), None)])
        return {"throttle_time_ms": 0, "error_code": code(error)}
    members = body.get("members", [])
    errors = coordinator.leave(
        group_id, [(m.get("member_id", ""), m.get("group_instance_id")) for m in members]
    )
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "members": [
            {
                "member_id": m.get("member_id", ""),
                "group_instance_id": m.get("group_instance_id"),
                "error_code": code(error),
            }
            for m, error in zip(members, errors, strict=True)
        ],
    }


def describe_groups(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    groups = []
    for group_id in request.body.get("groups", []):
        view = classic_groups(broker).describe(group_id)
        groups.append(
            {
                "error_code": code("INVALID_GROUP_ID" if not group_id else "NONE"),
                "error_message": None,
                "group_id": group_id,
                "group_state": view.state,
                "protocol_type": view.protocol_type,
                "protocol_data": view.protocol_name,
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata,
                        "member_assignment": m.assignment,
                    }
                    for m in view.members
                ],
                "authorized_operations": -2147483648,
            }
        )
    return {"throttle_time_ms": 0, "groups": groups}


def list_groups(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    states = request.body.get("states_filter") or []
    types = {t.strip().lower() for t in request.body.get("types_filter") or []}
    wanted = {s.strip().lower() for s in states}
    classic = [
        {
            "group_id": v.group_id,
            "protocol_type": v.protocol_type,
            "group_state": v.state,
            "group_type": "classic",
        }
        for v in classic_groups(broker).list_groups(states)
        if not types or "classic" in types
    ]
    modern = [
        {
            "group_id": g.group_id,
            "protocol_type": "consumer",
            "group_state": g.state,
            "group_type": "consumer",
        }
        for g in consumer_groups(broker).all()
        if (not types or "consumer" in types) and (not wanted or g.state.lower() in wanted)
    ]
    return {"throttle_time_ms": 0, "error_code": 0, "groups": classic + modern}
