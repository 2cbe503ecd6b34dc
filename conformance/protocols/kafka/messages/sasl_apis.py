"""The APIs of SASL authentication (SaslHandshake, SaslAuthenticate): (key, name, message
module) for :mod:`..apis`.
"""

from __future__ import annotations

from types import ModuleType

from conformance.protocols.kafka.messages import sasl_authenticate, sasl_handshake

APIS: list[tuple[int, str, ModuleType]] = [
    (17, "SaslHandshake", sasl_handshake),
    (36, "SaslAuthenticate", sasl_authenticate),
]
