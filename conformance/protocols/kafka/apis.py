"""The Kafka APIs this project speaks, by key: each with its request and response body
(declared in :mod:`conformance.protocols.kafka.messages`) and the header versions that
go with a body version.

Versions are Kafka 3.9's, each API from v0, capped where a newer version needs what a
toy broker cannot serve (Fetch stops at 16, FindCoordinator at 5), plus Kafka 4.0's EndTxn
v5 and TxnOffsetCommit v5 (transactions V2, KIP-890 part 2).  A request travels
with request header v2 in its API's flexible versions and v1 otherwise; a response with
response header v1 in the flexible versions and v0 otherwise, except ApiVersions, whose
response header is always v0: a client that does not yet know what the broker speaks
must be able to read the answer.  For the same reason a broker answers an ApiVersions
request of a version it does not know at v0 (error UNSUPPORTED_VERSION plus its ranges),
which every client can decode; the registry needs nothing for that, the codec does it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from conformance.protocols.kafka.messages import (
    api_versions,
    cluster_admin_apis,
    consumer_groups_apis,
    create_topics,
    delete_topics,
    describe_groups,
    fetch,
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_fetch,
    produce,
    sasl_apis,
    sync_group,
    transactions_apis,
)
from conformance.protocols.kafka.messages.headers import REQUEST_HEADER, RESPONSE_HEADER
from conformance.wire.schema import Message, Versions

__all__ = [
    "APIS",
    "BY_NAME",
    "REQUEST_HEADER",
    "RESPONSE_HEADER",
    "Api",
    "request_header_version",
    "response_header_version",
]


@dataclass(frozen=True)
class Api:
    """One API: its key, its name (``"Metadata"``) and its two bodies."""

    key: int
    name: str
    request: Message
    response: Message

    @property
    def versions(self) -> Versions:
        return self.request.versions

    @property
    def low(self) -> int:
        return self.request.versions.low

    @property
    def high(self) -> int:
        high = self.request.versions.high
        assert high is not None, f"{self.name} declares no highest version"
        return high

    @property
    def flexible_from(self) -> int | None:
        """The first flexible version, None if no version in range is flexible."""
        flexible = self.request.flexible
        return next((v for v in range(self.low, self.high + 1) if v in flexible), None)


def _api(key: int, name: str, module: ModuleType) -> Api:
    request: Message = module.REQUEST
    response: Message = module.RESPONSE
    if request.extra.get("api_key") != key or response.extra.get("api_key") != key:
        raise ValueError(f"{module.__name__} does not declare API key {key}")
    if request.versions != response.versions or request.flexible != response.flexible:
        raise ValueError(f"{name}: the request and response declare different versions")
    return Api(key, name, request, response)


APIS: dict[int, Api] = {
    api.key: api
    for api in sorted(
        (
            _api(0, "Produce", produce),
            _api(1, "Fetch", fetch),
            _api(2, "ListOffsets", list_offsets),
            _api(3, "Metadata", metadata),
            _api(8, "OffsetCommit", offset_commit),
            _api(9, "OffsetFetch", offset_fetch),
            _api(10, "FindCoordinator", find_coordinator),
            _api(11, "JoinGroup", join_group),
            _api(12, "Heartbeat", heartbeat),
            _api(13, "LeaveGroup", leave_group),
            _api(14, "SyncGroup", sync_group),
            _api(15, "DescribeGroups", describe_groups),
            _api(16, "ListGroups", list_groups),
            _api(18, "ApiVersions", api_versions),
            _api(19, "CreateTopics", create_topics),
            _api(20, "DeleteTopics", delete_topics),
            _api(22, "InitProducerId", init_producer_id),
            *(
                _api(key, name, module)
                for family in (
                    transactions_apis,
                    sasl_apis,
                    cluster_admin_apis,
                    consumer_groups_apis,
                )
                for key, name, module in family.APIS
            ),
        ),
        key=lambda api: api.key,
    )
}
"""Every API, in key order."""

BY_NAME: dict[str, Api] = {api.name: api for api in APIS.values()}

API_VERSIONS_KEY = 18


def request_header_version(api_key: int, version: int) -> int:
    """The request header version of ``api_key`` at ``version``: 2 if that version is
    flexible, else 1 (KeyError for an unknown API)."""
    return 2 if APIS[api_key].request.is_flexible(version) else 1


def response_header_version(api_key: int, version: int) -> int:
    """The response header version of ``api_key`` at ``version``: 1 if that version is
    flexible, else 0; always 0 for ApiVersions (KeyError for an unknown API)."""
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if APIS[api_key].response.is_flexible(version) else 0
