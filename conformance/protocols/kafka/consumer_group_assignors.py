"""The server-side assignors of KIP-848 groups: ``uniform`` (the default) and ``range``,
by the rules of Apache Kafka's ``UniformAssignor`` and ``RangeAssignor``
(group-coordinator ``assignor/``); written here from those rules, not from their code.

An assignor maps the members (id -> subscribed topic names) and the topics (name ->
(topic id, partition count)) to a target assignment (member id -> topic id -> set of
partitions), given the previous target so that it can be sticky.

* uniform: every partition of the subscribed topics goes to one subscriber; each
  member's count differs by at most one from another's with the same subscription;
  partitions a member held in the previous target stay with it while that keeps the
  balance (sticky), the rest are handed to the members with the fewest.
* range: per topic, the subscribers in member id order get contiguous ranges; the
  first ``partitions % members`` get one more.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from conformance.protocols.kafka.consumer_group_state import Partitions

Topics = Mapping[str, tuple[str, int]]
Assignor = Callable[
    [Mapping[str, list[str]], Topics, Mapping[str, Partitions]], dict[str, Partitions]
]

DEFAULT = "uniform"


def uniform(
    members: Mapping[str, list[str]], topics: Topics, previous: Mapping[str, Partitions]
) -> dict[str, Partitions]:
    out: dict[str, Partitions] = {m: {} for m in members}
    count = dict.fromkeys(members, 0)
    every = [
        (topics[name][0], p)
        for name in sorted(topics)
        for p in range(topics[name][1])
        if any(name in subs for subs in members.values())
    ]
    subscribers = {
        tp: sorted(m for m, subs in members.items() if _name_of(tp[0], topics) in subs)
        for tp in every
    }
    # a member keeps what it held up to its fair share (the floor), and a few keep one
    # more while the partitions left over from the floors allow it
    floor = {m: _floor(m, members, topics) for m in members}
    spare = len(every) - sum(floor.values())
    held = [
        ((t, p), m)
        for m, parts in sorted(previous.items())
        if m in members
        for t, ps in sorted(parts.items())
        for p in sorted(ps)
    ]
    kept: set[tuple[str, int]] = set()
    for extra in (False, True):
        for tp, owner in held:
            if tp in kept or tp not in subscribers or owner not in subscribers[tp]:
                continue
            if count[owner] < floor[owner] or (
                extra and count[owner] == floor[owner] and spare > 0
            ):
                if count[owner] == floor[owner]:
                    spare -= 1
                out[owner].setdefault(tp[0], set()).add(tp[1])
                count[owner] += 1
                kept.add(tp)
    free = [tp for tp in every if tp not in kept]
    for tp in free:
        if not subscribers[tp]:
            continue
        taker = min(subscribers[tp], key=lambda m: (count[m], m))
        out[taker].setdefault(tp[0], set()).add(tp[1])
        count[taker] += 1
    return out


def _name_of(topic_id: str, topics: Topics) -> str:
    return next(name for name, (tid, _) in topics.items() if tid == topic_id)


def _floor(member: str, members: Mapping[str, list[str]], topics: Topics) -> int:
    wanted = {n for n in members[member] if n in topics}
    total = sum(topics[n][1] for n in wanted)
    sharers = sum(1 for subs in members.values() if wanted & set(subs)) or 1
    return total // sharers


def range_(
    members: Mapping[str, list[str]], topics: Topics, previous: Mapping[str, Partitions]
) -> dict[str, Partitions]:
    out: dict[str, Partitions] = {m: {} for m in members}
    for name in sorted(topics):
        topic_id, count = topics[name]
        subs = sorted(m for m, names in members.items() if name in names)
        if not subs:
            continue
        base, extra = divmod(count, len(subs))
        start = 0
        for i, m in enumerate(subs):
            size = base + (1 if i < extra else 0)
            if size:
                out[m][topic_id] = set(range(start, start + size))
            start += size
    return out


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform, "range": range_}
"""The assignors by the name a member gives in ``ServerAssignor`` (Kafka's defaults,
``group.consumer.assignors``: uniform, then range)."""
