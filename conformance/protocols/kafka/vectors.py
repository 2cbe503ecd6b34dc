"""The Kafka vector schema: what a Kafka vector's ``decoded``, ``reply`` and extra keys hold.

A request vector's ``decoded`` is the whole request (:func:`to_message` builds a
:class:`~conformance.protocols.kafka.codec.Request`, :func:`from_message` gives the form
back)::

    api_key: 3                 # Metadata
    api_version: 12
    correlation_id: 7
    client_id: rdkafka         # null: a null client id
    body: {...}                # every field of the body at that version, by name
    header_tags: {0: {hex: ..}}  # optional: unknown tagged fields of request header v2
    trailing: 3                # optional: bytes after the body (Kafka ignores them, so
                               # the codec counts them); such a vector is not encode_exact

A reply vector's ``decoded`` is ``{correlation_id, body}`` (a :class:`Response`); the
reply's API and version are the extra keys ``api_key`` and ``api_version`` (required in
every reply vector), and ``header_version`` (optional) overrides Kafka's response header
rule (revision ``doc`` answers with header v0 everywhere).

Conventions of a body (plain data, as :mod:`conformance.wire.schema` decodes it):

* bytes are ``{hex: "00 01 02"}`` (whitespace ignored), null is ``null``: a self-describing
  form, so a body converts without knowing its API;
* a ``records`` field (Produce, Fetch) is null, ``{hex: ..}`` or ``{batches: [BATCH, ..]}``,
  magic-2 record batches written out, each with ``base_offset``,
  ``partition_leader_epoch``, ``compression`` (none, gzip, snappy, lz4, zstd),
  ``last_offset_delta``, ``base_timestamp``, ``max_timestamp``, ``producer_id``,
  ``producer_epoch``, ``base_sequence``, ``records``, and when set ``transactional``,
  ``control`` and ``log_append_time``.  A record is ``{offset_delta, timestamp_delta,
  key, value, headers: [{key, value}]}`` (``attributes`` when not 0); a record key or
  value, or a header value, is a string (its UTF-8 bytes), ``{hex: ..}`` or null.  The
  batch bytes are computed (length, count, CRC, compression at the codec's default
  level); :func:`from_message` writes records as batches only when that gives back the
  very bytes (uncompressed) or the same records (compressed), else as hex (a bad CRC, a
  count that disagrees, magic 0/1 message sets);
* uuids are strings; unknown tagged fields of a struct are ``_unknown_tags: {TAG: {hex}}``.

Extra keys: ``api_key``, ``api_version``, ``header_version`` (reply vectors, above) and
``revision`` (request vectors with a ``reply``: the broker revision that gives it,
``apache`` by default; the tests start one broker per file and revision).

A ``reply`` (request vectors) is compared on the keys it gives: body fields, mappings
on their keys and lists item by item (bytes as ``{hex}``, records as batches), plus
these keys of its own:

* ``closed: true``: the broker answers nothing and closes the connection;
* ``no_response: true``: the broker answers nothing and keeps the connection (acks=0);
* ``bare_error_code: 35``: the reply is the correlation id and this int16 alone (pgcdc's
  answer to an unknown API key, revision doc);
* ``api_version`` / ``header_version``: decode the reply at this version / with this
  header version (default: the request's, falling back to v0 for an ApiVersions request
  at a version the codec does not know; Kafka's header rule);
* ``correlation_id``: the reply's (it must always be the request's).

``setup`` steps are text commands, each sent as one request whose reply must carry no
error: ``create TOPIC [PARTITIONS]`` (CreateTopics v4) and ``produce TOPIC PARTITION
VALUE..`` (Produce v7, acks -1, one uncompressed batch); or ``{hex: FRAME}``, sent as is.

Error codes of malformed vectors: ``FRAME_TOO_LARGE`` (the deframer refuses a size prefix
over 100 MiB or negative) and the codec's :class:`~conformance.protocols.kafka.codec.
KafkaError` names (``INVALID_REQUEST``: a body or header that does not decode;
``UNSUPPORTED_VERSION``: an unknown API key or version).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.errors import ProtocolError
from conformance.plugin import SchemaError
from conformance.protocols.kafka import codec
from conformance.protocols.kafka.apis import (
    API_VERSIONS_KEY,
    APIS,
    RESPONSE_HEADER,
    request_header_version,
    response_header_version,
)
from conformance.protocols.kafka.codec import KafkaError, Request
from conformance.protocols.kafka.compression import NAMES as COMPRESSIONS
from conformance.protocols.kafka.errors import NAMES as ERROR_NAMES
from conformance.protocols.kafka.plugin import REVISIONS
from conformance.protocols.kafka.records import (
    CONTROL_BIT,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    Header,
    Record,
    RecordBatch,
    decode_batches,
    encode_batch,
)
from conformance.vectors import mismatches, parse_hex
from conformance.wire.schema import UNKNOWN_TAGS

DEFAULT_REVISION = "apache"
REQUEST_KEYS = ("api_key", "api_version", "correlation_id", "client_id", "body")
OPTIONAL_REQUEST_KEYS = ("header_tags", "trailing")
REPLY_KEYS = ("correlation_id", "body")
REPLY_META = (
    "closed",
    "no_response",
    "bare_error_code",
    "api_version",
    "header_version",
    "correlation_id",
)
"""Keys of a ``reply`` that are not body fields (no Kafka body has such a field, nor a
bytes field named ``records`` that is not a records field: tests/kafka/test_vectors.py)."""
BATCH_KEYS = (
    "base_offset",
    "partition_leader_epoch",
    "compression",
    "log_append_time",
    "transactional",
    "control",
    "last_offset_delta",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "records",
)
RECORD_KEYS = ("offset_delta", "timestamp_delta", "key", "value", "headers", "attributes")
SETUP_VERSIONS = {"create": (19, 4), "produce": (0, 7)}
"""The API key and version each setup command is sent with (non-flexible: both revisions)."""

_FLAGS = (("log_append_time", TIMESTAMP_TYPE_BIT), ("transactional", TRANSACTIONAL_BIT),
          ("control", CONTROL_BIT))  # fmt: skip
_KNOWN_ATTRIBUTES = 0x07 | TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT


@dataclass(frozen=True)
class Response:
    """A response as a reply vector's ``decoded`` gives it: the correlation id of its header
    and its body (its API and version are the vector's extra keys)."""

    correlation_id: int
    body: Mapping[str, Any]


# ------------------------------------------------------------------- converters


def _int(d: Mapping[str, Any], key: str, default: int | None = None) -> int:
    if key not in d:
        if default is None:
            raise ValueError(f"missing key {key!r}")
        return default
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"key {key!r} must be an integer, got {v!r}")
    return v


