"""ApiVersions (key 18): the APIs and versions this broker serves.

Behavior: every API the broker knows, in both revisions (the broker serves the union of
pgcdc's subset and what Apache Kafka clients use).  Revision ``apache`` advertises every
version it declares; revision ``doc`` answers with response header v0 everywhere, as
pgcdc does, so it advertises each API only up to its last non-flexible version (a client
that chose a flexible version would expect header v1), and not at all an API that is
flexible from its first version: real clients then work against both.  A request at a
version the broker does not know is answered at v0 with UNSUPPORTED_VERSION (see
broker.py): in ``apache`` with ApiVersions' own range alone, as Apache Kafka's
``ApiVersionsRequest.getErrorResponse`` does; in ``doc`` with this list.
Version notes: v3+ carries the client's software name and version, which are not checked.
"""

from __future__ import annotations

from typing import Any

from conformance.protocols.kafka.apis import API_VERSIONS_KEY, APIS
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import Broker


def supported(revision: str = "apache") -> list[dict[str, Any]]:
    out = []
    for key, api in sorted(APIS.items()):
        high = api.high
        if revision == "doc" and key != API_VERSIONS_KEY and api.flexible_from is not None:
            high = min(high, api.flexible_from - 1)
        if high < api.low:
            continue  # flexible from its first version: nothing header v0 can answer
        out.append({"api_key": key, "min_version": api.low, "max_version": high})
    return out


def handle(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    keys = supported(broker.config.revision)
    return {"error_code": 0, "api_keys": keys, "throttle_time_ms": 0}
