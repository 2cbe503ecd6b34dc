"""The frame annotator's part for revision ``real``: what only the real layouts have.

The annotator sees a payload without knowing the target's revision (the plug-in has one
annotator), so this module claims a payload only when it cannot be the document's:

* a batch that does not decode in the document's layout but does in the real one (FACTS
  4.1, 4.2): its header and message fields by the real layout's names, the same names as
  the document's batch (``partition``, ``acks.len``, ``message[i].payload``...);
* a text command in the envelope ``[u16 topicLen][topic][command]`` (``topic_len``,
  ``envelope_topic``, then the command), or a command of ``key=value`` words: ``command``,
  then each word named by its key (a bare word ``word<i>``);
* a reply line whose values hold spaces (``assignments=[0 1]``, ``reason="a b"``): one word
  per value, ``word0``, ``word1``... as a client splits it (:func:`real_codec.ok_words`);
* an empty reply: a STREAM keepalive, no field.

Anything else is left to the document's annotator (None).
"""

from __future__ import annotations

from conformance.plugin import FieldSpan
from conformance.protocols.cursus import codec, real_codec
from conformance.protocols.cursus.messages import MAGIC
from conformance.protocols.cursus.real_messages import REAL_HEADER, REAL_MESSAGE, RealType

_MAGIC = MAGIC.to_bytes(2, "big")
SHOWN = 64
MOST_WORDS = 64
"""Words of a command annotated one by one; the rest is the last word's."""
_SIZES = {"u8": 1, "u16": 2, "u32": 4, "i32": 4, "u64": 8, "i64": 8}
_LENGTHS = {"str8": 1, "str16": 2, "bytes32u": 4}


def _str(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _text(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


def real_spans(payload: bytes, direction: str) -> list[FieldSpan] | None:
    """The fields of ``payload`` when only the real layouts explain it, else None."""
    if not payload:
        return [] if direction == "reply" else None
    if payload[:2] == MAGIC.to_bytes(2, "big"):
        return _batch(payload)
    if direction == "reply":
        return _reply_words(payload)
    return _command(payload)


def _batch(payload: bytes) -> list[FieldSpan] | None:
    try:
        codec.decode_batch(payload)
        return None  # the document's layout explains it
    except codec.CursusError:
        pass
    try:
        real_codec.decode_batch(payload)
    except codec.CursusError:
        return None
    out: list[FieldSpan] = []
    pos = 0
    for name, kind in REAL_HEADER:
        pos = _field(payload, pos, name, kind, out)
    count = int.from_bytes(payload[pos - 4 : pos], "big", signed=True)
    for i in range(count):
        for name, kind in REAL_MESSAGE:
            pos = _field(payload, pos, f"message[{i}].{name}", kind, out)
    return out


def _field(payload: bytes, pos: int, name: str, kind: RealType, out: list[FieldSpan]) -> int:
    if kind in _SIZES:
        end = pos + _SIZES[kind]
        signed = kind[0] == "i"
        value = int.from_bytes(payload[pos:end], "big", signed=signed)
        out.append(FieldSpan(name, pos, end, value, signed=signed))
        return end
    width = _LENGTHS[kind]
    n = int.from_bytes(payload[pos : pos + width], "big")
    start, end = pos + width, pos + width + n
    out.append(FieldSpan(f"{name}.len", pos, start, n, counts=(start, end)))
    out.append(FieldSpan(name, start, end, _text(payload[start:end])))
    return end


def _command(payload: bytes) -> list[FieldSpan] | None:
    text = payload.decode("utf-8", "surrogateescape")
    if real_codec.command_name(text.strip(" \t\r\n")):
        return _key_words(payload, 0) if "=" in text else None
    if len(payload) < 2:
        return None
    n = int.from_bytes(payload[:2], "big")
    inner = payload[2 + n :]
    if n + 2 > len(payload) or not real_codec.command_name(
        inner.decode("utf-8", "surrogateescape").strip("\x00 \t\r\n")
    ):
        return None
    head = [
        FieldSpan("topic_len", 0, 2, n, counts=(2, 2 + n)),
        FieldSpan("envelope_topic", 2, 2 + n, _text(payload[2 : 2 + n])),
    ]
    return head + (_key_words(payload, 2 + n) or [])


def _key_words(payload: bytes, start: int) -> list[FieldSpan] | None:
    """``NAME key=value ...`` from ``start``: ``command``, then each word by its key."""
    out: list[FieldSpan] = []
    pos = start
    for i, word in enumerate(payload[start:].split(b" ", MOST_WORDS)):
        if not word:
            pos += 1
            continue
        key, sep, value = word.partition(b"=")
        if i == 0:
            out.append(FieldSpan("command", pos, pos + len(word), _text(word)))
        elif sep:
            name = key.decode("utf-8", "replace")
            out.append(FieldSpan(name, pos - 1, pos + len(word), _text(value), droppable=True))
        else:
            out.append(FieldSpan(f"word{i}", pos - 1, pos + len(word), _text(word), droppable=True))
        pos += len(word) + 1
    return out


def _reply_words(payload: bytes) -> list[FieldSpan] | None:
    text = payload.decode("utf-8", "surrogateescape")
    if not (text.startswith("OK") or text.startswith("ERROR:")):
        return None
    words = real_codec.ok_words(text)
    if words == [w for w in text.split(" ") if w]:
        return None  # no value with a space inside: the document's annotator's words
    out, pos = [], 0
    for i, word in enumerate(words):
        at = text.index(word, pos)
        start = len(text[:at].encode("utf-8", "surrogateescape"))
        end = start + len(word.encode("utf-8", "surrogateescape"))
        out.append(FieldSpan(f"word{i}", start, end, _text(payload[start:end])))
        pos = at + len(word)
    return out


def describe_real(payload: bytes) -> str:
    """A one-line summary for wire logs (never raises)."""
    if not payload:
        return "empty frame (keepalive)"
    if payload[:2] == _MAGIC:
        try:
            b = real_codec.decode_batch(payload)
        except codec.CursusError as exc:
            return f"real batch (malformed: {exc.code})"
        return f"real batch {b.topic}/{b.partition} acks={b.acks} {len(b.messages)} message(s)"
    if len(payload) >= 2 and not real_codec.command_name(_str(payload[:40]).strip()):
        n = int.from_bytes(payload[:2], "big")
        if n + 2 <= len(payload) and real_codec.command_name(
            _str(payload[2 + n : 2 + n + 40]).strip("\x00 ")
        ):
            text = _str(payload[2 + n : 2 + n + 80])
            return f"envelope[{n}] {text!r}"
    text = payload[:80].decode("utf-8", "replace")
    return repr(text if len(payload) <= 80 else text + "...")
