"""SaslHandshake (17) and SaslAuthenticate (36), by API key.

Behaviour: on a connection of a broker that requires SASL (``--sasl-user``), before
authentication, SaslHandshake answers NONE and the enabled mechanisms when the mechanism
asked for is one of them, else UNSUPPORTED_SASL_MECHANISM (33) with the same list (the
connection then closes); SaslAuthenticate hands the token to the mechanism and answers
its token, or SASL_AUTHENTICATION_FAILED (58) with a message (the connection then
closes).  Which request may come when, and the closes, are the gate's
(:mod:`..sasl_session`, driven by the session in :mod:`..broker`), as Apache Kafka's
``SaslServerAuthenticator``.  After authentication, or on a broker that requires no
SASL, both are answered ILLEGAL_SASL_STATE (34), as Kafka's ``KafkaApis`` answers them.
Version notes: SaslHandshake v0 hands the exchange to bare tokens (the session answers
them), v1 to SaslAuthenticate; SaslAuthenticate v1+ carries session_lifetime_ms, 0 here
(no re-authentication, KIP-368).
"""

from __future__ import annotations

from typing import Any

from conformance.protocols.kafka.codec import Request
from conformance.protocols.kafka.context import Broker, Handler
from conformance.protocols.kafka.errors import code
from conformance.protocols.kafka.sasl_session import AuthenticationFailed


def sasl_handshake(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    conn = broker.sasl_connections.get(peer)
    if conn is None or conn.open:
        return {"error_code": code("ILLEGAL_SASL_STATE"), "mechanisms": []}
    mechanism = str(request.body.get("mechanism", ""))
    accepted = conn.handshake(mechanism, request.api_version)
    error = "NONE" if accepted else "UNSUPPORTED_SASL_MECHANISM"
    return {"error_code": code(error), "mechanisms": list(conn.enabled)}


def sasl_authenticate(broker: Broker, request: Request, peer: str) -> dict[str, Any]:
    conn = broker.sasl_connections.get(peer)
    if conn is None or conn.open:
        return {
            "error_code": code("ILLEGAL_SASL_STATE"),
            "error_message": "SaslAuthenticate after authentication, or without SASL",
            "auth_bytes": b"",
            "session_lifetime_ms": 0,
        }
    try:
        token = conn.authenticate(bytes(request.body.get("auth_bytes") or b""))
    except AuthenticationFailed as exc:
        return {
            "error_code": code("SASL_AUTHENTICATION_FAILED"),
            "error_message": str(exc),
            "auth_bytes": b"",
            "session_lifetime_ms": 0,
        }
    return {"error_code": 0, "error_message": None, "auth_bytes": token, "session_lifetime_ms": 0}


HANDLERS: dict[int, Handler] = {17: sasl_handshake, 36: sasl_authenticate}
