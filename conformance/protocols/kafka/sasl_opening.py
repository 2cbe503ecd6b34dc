"""The client side of Kafka SASL, sans-IO: the session opener the suite, the fuzzer and
the cross-protocol check run on every connection when given credentials, and the
parsers of the SASL serve options.

The opener (:func:`sasl_opening`) is the exchange a Kafka client makes since KIP-152:
ApiVersions v0 (every broker answers it, SASL or not), SaslHandshake v1 naming the
mechanism, then SaslAuthenticate (the highest version both the revision and the target
speak: ``doc`` answers with response header v0, so v1 at most there) carrying the
mechanism's tokens: one PLAIN token (RFC 4616), or SCRAM's client-first and
client-final messages, whose server-final signature it verifies (:mod:`.scram`).  A
refusal raises :class:`~conformance.plugin.SessionRefused` with one line saying what
the target answered.
"""

from __future__ import annotations

from typing import Any

from conformance.plugin import Opening, SessionRefused
from conformance.protocols.kafka import codec, scram
from conformance.protocols.kafka.errors import NAMES
from conformance.protocols.kafka.sasl_session import MECHANISMS

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
CLIENT_ID = "conformance-sasl"


def users_list(text: str) -> tuple[tuple[str, str], ...]:
    """``NAME:SECRET,NAME:SECRET`` as (name, secret) pairs (ValueError saying why not)."""
    out = []
    for item in text.split(","):
        name, sep, secret = item.partition(":")
        if not sep or not name or not secret:
            raise ValueError(f"{item!r} is not NAME:SECRET")
        out.append((name, secret))
    return tuple(out)


def mechanisms_list(text: str) -> tuple[str, ...]:
    names = tuple(m.strip().upper() for m in text.split(",") if m.strip())
    unknown = [m for m in names if m not in MECHANISMS]
    if unknown or not names:
        raise ValueError(f"{text!r}: the mechanisms are {', '.join(MECHANISMS)}")
    return names


def plain_token(user: str, password: str, authzid: str = "") -> bytes:
    """RFC 4616's message: ``[authzid] NUL authcid NUL passwd``."""
    return f"{authzid}\x00{user}\x00{password}".encode()


def request(api_key: int, version: int, body: dict[str, Any], corr: int) -> bytes:
    """A framed request."""
    payload = codec.encode_request(api_key, version, body, correlation_id=corr, client_id=CLIENT_ID)
    return codec.frame(payload)


def read(payload: bytes, api_key: int, version: int, revision: str) -> dict[str, Any]:
    """The body of a response (header v0 everywhere in ``doc``); SessionRefused if it
    does not decode."""
    try:
        _, body = codec.decode_response(
            payload, api_key, version, header_version=0 if revision == "doc" else None
        )
    except codec.KafkaError as exc:
        raise SessionRefused(f"an answer that does not decode: {exc}") from None
    return body


def _named(code: int) -> str:
    return f"{NAMES.get(code, 'error')} ({code})"


def authenticate_version(api_versions: dict[str, Any], revision: str) -> int:
    """The SaslAuthenticate version to use, from an ApiVersions answer."""
    ours = 1 if revision == "doc" else 2
    for a in api_versions.get("api_keys", []):
        if int(a["api_key"]) == SASL_AUTHENTICATE:
            return max(int(a["min_version"]), min(ours, int(a["max_version"])))
    raise SessionRefused("the target does not advertise SaslAuthenticate (it serves no SASL)")


def sasl_opening(mechanism: str, user: str, password: str, revision: str) -> Opening:
    """ApiVersions, SaslHandshake v1, SaslAuthenticate as ``user`` with ``mechanism``;
    returns the last SaslAuthenticate answer."""
    reply = yield request(API_VERSIONS, 0, {}, 1)
    versions = read(reply, API_VERSIONS, 0, revision)
    version = authenticate_version(versions, revision)
    reply = yield request(SASL_HANDSHAKE, 1, {"mechanism": mechanism}, 2)
    shake = read(reply, SASL_HANDSHAKE, 1, revision)
    if shake["error_code"] != 0:
        enabled = ", ".join(shake.get("mechanisms") or []) or "none"
        raise SessionRefused(
            f"SaslHandshake {mechanism} was answered {_named(shake['error_code'])} "
            f"(mechanisms enabled: {enabled})"
        )
    client = None if mechanism == "PLAIN" else scram.ScramClient(mechanism, user, password)
    token = plain_token(user, password) if client is None else client.first()
    corr = 3
    while True:
        reply = yield request(SASL_AUTHENTICATE, version, {"auth_bytes": token}, corr)
        answer = read(reply, SASL_AUTHENTICATE, version, revision)
        if answer["error_code"] != 0:
            why = answer.get("error_message") or "no message"
            raise SessionRefused(
                f"SaslAuthenticate as {user!r} ({mechanism}) was answered "
                f"{_named(answer['error_code'])}: {why}"
            )
        try:
            if client is None:
                return answer
            if corr == 3:
                token = client.final(bytes(answer["auth_bytes"]))
            else:
                client.verify(bytes(answer["auth_bytes"]))
                return answer
        except scram.ScramError as exc:
            raise SessionRefused(f"{mechanism} as {user!r}: {exc}") from None
        corr += 1
