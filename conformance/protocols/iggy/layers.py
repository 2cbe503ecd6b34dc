"""Scapy layers of Iggy's requests and replies, per command and revision, derived from
the declarations (:mod:`conformance.wire.schema_layers`) for the structure-aware fuzzer.

``request_layer(name, revision)`` / ``reply_layer(name, revision)``: the Packet class of
a command's payload (after the code or status); ``request_packet`` / ``reply_packet``: one
built from a body as :mod:`.codec` takes it, so that ``bytes(request_packet(n, b, r)) ==
codec.encode_request(n, b, r)``.  Lengths, sizes, counts and union kinds are computed
unless set (a set one lies on the wire).  Every payload is a layer to its last byte:
classic SEND_MESSAGES' metadata size, message count and index table, and each message's
``payload_length`` and ``user_headers_length``, are computed from what they describe
(the linked types, :mod:`conformance.wire.schema_linked`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scapy.packet import Packet

from conformance.protocols.iggy import codec
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
    return packet(codec.tables(revision)[0][name], VERSION, body)


def reply_packet(name: str, body: Mapping[str, Any], revision: str = "classic") -> Packet:
    """A reply payload of ``name`` (status 0) carrying ``body`` (see the module doc)."""
    return packet(codec.tables(revision)[1][name], VERSION, body)
