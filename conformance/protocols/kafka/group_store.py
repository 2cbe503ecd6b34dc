"""The classic groups kept across a restart with ``--data-dir``, in the engine's metadata
store, as Apache Kafka keeps them in __consumer_offsets.

Kafka writes one GroupMetadataValue record per group (``GroupCoordinatorRecordHelpers.
newGroupMetadataRecord``) when the group is made, when a rebalance leaves it Empty, when
the leader's assignment arrives and when a static member is replaced; a tombstone when it
is deleted.  The record holds the protocol type, the generation, the chosen protocol, the
leader, and per member its member id, group instance id, client id, client host,
rebalance and session timeouts, its metadata for the chosen protocol (``subscription``)
and its assignment.  When the coordinator loads the partition
(``GroupMetadataManager.replay`` of GroupMetadataValue, then ``onLoaded``), a group with
members is Stable, one without Empty; each member supports the chosen protocol only, with
the metadata stored; the members' sessions start again at the load.  The same is kept
here: key ``kafka.group/<group id>``, a JSON value (bytes as base64), written by the
coordinator at the same moments (:mod:`.coordinator_core`).

A broker without ``--data-dir`` keeps nothing (its engine forgets everything anyway);
:func:`classic_groups` attaches the store at the first use of the coordinator.

Rules: no I/O of its own; the engine journals what :meth:`GroupStore.save` writes.  A
stored value that does not read (another version's) is skipped.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

from conformance.protocols.kafka import quirks_generations
from conformance.protocols.kafka.coordinator import Coordinator
from conformance.protocols.kafka.coordinator_state import EMPTY, STABLE, Group, Member

if TYPE_CHECKING:
    from conformance.engine import Engine
    from conformance.protocols.kafka.context import Broker

PREFIX = "kafka.group/"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def encode(group: Group) -> bytes:
    """The group as Kafka's GroupMetadataValue holds it."""
    members = [
        {
            "member_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "rebalance_timeout_ms": round(m.rebalance_timeout_s * 1000),
            "session_timeout_ms": round(m.session_timeout_s * 1000),
            "subscription": _b64(m.metadata(group.protocol_name)),
            "assignment": _b64(m.assignment),
        }
        for m in group.members.values()
    ]
    value = {
        "protocol_type": group.protocol_type or "",
        "generation": group.generation,
        "protocol": group.protocol_name,
        "leader": group.leader,
        "members": members,
    }
    return json.dumps(value, sort_keys=True).encode()


def decode(group_id: str, raw: bytes, now: float) -> Group:
    """The group as Kafka loads it: Stable with members, else Empty; sessions from ``now``.
    Raises ValueError (or KeyError, TypeError) for a value that does not read."""
    value: dict[str, Any] = json.loads(raw)
    protocol = value["protocol"]
    protocol_type = str(value["protocol_type"]) or None
    members: dict[str, Member] = {}
    for m in value["members"]:
        session_ms = int(m["session_timeout_ms"])
        rebalance_ms = int(m["rebalance_timeout_ms"])
        members[str(m["member_id"])] = Member(
            str(m["member_id"]),
            m["group_instance_id"],
            str(m["client_id"]),
            str(m["client_host"]),
            protocol_type or "",
            ((str(protocol), base64.b64decode(m["subscription"])),),
            session_timeout_s=session_ms / 1000,
            # Kafka: a record without one (-1) uses the session timeout
            rebalance_timeout_s=(session_ms if rebalance_ms == -1 else rebalance_ms) / 1000,
            last_seen=now,
            assignment=base64.b64decode(m["assignment"]),
        )
    return Group(
        group_id,
        state=STABLE if members else EMPTY,
        generation=int(value["generation"]),
        protocol_type=protocol_type,
        protocol_name=None if protocol is None else str(protocol),
        leader=None if value["leader"] is None else str(value["leader"]),
        members=members,
    )


class GroupStore:
    """The classic groups in the engine's metadata store (the coordinator's ``Store``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def load(self, now: float) -> dict[str, Group]:
        groups: dict[str, Group] = {}
        for key, raw in self.engine.meta(PREFIX).items():
            group_id = key[len(PREFIX) :]
            try:
                groups[group_id] = decode(group_id, raw, now)
            except (ValueError, KeyError, TypeError):
                continue  # not ours: a value another version wrote differently
        return groups

    def save(self, group: Group) -> None:
        self.engine.put_meta(PREFIX + group.group_id, encode(group))

    def forget(self, group_id: str) -> None:
        self.engine.put_meta(PREFIX + group_id, None)


def classic_groups(broker: Broker) -> Coordinator:
    """The broker's classic group coordinator; with ``--data-dir``, at its first use here,
    it keeps its groups in the metadata store and takes back those stored before a restart
    (not with the fault quirk ``groups-forgotten-on-restart``)."""
    coordinator = broker.coordinator
    if coordinator.store is None and broker.engine.data_dir is not None:
        load = not quirks_generations.forgets_groups(broker.config.quirks)
        coordinator.attach(GroupStore(broker.engine), load=load)
    return coordinator
