"""The messages a Kafka vector describes: built from its ``decoded``, written, read, set up.

* :func:`to_message` builds the :class:`~conformance.protocols.kafka.codec.Request` or
  :class:`Response` a ``decoded`` mapping describes, :func:`from_message` gives the
  mapping back (every field given), :func:`canonical` is the two in a row;
* :func:`encode` and :func:`decode_reply` are the codec's, for a message of a vector;
* :func:`grouped_hex` writes a frame's hex with a space between fields, as vector files do;
* :func:`setup_request` builds the request of a text ``setup`` step, and
  :func:`errors_in` names the error codes in a setup step's reply.

Rules: what :mod:`.vectors` documents, this module builds; a malformed ``decoded`` is a
ValueError (the schema check turns it into a SchemaError).  Bodies convert through
:mod:`.vector_bodies`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance.errors import ProtocolError
from conformance.protocols.kafka import codec
from conformance.protocols.kafka.apis import (
    APIS,
    RESPONSE_HEADER,
    request_header_version,
    response_header_version,
)
from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.errors import NAMES as ERROR_NAMES
from conformance.protocols.kafka.vector_bodies import (
    hex_bytes,
    integer,
    is_hex,
    only_keys,
    to_body,
    to_plain,
)
from conformance.wire.varint import read_varint

REQUEST_KEYS = ("api_key", "api_version", "correlation_id", "client_id", "body")
OPTIONAL_REQUEST_KEYS = ("header_tags", "trailing")
REPLY_KEYS = ("correlation_id", "body")
SETUP_VERSIONS = {"create": (19, 4), "produce": (0, 7)}
"""The API key and version each setup command is sent with (non-flexible: both revisions)."""


@dataclass(frozen=True)
class Response:
    """A response as a reply vector's ``decoded`` gives it: the correlation id of its header
    and its body (its API and version are the vector's extra keys)."""

    correlation_id: int
    body: Mapping[str, Any]


def _request(decoded: Mapping[str, Any]) -> Request:
    only_keys(decoded, REQUEST_KEYS + OPTIONAL_REQUEST_KEYS, "a request")
    key, version = integer(decoded, "api_key"), integer(decoded, "api_version")
    api = APIS.get(key)
    if api is None:
        raise ValueError(f"unknown API key {key} (known: {sorted(APIS)})")
    if version not in api.request.versions:
        raise ValueError(f"{api.name} has no version {version} ({api.request.versions})")
    if "client_id" not in decoded:
        raise ValueError("missing key 'client_id'")
    client_id = decoded["client_id"]
    if client_id is not None and not isinstance(client_id, str):
        raise ValueError(f"client_id must be a string or null, got {client_id!r}")
    body = decoded.get("body")
    if not isinstance(body, Mapping):
        raise ValueError(f"body must be a mapping, got {body!r}")
    tags = decoded.get("header_tags", {})
    if not isinstance(tags, Mapping) or not all(
        isinstance(t, int) and is_hex(b) for t, b in tags.items()
    ):
        raise ValueError("header_tags must map tag numbers to {hex: ..}")
    return Request(
        api_key=key,
        api_version=version,
        correlation_id=integer(decoded, "correlation_id"),
        client_id=client_id,
        body=to_body(body),
        header_version=request_header_version(key, version),
        header_tags={t: hex_bytes(b) for t, b in tags.items()},
        trailing=integer(decoded, "trailing", 0),
    )


def to_message(decoded: Mapping[str, Any]) -> Request | Response:
    """Build the message a vector's ``decoded`` mapping describes; ValueError if malformed.
    A mapping with ``api_key`` is a request, one without a response."""
    if not isinstance(decoded, Mapping):
        raise ValueError(f"decoded must be a mapping, got {decoded!r}")
    if "api_key" in decoded:
        return _request(decoded)
    only_keys(decoded, REPLY_KEYS, "a response")
    body = decoded.get("body")
    if not isinstance(body, Mapping):
        raise ValueError(f"body must be a mapping, got {body!r}")
    return Response(integer(decoded, "correlation_id"), to_body(body))


def from_message(msg: Request | Response) -> dict[str, Any]:
    """The plain-data form of a message (every field given), as ``decoded`` spells it."""
    if isinstance(msg, Response):
        return {"correlation_id": msg.correlation_id, "body": to_plain(msg.body)}
    out: dict[str, Any] = {
        "api_key": msg.api_key,
        "api_version": msg.api_version,
        "correlation_id": msg.correlation_id,
        "client_id": msg.client_id,
        "body": to_plain(msg.body),
    }
    if msg.header_tags:
        out["header_tags"] = {int(t): {"hex": bytes(b).hex()} for t, b in msg.header_tags.items()}
    if msg.trailing:
        out["trailing"] = msg.trailing
    return out


# --------------------------------------------------------- encoding, decoding


def encode(msg: Request | Response, api_key: int | None = None, api_version: int | None = None,
           header_version: int | None = None) -> bytes:  # fmt: skip
    """The payload of a message (a response needs its API, version and maybe header)."""
    if isinstance(msg, Request):
        return codec.encode_request(
            msg.api_key,
            msg.api_version,
            msg.body,
            correlation_id=msg.correlation_id,
            client_id=msg.client_id,
        )
    if api_key is None or api_version is None:
        raise ValueError("a response is encoded knowing its api_key and api_version")
    return codec.encode_response(
        api_key, api_version, msg.correlation_id, msg.body, header_version=header_version
    )


def decode_reply(
    payload: bytes, api_key: int, api_version: int, header_version: int | None = None
) -> Response:
    """The response in ``payload``; KafkaError if it does not decode whole."""
    corr, body = codec.decode_response(payload, api_key, api_version, header_version=header_version)
    return Response(corr, body)


def canonical(decoded: Mapping[str, Any]) -> dict[str, Any]:
    """``decoded`` in the form :func:`from_message` writes (hex without spaces, records
    as batches where they can be)."""
    return from_message(to_message(decoded))


def grouped_hex(
    frame: bytes,
    direction: str,
    api_key: int | None = None,
    api_version: int | None = None,
    header_version: int | None = None,
) -> str:
    """A frame's hex with a space between fields (size, header fields, body fields; a
    record batch's header fields and each of its uncompressed records), as vectors are
    written.  Long fields are cut every 32 bytes."""
    payload = frame[4:]
    cuts = {0, 4, len(frame)}
    spans = []
    try:
        if direction == "request":
            spans = codec.annotate(payload, "request")
        elif api_key is not None and api_version is not None:
            hv = (
                response_header_version(api_key, api_version)
                if header_version is None
                else header_version
            )
            spans = RESPONSE_HEADER.annotate(payload, hv)
            _, end = RESPONSE_HEADER.decode_at(payload, hv)
            spans += APIS[api_key].response.annotate(payload, api_version, end)
    except ProtocolError:
        spans = []
    for s in spans:
        cuts |= {4 + s.start, 4 + s.end}
        if s.name.endswith("records") and s.end - s.start > 61:
            cuts |= {4 + c for c in _batch_cuts(payload, s.start, s.end)}
    out, edges = [], sorted(c for c in cuts if 0 <= c <= len(frame))
    for a, b in itertools.pairwise(edges):
        for i in range(a, b, 32):
            out.append(frame[i : min(b, i + 32)].hex())
    return " ".join(out)


_BATCH_FIELDS = (8, 4, 4, 1, 4, 2, 4, 8, 8, 8, 2, 4, 4)


def _batch_cuts(data: bytes, start: int, end: int) -> set[int]:
    cuts: set[int] = set()
    pos = start
    while end - pos >= 61:
        length = int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True)
        stop = pos + 12 + length
        if length < 49 or stop > end or data[pos + 16] != 2:
            break
        at = pos
        for width in _BATCH_FIELDS:
            cuts.add(at)
            at += width
        cuts.add(at)
        if not data[pos + 22] & 0x07:  # uncompressed: one group per record
            while at < stop:
                try:
                    length, after = read_varint(data, at, 32, "record length")
                except ProtocolError:
                    break
                if after > stop or length < 0 or after + length > stop:
                    break  # a length of -1 would stand still: no more groups
                at = after + length
                cuts.add(at)
        cuts.add(stop)
        pos = stop
    return cuts


