"""Deliberate misbehaviour of the Kafka reference broker, switched on by ``--quirk NAME``.

``fault`` quirks crash, hang or lose data, for the fuzzer to find (they stay out of the
suite's exactness test); ``spec`` quirks break named MUST requirements of SPEC.md (the
suite's area; none yet).  With no quirk active the broker never consults them.

* ``panic-on-negative-partition`` -- the process exits (code 70) when a Produce or Fetch
  names a negative partition index, as pgcdc's server panics on one: a CRASH, and the
  hostile value the issue names first.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from conformance.plugin import QuirkSpec

CRASH_EXIT_CODE = 70
PRODUCE, FETCH = 0, 1

QUIRKS: dict[str, QuirkSpec] = {
    q.name: q
    for q in (
        QuirkSpec(
            "panic-on-negative-partition",
            "fault",
            "produce",
            (),
            "exits when a Produce or Fetch names a negative partition index, as pgcdc "
            "panics (the fuzzer must report a CRASH)",
        ),
    )
}


def negative_partition(api_key: int, body: dict[str, Any]) -> int | None:
    """The first negative partition index a Produce or Fetch body names, else None."""
    if api_key == PRODUCE:
        topics, parts, key = body.get("topic_data", []), "partition_data", "index"
    elif api_key == FETCH:
        topics, parts, key = body.get("topics", []), "partitions", "partition"
    else:
        return None
    found = [int(p.get(key, 0)) for t in topics for p in t.get(parts, [])]
    return next((p for p in found if p < 0), None)


def panic(api_key: int, partition: int) -> None:
    print(
        f"fatal (quirk panic-on-negative-partition): partition index {partition} "
        f"in API key {api_key}",
        file=sys.stderr,
        flush=True,
    )
    os._exit(CRASH_EXIT_CODE)
