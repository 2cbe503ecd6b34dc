"""Scapy layers of Iggy's requests and replies, per command and revision, derived from
the declarations (:mod:`conformance.wire.schema_layers`) for the structure-aware fuzzer.

``request_layer(name, revision)`` / ``reply_layer(name, revision)``: the Packet class of
a command's payload (after the code or status); ``request_packet`` / ``reply_packet``: one
built from a body as :mod:`.codec` takes it, so that ``bytes(request_packet(n, b, r)) ==
codec.encode_request(n, b, r)``.  Lengths, sizes, counts and union kinds are computed
unless set (a set one lies on the wire).  Doc's messages are declared, so its
SEND_MESSAGES and POLL_MESSAGES are layers to the last byte; classic's messages are not
(:mod:`.batch`: lengths far from what they count), so there the layer covers the declared
head and the index table and messages follow as ``Raw`` bytes (lengths not computed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scapy.packet import Packet, Raw

from conformance.protocols.iggy import batch, codec
from conformance.protocols.iggy.messages import VERSION
from conformance.wire.schema_layers import layer, packet


def request_layer(name: str, revision: str = "classic") -> type[Packet]:
    """The Packet class of command ``name``'s request payload in ``revision``."""
    return layer(codec.tables(revision)[0][name], VERSION)


def reply_layer(name: str, revision: str = "classic") -> type[Packet]:
    """The Packet class of command ``name``'s reply payload (status 0) in ``revision``."""
    return layer(codec.tables(revision)[1][name], VERSION)


def request_packet(name: str, body: Mapping[str, Any], revision: str = "classic") -> Packet:
    """A request payload of ``name`` carrying ``body`` (see the module doc)."""
    declaration = codec.tables(revision)[0][name]
    if not codec.batched(name, "request", revision):
        return packet(declaration, VERSION, body)
    messages = list(body.get("messages", ()))
    metadata = {k: body.get(k) for k in ("stream", "topic", "partitioning")}
    head = packet(declaration, VERSION, {"metadata": {**metadata, "messages_count": len(messages)}})
    return head / Raw(batch.encode_send_tail(messages))


def reply_packet(name: str, body: Mapping[str, Any], revision: str = "classic") -> Packet:
    """A reply payload of ``name`` (status 0) carrying ``body`` (see the module doc)."""
    declaration = codec.tables(revision)[1][name]
    if not codec.batched(name, "reply", revision):
        return packet(declaration, VERSION, body)
    messages = list(body.get("messages", ()))
    head = packet(declaration, VERSION, {**body, "messages_count": len(messages)})
    return head / Raw(batch.encode_polled(messages))
