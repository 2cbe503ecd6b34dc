"""Spec quirks of SASL authentication (SaslHandshake, SaslAuthenticate) (see :mod:`.quirks`
for what a quirk may do).

``sasl-any-password``: every SaslAuthenticate the mechanism refuses is answered error 0
instead (an empty token), and the session's gate, which goes by the answer it sends,
counts the connection as authenticated: a broker that does not check passwords.
``scram-server-signature-wrong``: the SCRAM server-final message carries a signature that
is not HMAC(ServerKey, AuthMessage) (one byte of it flipped): a client cannot verify the
server.  Both rewrite the answer (:func:`after`); bare tokens after SaslHandshake v0 are
not requests and stay as they are.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from conformance.plugin import QuirkSpec

if TYPE_CHECKING:
    from conformance.protocols.kafka.codec import Request

SASL_AUTHENTICATE = 36
SASL_AUTHENTICATION_FAILED = 58

QUIRKS: dict[str, QuirkSpec] = {
    q.name: q
    for q in (
        QuirkSpec(
            "sasl-any-password",
            "spec",
            "sasl",
            ("KAF-SASL-5",),
            "answers a SaslAuthenticate with a wrong password (or an unknown user) with error "
            "0 and lets the connection in",
        ),
        QuirkSpec(
            "scram-server-signature-wrong",
            "spec",
            "sasl",
            ("KAF-SASL-7",),
            "sends a SCRAM server-final message whose signature does not verify (one byte "
            "of it flipped)",
        ),
    )
}


def before(quirks: tuple[str, ...], request: Request) -> Request | dict[str, Any]:
    """The request as these quirks make the broker see it, or the response instead."""
    return request


def _flipped(final: bytes) -> bytes:
    """``v=<signature>`` with the signature's first byte flipped (other tokens as given)."""
    if not final.startswith(b"v="):
        return final
    try:
        signature = bytearray(base64.b64decode(final[2:], validate=True))
    except (binascii.Error, ValueError):
        return final
    if not signature:
        return final
    signature[0] ^= 0xFF
    return b"v=" + base64.b64encode(bytes(signature))


def after(quirks: tuple[str, ...], request: Request, response: dict[str, Any]) -> dict[str, Any]:
    """The response as these quirks change it."""
    if request.api_key != SASL_AUTHENTICATE:
        return response
    if "sasl-any-password" in quirks and response.get("error_code") == SASL_AUTHENTICATION_FAILED:
        response.update(error_code=0, error_message=None, auth_bytes=b"")
    if "scram-server-signature-wrong" in quirks and response.get("error_code") == 0:
        response["auth_bytes"] = _flipped(bytes(response.get("auth_bytes") or b""))
    return response
