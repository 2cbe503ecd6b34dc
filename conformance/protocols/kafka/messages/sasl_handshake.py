"""SaslHandshake (key 17): a client names the SASL mechanism it will authenticate with;
the response says whether the broker enables it and lists the mechanisms it does.

Versions: 0-1, never flexible (KAFKA-9577: the version cannot be bumped).  v1 says the
SASL tokens that follow travel in SaslAuthenticate requests (KIP-152); after v0 they
travel as bare size-prefixed tokens (SaslServerAuthenticator), which Kafka 4.0 still
accepts (KIP-896 keeps v0 for kafka-python, KAFKA-18270).
"""

from __future__ import annotations

from conformance.protocols.kafka.messages import message
from conformance.wire.schema import INT16, STRING, array_of, f

REQUEST = message(
    "SaslHandshakeRequest",
    "0-1",
    "none",
    [f("mechanism", STRING)],
    doc="names the SASL mechanism the client chose",
    api_key=17,
)

RESPONSE = message(
    "SaslHandshakeResponse",
    "0-1",
    "none",
    [
        f("error_code", INT16),
        f("mechanisms", array_of(STRING)),
    ],
    doc="whether the mechanism is enabled, and the mechanisms that are",
    api_key=17,
)
