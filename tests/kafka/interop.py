"""What the client interop tests share: records as a client saw them, and the checks on
them (the same scenario runs with kafka-python, aiokafka and librdkafka)."""

from __future__ import annotations

Seen = list[tuple[int, int, bytes, list[tuple[str, bytes]]]]
"""(partition, offset, value, headers) of each record a consumer got."""


def values(*seen: Seen) -> list[bytes]:
    return sorted(v for s in seen for _, _, v, _ in s)


def expected(indexes: range) -> list[bytes]:
    """The values produced for ``indexes`` (each test produces ``value-<i>``)."""
    return sorted(b"value-%d" % i for i in indexes)


def check_split(a: Seen, b: Seen, indexes: range, origin: bytes) -> None:
    """Two members got every record once, from disjoint partitions, headers intact."""
    assert values(a, b) == expected(indexes), "lost or duplicated records"
    assert {p for p, *_ in a}.isdisjoint({p for p, *_ in b})
    assert all(h == [("index", v.split(b"-")[1]), ("origin", origin)] for _, _, v, h in a + b), (
        "headers were not read back as produced"
    )
