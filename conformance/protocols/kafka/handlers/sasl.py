"""The handlers of SASL authentication (SaslHandshake, SaslAuthenticate), by API key."""

from __future__ import annotations

from conformance.protocols.kafka.context import Handler

HANDLERS: dict[int, Handler] = {}