# ------------------------------------------------------------------------ setup


def setup_request(step: str, correlation_id: int) -> bytes:
    """The request payload of a text setup step (ValueError if it is not one)."""
    words = step.split()
    if not words or words[0] not in SETUP_VERSIONS:
        raise ValueError(f"setup step {step!r}: the commands are {', '.join(SETUP_VERSIONS)}")
    key, version = SETUP_VERSIONS[words[0]]
    if words[0] == "create":
        if len(words) not in (2, 3) or (len(words) == 3 and not words[2].isdigit()):
            raise ValueError(f"setup step {step!r}: create TOPIC [PARTITIONS]")
        partitions = int(words[2]) if len(words) == 3 else 1
        topic = {"name": words[1], "num_partitions": partitions, "replication_factor": 1}
        body: dict[str, Any] = {"topics": [topic], "timeout_ms": 5000, "validate_only": False}
    else:
        if len(words) < 4 or not words[2].isdigit():
            raise ValueError(f"setup step {step!r}: produce TOPIC PARTITION VALUE..")
        batch = {"records": [{"value": v, "offset_delta": i} for i, v in enumerate(words[3:])]}
        part = {"index": int(words[2]), "records": {"batches": [batch]}}
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": 5000,
            "topic_data": [{"name": words[1], "partition_data": [part]}],
        }
    return codec.encode_request(
        key, version, to_body(body), correlation_id=correlation_id, client_id="vector-setup"
    )


def errors_in(body: Any) -> list[str]:
    """The non-zero ``error_code`` values anywhere in a plain or decoded body, by name."""
    found: list[str] = []
    if isinstance(body, Mapping):
        for k, v in body.items():
            if k == "error_code" and isinstance(v, int) and v != 0:
                found.append(ERROR_NAMES.get(v, str(v)))
            else:
                found += errors_in(v)
    elif isinstance(body, list | tuple):
        for v in body:
            found += errors_in(v)
    return found
