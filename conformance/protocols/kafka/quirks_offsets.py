"""Spec quirks of committed offsets (see :mod:`.quirks` for what a quirk may do).
``negative-commit-forgotten`` acts out a broker that keeps no offset below 0: OffsetFetch
answers such a commit as never made (-1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.plugin import QuirkSpec

if TYPE_CHECKING:
    from conformance.protocols.kafka.codec import Request

OFFSET_FETCH = 9

QUIRKS: dict[str, QuirkSpec] = {
    "negative-commit-forgotten": QuirkSpec(
        "negative-commit-forgotten",
        "spec",
        "offsets",
        ("KAF-OFFSET-6",),
        "answers OffsetFetch -1 (nothing committed) for an offset committed below 0",
    )
}


def before(quirks: tuple[str, ...], request: Request) -> Request | dict[str, Any]:
    return request


def after(quirks: tuple[str, ...], request: Request, response: dict[str, Any]) -> dict[str, Any]:
    if request.api_key != OFFSET_FETCH or "negative-commit-forgotten" not in quirks:
        return response
    groups = response.get("groups") or [response]  # v8+ answers per group
    for g in groups:
        for t in g.get("topics", []) or []:
            for p in t.get("partitions", []) or []:
                if int(p.get("committed_offset", -1)) < -1:
                    p["committed_offset"], p["metadata"] = -1, ""
    return response
