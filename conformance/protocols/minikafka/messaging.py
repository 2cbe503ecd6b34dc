"""Mini-Kafka for the cross-protocol check (:class:`conformance.plugin.Messaging`), sans-IO.

Mini-Kafka has no partitions: its topic is the shared topic's partition 0, and it has no
request that makes a topic without writing to it (its first PRODUCE makes one with one
partition): ``create`` is None, the driver makes the topic over another protocol.
produce: one PRODUCE per value, in order, each answered with its offset.  consume:
CONSUME from the offset with the batch size ``count``, again from ``next_offset`` until
``count`` messages are read or a reply holds none.  A reply on the error path raises
:class:`MessagingRefused` with its error text.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any

from conformance.plugin import Messaging, MessagingRefused
from conformance.protocols.minikafka import codec


def _call(what: str, request: codec.Request) -> Generator[bytes, bytes, codec.Reply]:
    reply = yield codec.frame(codec.encode_request(request))
    try:
        got = codec.decode_reply(reply)
    except codec.MiniKafkaError as exc:
        raise MessagingRefused(f"{what}: the reply does not decode: {exc}") from None
    if isinstance(got, codec.Failure):
        raise MessagingRefused(f"{what} was answered with the error {got.error!r}")
    return got


def produce(topic: str, values: Sequence[bytes]) -> Generator[bytes, bytes, list[int]]:
    offsets = []
    for v in values:
        got = yield from _call(f"PRODUCE to {topic}", codec.Produce(topic, bytes(v)))
        if not isinstance(got, codec.ProduceOk):
            raise MessagingRefused(f"PRODUCE to {topic} was answered {got!r}")
        offsets.append(got.offset)
    return offsets


def consume(
    topic: str, offset: int, count: int
) -> Generator[bytes, bytes, list[tuple[int, bytes]]]:
    what = f"CONSUME {topic} from offset {offset}"
    got = yield from _call(what, codec.Consume(topic, offset, count))
    if not isinstance(got, codec.ConsumeOk):
        raise MessagingRefused(f"{what} was answered {got!r}")
    return [(c.offset, c.data) for c in got.messages]


def messaging(options: Mapping[str, Any], revision: str) -> Messaging:
    return Messaging(produce=produce, consume=consume)
