"""SaslAuthenticate (key 36): one SASL token from the client and the broker's answer to
it (KIP-152), until the mechanism's exchange is complete or has failed.

Versions: 0-2, flexible 2+; v1 adds the session lifetime (KIP-368: 0 when the broker
sets none, as without ``connections.max.reauth.ms``).
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import BYTES, INT16, INT64, STRING, f

REQUEST = message(
    "SaslAuthenticateRequest",
    "0-2",
    "2+",
    [f("auth_bytes", BYTES)],
    doc="one SASL token of the client",
    api_key=36,
)

RESPONSE = message(
    "SaslAuthenticateResponse",
    "0-2",
    "2+",
    [
        f("error_code", INT16),
        f("error_message", STRING, nullable="0+", default=""),
        f("auth_bytes", BYTES),
        f("session_lifetime_ms", INT64, "1+"),
    ],
    doc="the broker's SASL token, or why authentication failed",
    api_key=36,
)
