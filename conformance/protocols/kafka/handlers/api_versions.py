"""ApiVersions (key 18): the APIs and versions this broker serves.

Behavior: every API the broker knows, at every version it declares, in both revisions
(the broker serves the union of pgcdc's subset and what Apache Kafka clients use).  A
request at a version the broker does not know is answered at v0 with
UNSUPPORTED_VERSION and this same list (see broker.py), so the client can ask again.
Version notes: v3+ carries the client's software name and version, which are not checked.
"""

from __future__ import annotations

from typing import Any

from conformance.protocols.kafka.apis import APIS
from conformance.protocols.kafka.broker import Broker
from conformance.protocols.kafka.codec import Request


def supported() -> list[dict[str, Any]]:
    return [
        {"api_key": key, "min_version": api.low, "max_version": api.high}
        for key, api in sorted(APIS.items())
    ]


def handle(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    return {"error_code": 0, "api_keys": supported(), "throttle_time_ms": 0}
