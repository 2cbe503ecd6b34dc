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

The converters and message builders this schema relies on live in
:mod:`.vector_bodies` (a body's plain form) and :mod:`.vector_messages` (a ``decoded``
to a message and back, setup steps, :func:`grouped_hex`); their public names are
re-exported here.  This module checks a vector against the rules above
(:meth:`KafkaVectors.check`) and compares a reply with a vector's ``reply``
(:meth:`KafkaVectors.reply_mismatch`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.errors import ProtocolError
from conformance.plugin import SchemaError
from conformance.protocols.kafka import codec
from conformance.protocols.kafka.apis import API_VERSIONS_KEY, APIS
from conformance.protocols.kafka.codec import KafkaError, Request
from conformance.protocols.kafka.context import REVISIONS
from conformance.protocols.kafka.errors import NAMES as ERROR_NAMES
from conformance.protocols.kafka.vector_bodies import hex_bytes, is_hex, to_body, to_plain
from conformance.protocols.kafka.vector_messages import (
    Response,
    canonical,
    decode_reply,
    encode,
    errors_in,
    from_message,
    grouped_hex,
    setup_request,
    to_message,
)
from conformance.vectors import mismatches, parse_hex

DEFAULT_REVISION = "apache"
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
    if is_hex(expected):
        return {"hex": hex_bytes(expected).hex()}
    if isinstance(expected, Mapping):
        return {k: _normalise(v) for k, v in expected.items()}
    if isinstance(expected, list):
        return [_normalise(v) for v in expected]
    return expected


class KafkaVectors:
    """The :class:`conformance.plugin.VectorSchema` of Kafka."""

    extra_keys: tuple[str, ...] = ("api_key", "api_version", "header_version", "revision")
    not_encoded: tuple[str, ...] = ("header_tags", "trailing")

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

    def decode(
        self, payload: bytes, direction: str, extras: Mapping[str, Any]
    ) -> Request | Response:
        if direction == "request":
            return codec.decode_request(payload)
        return decode_reply(
            payload, extras["api_key"], extras["api_version"], extras.get("header_version")
        )

    def encode(self, message: Any, direction: str, extras: Mapping[str, Any]) -> bytes:
        return encode(
            message,
            extras.get("api_key"),
            extras.get("api_version"),
            extras.get("header_version"),
        )

    def error_name(self, exc: ProtocolError) -> str | None:
        return exc.error if isinstance(exc, KafkaError) else None

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
    "REPLY_META",
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
