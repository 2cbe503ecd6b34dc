"""The V1 line protocol for the cross-protocol check (:class:`conformance.plugin.Messaging`).

Sans-IO.  V1 has no request that makes a topic without writing to it (PRODUCE creates one
with the broker's ``--partitions``): ``create`` is None, and the driver makes the topic,
with one partition, over another protocol first.  produce: one ``PRODUCE <topic>
xp:<value> acks=1`` per value, in order (the key ``xp`` only places the record: in a
one-partition topic it goes to partition 0; a reply naming another partition is refused
here, as the topic then has several).  A value V1 cannot carry is refused before anything
is sent: not UTF-8, or holding a space, a line break or (``doc``) a ``|``
(docs/cross-protocol.md).  consume: ``CONSUME <topic> 0 <offset>`` (every record up to the
partition's hw), again from the next offset until ``count`` records are read or one
returns none new; each item's value is its text as UTF-8.  An ``ERR`` reply raises
:class:`MessagingRefused` with its code and message.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any

from conformance.plugin import Messaging, MessagingRefused
from conformance.protocols.v1line import codec
from conformance.protocols.v1line.commands import ErrReply, OkReply
from conformance.protocols.v1line.errors import BadReply

KEY = "xp"
LINE_BREAKS = ("\n", "\r")


def cannot_carry(value: bytes, revision: str) -> str | None:
    """Why a PRODUCE line cannot carry ``value`` whole, or None."""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return "it is not UTF-8"
    if any(c.isspace() for c in text):
        return "it holds whitespace (args are split at spaces, in real at any whitespace)"
    if "|" in text and revision != "real":
        return "it holds '|' (doc splits the line on every '|')"
    return None


class V1Messaging:
    def __init__(self, revision: str) -> None:
        self.revision = revision
        self._cid = 0

    def _call(self, command: str, args: str) -> Generator[bytes, bytes, dict[str, Any]]:
        self._cid += 1
        line = codec.encode_request(f"xp{self._cid}", command, args)
        reply = yield codec.FRAMING.frame(line[:-1])
        what = f"{command} {args}"
        try:
            got = codec.parse_reply(reply)
            if isinstance(got, ErrReply):
                raise MessagingRefused(f"{what} was answered ERR {got.code} {got.message}")
            assert isinstance(got, OkReply)
            return dict(codec.decode_payload(command, got.payload or ""))
        except (BadReply, ValueError) as exc:
            raise MessagingRefused(f"{what}: the reply does not decode: {exc}") from None

    def produce(self, topic: str, values: Sequence[bytes]) -> Generator[bytes, bytes, list[int]]:
        for v in values:
            why = cannot_carry(v, self.revision)
            if why is not None:
                raise MessagingRefused(f"V1 PRODUCE cannot carry the value {v!r}: {why}")
        offsets = []
        for v in values:
            got = yield from self._call("PRODUCE", f"{topic} {KEY}:{v.decode()} acks=1")
            if got["partition"] != 0:
                raise MessagingRefused(
                    f"PRODUCE to {topic} placed the record in partition {got['partition']}: "
                    "the topic has more than one partition"
                )
            offsets.append(int(got["offset"]))
        return offsets

    def consume(
        self, topic: str, offset: int, count: int
    ) -> Generator[bytes, bytes, list[tuple[int, bytes]]]:
        got = yield from self._call("CONSUME", f"{topic} 0 {offset}")
        items = got["messages"]
        return [(int(o), str(v).encode()) for o, v in (items if isinstance(items, tuple) else ())]


def messaging(options: Mapping[str, Any], revision: str) -> Messaging:
    # one object per check: its correlation ids count up over the connection it runs on
    return Messaging(
        produce=lambda topic, values: V1Messaging(revision).produce(topic, values),
        consume=lambda topic, offset, count: V1Messaging(revision).consume(topic, offset, count),
    )
