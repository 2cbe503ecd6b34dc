"""Kafka codec, sans-IO: frames, request and response headers, bodies by API and version.

Frames are ``[int32 BE size][size bytes]``; a request is a header (v0-v2) and a body, a
response a header (v0-v1) and a body, both declared once in :mod:`.messages` and
encoded by :mod:`conformance.wire.schema`.  Which header a message has follows from
its API's flexible versions (:mod:`.apis`), with one exception: every ApiVersions
response has header v0, so a client that does not yet know the broker's versions can
read it.  A revision may answer with header v0 everywhere (pgcdc, ``doc``):
``response_header`` overrides the version.

Every decoder returns or raises a :class:`KafkaError` (a ProtocolError) whose ``error``
is the Kafka error name a broker answers with and whose ``correlation_id`` is known
once the first 8 bytes of the header are.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from conformance.errors import ProtocolError
from conformance.plugin import FieldSpan
from conformance.protocols.kafka.apis import (
    APIS,
    REQUEST_HEADER,
    RESPONSE_HEADER,
    Api,
    request_header_version,
    response_header_version,
)
from conformance.wire.framing import LengthPrefixDeframer, LengthPrefixFraming

MAX_FRAME = 100 * 1024 * 1024
"""The largest request a broker reads (Kafka's socket.request.max.bytes default)."""

_HEAD = struct.Struct(">hhi")


class KafkaError(ProtocolError):
    """A request or response that cannot be decoded; ``error`` is the Kafka error name."""

    def __init__(
        self,
        message: str,
        *,
        error: str = "INVALID_REQUEST",
        correlation_id: int | None = None,
        api_key: int | None = None,
        api_version: int | None = None,
    ) -> None:
        super().__init__(message)
        self.error = error
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.api_version = api_version


@dataclass(frozen=True)
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: dict[str, Any]
    header_version: int = 1
    header_tags: Mapping[int, bytes] = field(default_factory=dict)
    trailing: int = 0
    """Bytes after the body.  Apache Kafka ignores them (its parser never checks that a
    request is used up), and librdkafka 2.x sends 3 after a Metadata v12 request for
    every topic, so a broker must too."""

    @property
    def api(self) -> Api:
        return APIS[self.api_key]


# --------------------------------------------------------------------- framing


FRAMING = LengthPrefixFraming(limit=MAX_FRAME)
"""Every Kafka frame, both ways: an int32 size that does not count itself."""


def new_deframer() -> LengthPrefixDeframer:
    return FRAMING.deframer()


def frame(payload: bytes, length: int | None = None) -> bytes:
    """``payload`` behind its int32 size (``length`` overrides the size, for the fuzzer:
    any value that fits 32 bits, written as its two's complement when negative)."""
    return FRAMING.frame(payload, length=length)


# -------------------------------------------------------------------- requests


def peek(payload: bytes) -> tuple[int, int, int]:
    """``(api_key, api_version, correlation_id)`` of a request payload."""
    if len(payload) < _HEAD.size:
        raise KafkaError(f"a request of {len(payload)} bytes has no header (8 bytes at least)")
    key, version, correlation = _HEAD.unpack_from(payload)
    return int(key), int(version), int(correlation)


def decode_request(payload: bytes) -> Request:
    """The request in ``payload`` (bytes after its body are counted in ``trailing``, not
    refused).  An unknown API key or version raises KafkaError with
    error UNSUPPORTED_VERSION; a body that does not decode, INVALID_REQUEST (or
    CORRUPT_MESSAGE from the records inside, which are decoded later)."""
    key, version, correlation = peek(payload)
    where: dict[str, Any] = {"correlation_id": correlation, "api_key": key, "api_version": version}
    api = APIS.get(key)
    if api is None:
        raise KafkaError(f"unknown API key {key}", error="UNSUPPORTED_VERSION", **where)
    if version not in api.request.versions:
        raise KafkaError(
            f"{api.name} has no version {version} here (versions {api.request.versions})",
            error="UNSUPPORTED_VERSION",
            **where,
        )
    header_version = request_header_version(key, version)
    try:
        header, end = REQUEST_HEADER.decode_at(payload, header_version)
        body, stop = api.request.decode_at(payload, version, end)
    except KafkaError:
        raise
    except ProtocolError as exc:
        raise KafkaError(f"{api.name} v{version} request: {exc}", **where) from None
    return Request(
        api_key=key,
        api_version=version,
        correlation_id=correlation,
        client_id=header.get("client_id"),
        body=body,
        header_version=header_version,
        header_tags=header.get("_unknown_tags") or {},
        trailing=len(payload) - stop,
    )


def encode_request(
    api_key: int,
    version: int,
    body: Mapping[str, Any],
    *,
    correlation_id: int,
    client_id: str | None = "conformance",
) -> bytes:
    """A request payload (no size prefix)."""
    api = APIS[api_key]
    header = {
        "request_api_key": api_key,
        "request_api_version": version,
        "correlation_id": correlation_id,
        "client_id": client_id,
    }
    head = REQUEST_HEADER.encode(header, request_header_version(api_key, version))
    return head + api.request.encode(body, version)


# ------------------------------------------------------------------- responses


def encode_response(
    api_key: int,
    version: int,
    correlation_id: int,
    body: Mapping[str, Any],
    *,
    header_version: int | None = None,
) -> bytes:
    """A response payload; ``header_version`` overrides Kafka's rule (pgcdc: always 0)."""
    hv = response_header_version(api_key, version) if header_version is None else header_version
    head = RESPONSE_HEADER.encode({"correlation_id": correlation_id}, hv)
    return head + APIS[api_key].response.encode(body, version)


def decode_response(
    payload: bytes, api_key: int, version: int, *, header_version: int | None = None
) -> tuple[int, dict[str, Any]]:
    """``(correlation_id, body)`` of a response to an ``api_key`` v``version`` request."""
    hv = response_header_version(api_key, version) if header_version is None else header_version
    try:
        header, end = RESPONSE_HEADER.decode_at(payload, hv)
        return int(header["correlation_id"]), APIS[api_key].response.decode(
            payload, version, offset=end
        )
    except ProtocolError as exc:
        raise KafkaError(f"{APIS[api_key].name} v{version} response: {exc}") from None


def correlation_of(payload: bytes) -> int | None:
    """The correlation id that opens every response payload (None if too short)."""
    return int.from_bytes(payload[:4], "big", signed=True) if len(payload) >= 4 else None


# ------------------------------------------------------------- logs and reports


def describe(direction: str, payload: bytes) -> str:
    """One line for a wire log: ``Metadata v12 request #7 (40 bytes)``; ``recv`` and
    ``reply`` are responses."""
    if direction in ("reply", "recv"):
        corr = correlation_of(payload)
        return f"response #{corr} ({len(payload)} bytes)" if corr is not None else "response"
    try:
        key, version, corr = peek(payload)
    except KafkaError:
        return f"request of {len(payload)} bytes (no header)"
    api = APIS.get(key)
    name = api.name if api is not None else f"API key {key}"
    return f"{name} v{version} request #{corr} ({len(payload)} bytes)"


def annotate(payload: bytes, direction: str) -> list[FieldSpan]:
    """The fields of a request (header and body, when its API and version are known) or
    of a response's correlation id (named ``header.correlation_id`` as in a response
    whose request is known, so that a check on it names the same field either way)."""
    if direction == "reply":
        corr = correlation_of(payload)
        return [] if corr is None else [FieldSpan("header.correlation_id", 0, 4, corr)]
    try:
        key, version, _ = peek(payload)
    except KafkaError:
        return []
    api = APIS.get(key)
    if api is None or version not in api.request.versions:
        return [FieldSpan(n, a, b, v) for n, a, b, v in _bare_header(payload)]
    header_version = request_header_version(key, version)
    spans = [
        replace(s, name=f"header.{s.name}")
        for s in REQUEST_HEADER.annotate(payload, header_version)
    ]
    try:
        _, end = REQUEST_HEADER.decode_at(payload, header_version)
    except ProtocolError:
        return spans
    return spans + api.request.annotate(payload, version, end)


def _asked(payload: bytes, requests: Sequence[bytes]) -> tuple[int, int] | None:
    """``(api_key, version)`` of the request among ``requests`` (newest last) whose
    correlation id the response ``payload`` carries, or None."""
    corr = correlation_of(payload)
    for request in reversed(requests):
        try:
            key, version, sent = peek(request)
        except KafkaError:
            continue
        if sent == corr:
            return key, version
    return None


def describe_reply(payload: bytes, requests: Sequence[bytes]) -> str:
    """``Fetch v12 response #7 (100 bytes)``: a response named by the request it answers."""
    asked = _asked(payload, requests)
    api = APIS.get(asked[0]) if asked else None
    if asked is None or api is None:
        return describe("recv", payload)
    return f"{api.name} v{asked[1]} response #{correlation_of(payload)} ({len(payload)} bytes)"


def annotate_reply(payload: bytes, requests: Sequence[bytes]) -> list[FieldSpan]:
    """The fields of a response, decoded as the answer to the request among ``requests``
    (payloads sent before it, newest last) that has its correlation id; only the
    correlation id when none does."""
    asked = _asked(payload, requests)
    api = APIS.get(asked[0]) if asked else None
    if asked is None or api is None or asked[1] not in api.response.versions:
        return annotate(payload, "reply")
    key, version = asked
    for hv in dict.fromkeys((response_header_version(key, version), 0)):  # pgcdc: always 0
        try:
            _, end = RESPONSE_HEADER.decode_at(payload, hv)
            body = api.response.annotate(payload, version, end)
        except ProtocolError:
            continue
        header = RESPONSE_HEADER.annotate(payload, hv)
        return [replace(s, name=f"header.{s.name}") for s in header] + body
    return annotate(payload, "reply")


def _bare_header(payload: bytes) -> list[tuple[str, int, int, int]]:
    key, version, corr = peek(payload)
    return [
        ("header.request_api_key", 0, 2, key),
        ("header.request_api_version", 2, 4, version),
        ("header.correlation_id", 4, 8, corr),
    ]
