"""Scapy layers of mini-Kafka's payloads, derived from the declarations of :mod:`.messages`
(:mod:`conformance.wire.schema_layers`) for the structure-aware fuzzer.

:func:`request_layer` / :func:`reply_layer`: the Packet class of a request or reply
payload, type byte included (``request_kind``: the union's kind, computed from the
variant's packet unless set); :func:`request_packet` builds one from a
:class:`.codec.Request`, so that ``bytes(request_packet(r)) == codec.encode_request(r)``.
A topic's and a PRODUCE's data's i32 lengths are ``topic_len`` and ``data_len``,
computed unless set (a set one lies on the wire).
"""

from __future__ import annotations

from typing import Any

from scapy.packet import Packet

from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.wire.schema_layers import layer, packet


def request_layer() -> type[Packet]:
    """The Packet class of a request payload: ``request_kind``, then the type's fields."""
    return layer(m.REQUEST, m.VERSION)


def reply_layer() -> type[Packet]:
    """The Packet class of a reply payload: its type, its success byte, then the fields."""
    return layer(m.REPLY, m.VERSION)


def request_value(request: codec.Request) -> dict[str, Any]:
    """``request`` as the declaration's value (a union ``{"kind", "value"}``)."""
    if isinstance(request, codec.Consume):
        body: dict[str, Any] = {
            "topic": _raw(request.topic),
            "offset": request.offset,
            "batch_size": request.batch_size,
        }
    elif isinstance(request, codec.Produce):
        body = {"topic": _raw(request.topic), "data": request.data}
    else:
        body = {}
    return {"request": {"kind": request.type, "value": body}}


def request_packet(request: codec.Request) -> Packet:
    """The request payload of ``request`` as a packet (see the module doc)."""
    return packet(m.REQUEST, m.VERSION, request_value(request))


def _raw(topic: str | bytes) -> bytes:
    return topic if isinstance(topic, bytes) else topic.encode("utf-8")
