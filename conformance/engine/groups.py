"""Consumer groups: members, generations, subscriptions, committed offsets, and assignors.

A group is keyed by name.  Members join under a consumer id and get a member id
``f"{consumer_id}-{n}"`` from the group's counter, so member ids are never reused.  Every
join, leave and session expiry starts a new generation.  The engine keeps the rules about
who may do what; this module holds the state and the pure assignment functions.

Assignors take a partition count and the member ids (already sorted) and return every
member's partitions:
  * ``range``: contiguous ranges; the first ``partitions % members`` members get one extra;
  * ``roundrobin``: partition p goes to member ``p % members``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Assignor = Callable[[int, Sequence[str]], dict[str, list[int]]]


def range_assign(partitions: int, members: Sequence[str]) -> dict[str, list[int]]:
    result: dict[str, list[int]] = {m: [] for m in members}
    if not members:
        return result
    each, extra = divmod(partitions, len(members))
    start = 0
    for i, member in enumerate(members):
        count = each + (1 if i < extra else 0)
        result[member] = list(range(start, start + count))
        start += count
    return result


def roundrobin_assign(partitions: int, members: Sequence[str]) -> dict[str, list[int]]:
    result: dict[str, list[int]] = {m: [] for m in members}
    if not members:
        return result
    for p in range(partitions):
        result[members[p % len(members)]].append(p)
    return result


ASSIGNORS: dict[str, Assignor] = {"range": range_assign, "roundrobin": roundrobin_assign}


def assignor_named(name: str) -> Assignor:
    try:
        return ASSIGNORS[name]
    except KeyError:
        known = ", ".join(sorted(ASSIGNORS))
        raise ValueError(f"unknown assignor {name!r}; known assignors: {known}") from None


@dataclass
class Member:
    consumer_id: str
    last_seen: float


@dataclass
class Group:
    name: str
    generation: int = 0
    counter: int = 0
    subscriptions: list[str] = field(default_factory=list)
    members: dict[str, Member] = field(default_factory=dict)
    # topic -> partition -> committed offset
    offsets: dict[str, dict[int, int]] = field(default_factory=dict)

    def sorted_members(self) -> list[str]:
        return sorted(self.members)

    def members_of(self, consumer_id: str) -> list[str]:
        return sorted(m for m, mem in self.members.items() if mem.consumer_id == consumer_id)

    def expired(self, now: float, timeout_s: float) -> list[str]:
        return sorted(m for m, mem in self.members.items() if now - mem.last_seen > timeout_s)

    def forget_topic(self, topic: str) -> None:
        if topic in self.subscriptions:
            self.subscriptions.remove(topic)
        self.offsets.pop(topic, None)
