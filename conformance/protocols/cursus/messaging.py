"""Cursus for the cross-protocol check (:class:`conformance.plugin.Messaging`), sans-IO.

create: ``CREATE <base> 1`` (the shared name is the base name).  produce: one batch to
partition 0, acks ``1``, not idempotent, one message per value (every other field the
Cursus default: empty strings, zeros); the ack's ``last_offset`` names the last, so the
offsets are ``last_offset - n + 1 .. last_offset``.  consume: ``CONSUME <topic> 0
<offset>`` (a batch of up to the broker's max-poll-records), again from the next offset
until ``count`` messages are read or a batch is empty.  An ``ERROR:`` reply, an ack whose
status is not OK or a reply of another kind raises :class:`MessagingRefused`.

Revision real says the same in its layouts (real_codec.py): ``CREATE topic=<base>
partitions=1``, the batch with an int32 partition, ``CONSUME topic=.. partition=0 offset=..
member=cross``, each command in the envelope.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any

from conformance.plugin import Messaging, MessagingRefused
from conformance.protocols.cursus import codec, real_codec
from conformance.protocols.cursus.messages import Batch, BatchAck, Command, Message, OkReply
from conformance.protocols.cursus.real_messages import command


def _reply(what: str, payload: bytes) -> object:
    try:
        return codec.decode_reply(payload)
    except codec.CursusError as exc:
        raise MessagingRefused(f"{what}: the reply does not decode: {exc}") from None


def _refuse(what: str, got: object) -> MessagingRefused:
    text = getattr(got, "text", None) or getattr(got, "error", None) or repr(got)
    return MessagingRefused(f"{what} was answered {text}")


def create(base: str) -> Generator[bytes, bytes, str]:
    what = f"CREATE {base} 1"
    got = _reply(what, (yield codec.frame(codec.encode_command(Command("CREATE", (base, 1))))))
    if not isinstance(got, OkReply):
        raise _refuse(what, got)
    return base


def produce(topic: str, values: Sequence[bytes]) -> Generator[bytes, bytes, list[int]]:
    messages = tuple(Message(payload=bytes(v)) for v in values)
    batch = Batch(topic, "0", "1", False, 0, max(len(messages) - 1, 0), messages)
    what = f"a batch of {len(messages)} message(s) to {topic}/0"
    got = _reply(what, (yield codec.frame(codec.encode_batch(batch))))
    if not isinstance(got, BatchAck) or got.status != "OK":
        raise _refuse(what, got)
    first = got.last_offset - len(messages) + 1
    return [first + i for i in range(len(messages))]


def consume(
    topic: str, offset: int, count: int
) -> Generator[bytes, bytes, list[tuple[int, bytes]]]:
    what = f"CONSUME {topic} 0 {offset}"
    command = codec.encode_command(Command("CONSUME", (topic, 0, offset)))
    got = _reply(what, (yield codec.frame(command)))
    if not isinstance(got, Batch):
        raise _refuse(what, got)
    return [(m.offset, m.payload) for m in got.messages]


def _real_reply(what: str, payload: bytes) -> object:
    try:
        return real_codec.decode_reply(payload)
    except codec.CursusError as exc:
        raise MessagingRefused(f"{what}: the reply does not decode: {exc}") from None


def real_create(base: str) -> Generator[bytes, bytes, str]:
    what = f"CREATE topic={base} partitions=1"
    got = _real_reply(what, (yield codec.frame(real_codec.envelope(what))))
    if not isinstance(got, OkReply):
        raise _refuse(what, got)
    return base


def real_produce(topic: str, values: Sequence[bytes]) -> Generator[bytes, bytes, list[int]]:
    messages = tuple(Message(seq_num=i + 1, payload=bytes(v)) for i, v in enumerate(values))
    batch = Batch(topic, "0", "1", False, 1, len(messages), messages)
    what = f"a batch of {len(messages)} message(s) to {topic}/0"
    got = _real_reply(what, (yield codec.frame(real_codec.encode_batch(batch))))
    if not isinstance(got, BatchAck) or got.status != "OK":
        raise _refuse(what, got)
    first = got.last_offset - len(messages) + 1
    return [first + i for i in range(len(messages))]


def real_consume(
    topic: str, offset: int, count: int
) -> Generator[bytes, bytes, list[tuple[int, bytes]]]:
    cmd = command("CONSUME", topic=topic, partition=0, offset=offset, member="cross")
    got = _real_reply(cmd.text(), (yield codec.frame(real_codec.encode_command(cmd))))
    if not isinstance(got, Batch):
        raise _refuse(cmd.text(), got)
    return [(m.offset, m.payload) for m in got.messages]


def messaging(options: Mapping[str, Any], revision: str) -> Messaging:
    if revision == "real":
        return Messaging(produce=real_produce, consume=real_consume, create=real_create)
    return Messaging(produce=produce, consume=consume, create=create)
