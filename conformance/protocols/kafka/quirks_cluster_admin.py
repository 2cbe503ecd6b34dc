"""Spec quirks of partition and cluster administration (OffsetForLeaderEpoch,
DeleteRecords, CreatePartitions, DescribeConfigs, IncrementalAlterConfigs,
DescribeCluster) (see :mod:`.quirks` for what a quirk may do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.plugin import QuirkSpec

if TYPE_CHECKING:
    from conformance.protocols.kafka.codec import Request

QUIRKS: dict[str, QuirkSpec] = {}


def before(quirks: tuple[str, ...], request: Request) -> Request | dict[str, Any]:
    """The request as these quirks make the broker see it, or the response instead."""
    return request


def after(quirks: tuple[str, ...], request: Request, response: dict[str, Any]) -> dict[str, Any]:
    """The response as these quirks change it."""
    return response