def _only(d: Mapping[str, Any], allowed: Sequence[str], what: str) -> None:
    for key in d:
        if key not in allowed:
            raise ValueError(f"unknown key {key!r} in {what} (allowed: {', '.join(allowed)})")


def _hex(value: Mapping[str, Any]) -> bytes:
    text = value["hex"]
    if not isinstance(text, str):
        raise ValueError(f"hex must be a string of hex digits, got {text!r}")
    try:
        return parse_hex(text)
    except ValueError as exc:
        raise ValueError(f"hex: {exc}") from None


def _is_hex(value: Any) -> bool:
    return isinstance(value, Mapping) and list(value) == ["hex"]


def _data(value: Any, what: str) -> bytes | None:
    """A record key, value or header value: text, {hex} or null."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8")
    if _is_hex(value):
        return _hex(value)
    raise ValueError(f"{what} must be a string, {{hex: ..}} or null, got {value!r}")


def _record(d: Any, index: int) -> Record:
    if not isinstance(d, Mapping):
        raise ValueError(f"record {index} must be a mapping, got {d!r}")
    _only(d, RECORD_KEYS, "a record")
    headers = d.get("headers", [])
    if not isinstance(headers, list):
        raise ValueError(f"record {index}: headers must be a list")
    hs = []
    for h in headers:
        if (
            not isinstance(h, Mapping)
            or set(h) != {"key", "value"}
            or not isinstance(h["key"], str)
        ):
            raise ValueError(f"record {index}: a header is {{key: NAME, value: ..}}, not {h!r}")
        hs.append(Header(h["key"], _data(h["value"], "a header value")))
    return Record(
        offset_delta=_int(d, "offset_delta", index),
        timestamp_delta=_int(d, "timestamp_delta", 0),
        key=_data(d.get("key"), "a record key"),
        value=_data(d.get("value"), "a record value"),
        headers=tuple(hs),
        attributes=_int(d, "attributes", 0),
    )


def _batch(d: Any) -> RecordBatch:
    if not isinstance(d, Mapping):
        raise ValueError(f"a batch must be a mapping, got {d!r}")
    _only(d, BATCH_KEYS, "a batch")
    records = d.get("records", [])
    if not isinstance(records, list):
        raise ValueError("a batch's records must be a list")
    recs = tuple(_record(r, i) for i, r in enumerate(records))
    compression = d.get("compression", "none")
    if compression not in COMPRESSIONS:
        raise ValueError(f"compression {compression!r} is not one of {', '.join(COMPRESSIONS)}")
    attributes = COMPRESSIONS.index(compression)
    for name, bit in _FLAGS:
        flag = d.get(name, False)
        if not isinstance(flag, bool):
            raise ValueError(f"{name} must be true or false")
        attributes |= bit if flag else 0
    base_ts = _int(d, "base_timestamp", 0)
    return RecordBatch(
        records=recs,
        last_offset_delta=_int(d, "last_offset_delta", recs[-1].offset_delta if recs else 0),
        base_offset=_int(d, "base_offset", 0),
        partition_leader_epoch=_int(d, "partition_leader_epoch", -1),
        attributes=attributes,
        base_timestamp=base_ts,
        max_timestamp=_int(
            d, "max_timestamp", base_ts + max((r.timestamp_delta for r in recs), default=0)
        ),
        producer_id=_int(d, "producer_id", -1),
        producer_epoch=_int(d, "producer_epoch", -1),
        base_sequence=_int(d, "base_sequence", -1),
    )


def _records(value: Any) -> bytes | None:
    if value is None:
        return None
    if _is_hex(value):
        return _hex(value)
    if isinstance(value, Mapping) and list(value) == ["batches"]:
        batches = value["batches"]
        if not isinstance(batches, list):
            raise ValueError("batches must be a list")
        try:
            return b"".join(encode_batch(_batch(b)) for b in batches)
        except (TypeError, OverflowError, KeyError) as exc:
            raise ValueError(f"a batch does not encode: {exc}") from None
    raise ValueError(f"records must be null, {{hex: ..}} or {{batches: [..]}}, not {value!r}")


def to_body(plain: Any, key: str = "") -> Any:
    """A body (or any part of one) from its plain form: ``{hex}`` to bytes, batches
    encoded; everything else as it is."""
    if key == "records":
        return _records(plain)
    if isinstance(plain, Mapping):
        if _is_hex(plain):
            return _hex(plain)
        out: dict[Any, Any] = {}
        for k, v in plain.items():
            if k == UNKNOWN_TAGS:
                if not isinstance(v, Mapping) or not all(
                    isinstance(t, int) and _is_hex(b) for t, b in v.items()
                ):
                    raise ValueError(f"{UNKNOWN_TAGS} must map tag numbers to {{hex: ..}}")
                out[k] = {t: _hex(b) for t, b in v.items()}
            elif not isinstance(k, str):
                raise ValueError(f"field name {k!r} is not a string")
            else:
                out[k] = to_body(v, k)
        return out
    if isinstance(plain, list):
        return [to_body(v) for v in plain]
    if isinstance(plain, bytes):
        raise ValueError("bytes are written {hex: ..}, not !!binary")
    return plain


def _text_or_hex(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": data.hex()}
    return text if text.isprintable() else {"hex": data.hex()}


def _plain_batch(b: RecordBatch) -> dict[str, Any]:
    out: dict[str, Any] = {
        "base_offset": b.base_offset,
        "partition_leader_epoch": b.partition_leader_epoch,
        "compression": b.compression_name,
    }
    for name, bit in _FLAGS:
        if b.attributes & bit:
            out[name] = True
    out.update(
        last_offset_delta=b.last_offset_delta,
        base_timestamp=b.base_timestamp,
        max_timestamp=b.max_timestamp,
        producer_id=b.producer_id,
        producer_epoch=b.producer_epoch,
        base_sequence=b.base_sequence,
    )
    records = []
    for r in b.records:
        rec: dict[str, Any] = {
            "offset_delta": r.offset_delta,
            "timestamp_delta": r.timestamp_delta,
            "key": _text_or_hex(r.key),
            "value": _text_or_hex(r.value),
            "headers": [{"key": h.key, "value": _text_or_hex(h.value)} for h in r.headers],
        }
        if r.attributes:
            rec["attributes"] = r.attributes
        records.append(rec)
    out["records"] = records
    return out


def _plain_records(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        batches = decode_batches(data, strict=True)
    except ProtocolError:
        return {"hex": data.hex()}
    if any(b.magic != 2 or b.attributes & ~_KNOWN_ATTRIBUTES for b in batches):
        return {"hex": data.hex()}
    plain = [_plain_batch(b) for b in batches]
    try:
        again = _records({"batches": plain})
    except ValueError:  # pragma: no cover - a decoded batch always encodes
        return {"hex": data.hex()}
    compressed = all(b.compression for b in batches)
    if again != data and (not compressed or decode_batches(again or b"") != batches):
        return {"hex": data.hex()}
    return {"batches": plain}


def to_plain(value: Any, key: str = "") -> Any:
    """The plain form of a decoded body (or any part of one)."""
    if key == "records" and (value is None or isinstance(value, bytes | bytearray)):
        return _plain_records(None if value is None else bytes(value))
    if isinstance(value, bytes | bytearray):
        return {"hex": bytes(value).hex()}
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if k == UNKNOWN_TAGS:
                if v:
                    out[k] = {int(t): {"hex": bytes(b).hex()} for t, b in v.items()}
            else:
                out[k] = to_plain(v, k)
        return out
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return value


def _request(decoded: Mapping[str, Any]) -> Request:
    _only(decoded, REQUEST_KEYS + OPTIONAL_REQUEST_KEYS, "a request")
    key, version = _int(decoded, "api_key"), _int(decoded, "api_version")
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
        isinstance(t, int) and _is_hex(b) for t, b in tags.items()
    ):
        raise ValueError("header_tags must map tag numbers to {hex: ..}")
    return Request(
        api_key=key,
        api_version=version,
        correlation_id=_int(decoded, "correlation_id"),
        client_id=client_id,
        body=to_body(body),
        header_version=request_header_version(key, version),
        header_tags={t: _hex(b) for t, b in tags.items()},
        trailing=_int(decoded, "trailing", 0),
    )


def to_message(decoded: Mapping[str, Any]) -> Request | Response:
    """Build the message a vector's ``decoded`` mapping describes; ValueError if malformed.
    A mapping with ``api_key`` is a request, one without a response."""
    if not isinstance(decoded, Mapping):
        raise ValueError(f"decoded must be a mapping, got {decoded!r}")
    if "api_key" in decoded:
        return _request(decoded)
    _only(decoded, REPLY_KEYS, "a response")
    body = decoded.get("body")
    if not isinstance(body, Mapping):
        raise ValueError(f"body must be a mapping, got {body!r}")
    return Response(_int(decoded, "correlation_id"), to_body(body))


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
                n, shift, i = 0, 0, at
                while i < stop and data[i] & 0x80:
                    n |= (data[i] & 0x7F) << shift
                    shift += 7
                    i += 1
                if i >= stop:
                    break
                n |= data[i] << shift
                at = i + 1 + ((n >> 1) ^ -(n & 1))
                if at > stop:
                    break
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


# ------------------------------------------------------------------- the schema


def _reply_api(request: bytes, expected: Mapping[str, Any]) -> tuple[int, int, int | None, int]:
    """(api key, version to decode at, header version or None, correlation id)."""
    key, version, corr = codec.peek(request)
    if key not in APIS:
        raise ValueError(f"the request's API key {key} is unknown: no reply body to compare")
    if "api_version" in expected:
        version = int(expected["api_version"])
    elif version not in APIS[key].request.versions:
        if key != API_VERSIONS_KEY:
            raise ValueError(f"{APIS[key].name} has no version {version}: give api_version")
        version = 0  # an ApiVersions request of an unknown version is answered at v0
    hv = expected.get("header_version")
    return key, version, None if hv is None else int(hv), corr


def _normalise(expected: Any) -> Any:
    """An expected reply part with its {hex} written as :func:`to_plain` writes them."""
    if _is_hex(expected):
        return {"hex": _hex(expected).hex()}
    if isinstance(expected, Mapping):
        return {k: _normalise(v) for k, v in expected.items()}
    if isinstance(expected, list):
        return [_normalise(v) for v in expected]
    return expected


class KafkaVectors:
    """The :class:`conformance.plugin.VectorSchema` of Kafka."""

    extra_keys: tuple[str, ...] = ("api_key", "api_version", "header_version", "revision")

    def check(self, raw: Mapping[str, Any], direction: str) -> dict[str, Any]:
        extras: dict[str, Any] = {}
        if direction == "reply":
            extras = self._reply_extras(raw)
        else:
            for key in ("api_key", "api_version", "header_version"):
                if key in raw:
                    raise SchemaError(key, "only reply vectors name their API (a request does)")
            revision = raw.get("revision", DEFAULT_REVISION)
            if revision not in REVISIONS:
                raise SchemaError("revision", f"{revision!r} is not one of {', '.join(REVISIONS)}")
            if "revision" in raw and raw.get("reply") is None:
                raise SchemaError("revision", "only a vector with a reply names a revision")
            extras["revision"] = revision
        decoded = raw.get("decoded")
        if decoded is not None:
            self._check_decoded(decoded, direction, extras)
        for step in raw.get("setup") or []:
            if isinstance(step, str):
                try:
                    setup_request(step, 0)
                except ValueError as exc:
                    raise SchemaError("setup", str(exc)) from None
        reply = raw.get("reply")
        if reply is not None:
            self._check_reply(reply, raw)
        return extras

    def _reply_extras(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        if "revision" in raw:
            raise SchemaError("revision", "only request vectors with a reply name a revision")
        for key in ("api_key", "api_version"):
            v = raw.get(key)
            if isinstance(v, bool) or not isinstance(v, int):
                raise SchemaError(key, "a reply vector gives its API's key and version as integers")
        api = APIS.get(raw["api_key"])
        if api is None:
            raise SchemaError("api_key", f"unknown API key {raw['api_key']}")
        if raw["api_version"] not in api.response.versions:
            raise SchemaError("api_version", f"{api.name} has no version {raw['api_version']}")
        extras = {"api_key": raw["api_key"], "api_version": raw["api_version"]}
        hv = raw.get("header_version")
        if hv is not None:
            if hv not in (0, 1):
                raise SchemaError("header_version", "a response header version is 0 or 1")
            extras["header_version"] = hv
        return extras

    def _check_decoded(self, decoded: Any, direction: str, extras: Mapping[str, Any]) -> None:
        if not isinstance(decoded, Mapping):
            raise SchemaError("decoded", f"must be a mapping, got {decoded!r}")
        if direction == "request" and "api_key" not in decoded:
            raise SchemaError("decoded", "a request gives api_key, api_version, ...")
        if direction == "reply" and "api_key" in decoded:
            raise SchemaError("decoded", "a response is {correlation_id, body}; its API is extra")
        try:
            msg = to_message(decoded)
            payload = encode(msg, extras.get("api_key"), extras.get("api_version"),
                             extras.get("header_version"))  # fmt: skip
        except (ValueError, TypeError, OverflowError, AttributeError) as exc:
            raise SchemaError("decoded", str(exc)) from None
        try:
            if isinstance(msg, Request):
                again: Request | Response = codec.decode_request(payload)
            else:
                again = decode_reply(payload, extras["api_key"], extras["api_version"],
                                     extras.get("header_version"))  # fmt: skip
        except KafkaError as exc:  # pragma: no cover - what encodes decodes
            raise SchemaError("decoded", f"does not decode once encoded: {exc}") from None
        want, got = from_message(msg)["body"], from_message(again)["body"]
        unknown = [p for p in mismatches(want, got, "body") if p.endswith(": missing")]
        if unknown:  # what the encoder left out
            raise SchemaError("decoded", "not a field of this version: " + "; ".join(unknown[:3]))
        problems = mismatches(got, want, "body")  # what the encoder filled in or changed
        if problems:
            raise SchemaError(
                "decoded",
                "the body must give every field of its version, bytes as {hex: ..}: "
                + "; ".join(problems[:3]),
            )

    def _check_reply(self, reply: Any, raw: Mapping[str, Any]) -> None:
        if not isinstance(reply, Mapping):
            raise SchemaError("reply", f"must be a mapping, got {reply!r}")
        for flag in ("closed", "no_response"):
            if flag in reply:
                if reply[flag] is not True or len(reply) != 1:
                    raise SchemaError("reply", f"{flag} is true and alone")
                return
        if "bare_error_code" in reply:
            if set(reply) - {"bare_error_code", "correlation_id"}:
                raise SchemaError("reply", "bare_error_code goes alone (or with correlation_id)")
            if reply["bare_error_code"] not in ERROR_NAMES:
                raise SchemaError("reply", f"{reply['bare_error_code']!r} is no Kafka error code")
            return
        for meta in ("api_version", "header_version", "correlation_id"):
            if meta in reply and (
                isinstance(reply[meta], bool) or not isinstance(reply[meta], int)
            ):
                raise SchemaError("reply", f"{meta} must be an integer")
        try:
            frame = parse_hex(raw["hex"])
            key, version, _, _ = _reply_api(frame[4:], reply)
        except (ValueError, KafkaError) as exc:
            raise SchemaError("reply", str(exc)) from None
        api = APIS[key]
        if version not in api.response.versions:
            raise SchemaError("reply", f"{api.name} has no version {version}")
        names = [fl.name for fl in api.response.body.fields if version in fl.versions]
        for k in reply:
            if k not in REPLY_META and k not in names:
                raise SchemaError(
                    "reply",
                    f"unknown key {k!r} for a {api.name} v{version} response "
                    f"(fields: {', '.join(names)})",
                )
        try:
            to_body({k: v for k, v in reply.items() if k not in REPLY_META})
        except ValueError as exc:
            raise SchemaError("reply", str(exc)) from None

    def to_message(self, decoded: Mapping[str, Any]) -> Request | Response:
        return to_message(decoded)

    def from_message(self, message: Any) -> dict[str, Any]:
        return from_message(message)

    def reply_mismatch(
        self, expected: Mapping[str, Any], payload: bytes, request: bytes
    ) -> str | None:
        if expected.get("closed") or expected.get("no_response"):
            return f"expected no reply, got {payload.hex()}"
        if "bare_error_code" in expected:
            corr = expected.get("correlation_id", codec.peek(request)[2])
            want = corr.to_bytes(4, "big", signed=True) + int(expected["bare_error_code"]).to_bytes(
                2, "big", signed=True
            )
            return None if payload == want else f"expected {want.hex()}, got {payload.hex()}"
        try:
            key, version, hv, corr = _reply_api(request, expected)
        except (ValueError, KafkaError) as exc:
            return str(exc)
        try:
            got = decode_reply(payload, key, version, hv)
        except KafkaError as exc:
            return f"the reply does not decode as {APIS[key].name} v{version}: {exc}"
        want_corr = expected.get("correlation_id", corr)
        problems = []
        if got.correlation_id != want_corr:
            problems.append(f"reply.correlation_id: expected {want_corr}, got {got.correlation_id}")
        body = {k: v for k, v in expected.items() if k not in REPLY_META}
        problems += mismatches(_normalise(body), to_plain(got.body), "reply")
        return "; ".join(problems) or None


SCHEMA = KafkaVectors()

__all__ = [
    "SCHEMA",
    "KafkaVectors",
    "Response",
    "canonical",
    "decode_reply",
    "encode",
    "errors_in",
    "from_message",
    "grouped_hex",
    "setup_request",
    "to_body",
    "to_message",
    "to_plain",
]
