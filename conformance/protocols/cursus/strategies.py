"""Hypothesis strategies for Cursus messages, valid and deliberately invalid.

Valid strategies are derived from the declarations in :mod:`messages` (``COMMANDS`` and
their argument kinds, the batch and message fields, the ack fields), so every value
they draw encodes and decodes back to itself.  The reply strategies keep to what a
client can tell apart (a special word inside an OK reply would read as a special reply,
so generated OK values and topic names are lower case).  Invalid strategies draw a
payload together with the error code the codec must refuse it with.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from conformance.protocols.cursus import codec
from conformance.protocols.cursus.messages import (
    ACK_STATUSES,
    COMMANDS,
    GEN_MISMATCH,
    NOT_LEADER,
    REBALANCE_REQUIRED,
    ArgKind,
    ArgValue,
    Batch,
    BatchAck,
    Command,
    ErrorReply,
    Message,
    OkReply,
    Reply,
    SpecialReply,
    TextReply,
    TopicList,
)

I64 = st.integers(-(2**63), 2**63 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
LOWER = "abcdefghijklmnopqrstuvwxyz0123456789._-"


def names(alphabet: str = NAME_CHARS, max_size: int = 24) -> st.SearchStrategy[str]:
    """Plain topic, group and member names (the codec accepts more: see ``tokens``)."""
    return st.text(alphabet, min_size=1, max_size=max_size)


def tokens(max_size: int = 24) -> st.SearchStrategy[str]:
    """Any name the document allows: a non-empty UTF-8 token without a space."""
    chars = st.characters(codec="utf-8", exclude_characters=" ")
    return st.text(chars, min_size=1, max_size=max_size)


def short_text(max_size: int = 16) -> st.SearchStrategy[str]:
    """Any UTF-8 text (no lone surrogates: they have no UTF-8 form)."""
    return st.text(st.characters(codec="utf-8"), max_size=max_size)


def offsets_payloads() -> st.SearchStrategy[tuple[tuple[int, int], ...]]:
    pairs = st.lists(
        st.tuples(I64, I64),
        min_size=1,
        max_size=4,
        unique_by=lambda p: p[0],
    )
    return pairs.map(tuple)


ARG_VALUES: dict[ArgKind, st.SearchStrategy[ArgValue]] = {
    "topic": names(),
    "name": names(),
    "count": I64,
    "index": I64,
    "offset": I64,
    "generation": I64,
    "offsets": offsets_payloads(),
}
"""Every value the codec decodes: numbers are signed int64 (whether the broker has such a
partition, offset or generation, or allocates such a count, is not the codec's to say)."""


def command(name: str) -> st.SearchStrategy[Command]:
    """A valid ``name`` command, each argument drawn by its kind."""
    args = [ARG_VALUES[a.kind] for a in COMMANDS[name].args]
    return st.tuples(*args).map(lambda values: Command(name, tuple(values)))


def commands() -> st.SearchStrategy[Command]:
    return st.sampled_from(sorted(COMMANDS)).flatmap(command)


def messages() -> st.SearchStrategy[Message]:
    return st.builds(
        Message,
        offset=I64,
        seq_num=I64,
        producer_id=short_text(),
        key=short_text(),
        epoch=I64,
        payload=st.binary(max_size=64),
        event_type=short_text(),
        schema_version=I32,
        aggregate_version=I64,
        metadata=short_text(),
    )


def batches(max_messages: int = 4) -> st.SearchStrategy[Batch]:
    """Any batch the layout can carry (header strings are not checked by the codec)."""
    return st.builds(
        Batch,
        topic=st.one_of(names(), short_text()),
        partition=st.one_of(st.integers(0, 2**31 - 1).map(str), short_text(4)),
        acks=st.one_of(st.sampled_from(("0", "1", "-1")), short_text(4)),
        idempotent=st.booleans(),
        seq_start=I64,
        seq_end=I64,
        messages=st.lists(messages(), max_size=max_messages).map(tuple),
    )


def produce_batches(max_messages: int = 4) -> st.SearchStrategy[Batch]:
    """Batches a broker accepts the header of: a decimal partition, acks 0, 1 or -1."""
    return st.builds(
        Batch,
        topic=names(),
        partition=st.integers(0, 7).map(str),
        acks=st.sampled_from(("0", "1", "-1")),
        idempotent=st.booleans(),
        seq_start=st.integers(0, 2**31),
        seq_end=st.integers(0, 2**31),
        messages=st.lists(messages(), max_size=max_messages).map(tuple),
    )


def acks() -> st.SearchStrategy[BatchAck]:
    return st.builds(
        BatchAck,
        status=st.sampled_from(ACK_STATUSES),
        last_offset=I64,
        producer_epoch=I64,
        producer_id=short_text(),
        seq_start=I64,
        seq_end=I64,
        leader=st.one_of(
            st.just(""), st.builds("{}:{}".format, names(LOWER), st.integers(1, 65535))
        ),
        error=short_text(32),
    )


_WORDS = st.text("abcdefghijklmnopqrstuvwxyz0123456789'.:=", min_size=1, max_size=10)


def error_replies() -> st.SearchStrategy[ErrorReply]:
    """``ERROR: <CODE> <description>`` as the reference broker writes it."""
    code = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ_", min_size=1, max_size=20)
    desc = st.lists(_WORDS, max_size=6).map(" ".join)
    return st.builds(codec.error_reply, code, desc).map(
        lambda r: ErrorReply(r.code, r.text.strip())
    )


def special_replies() -> st.SearchStrategy[SpecialReply]:
    kind = st.sampled_from((NOT_LEADER, REBALANCE_REQUIRED, GEN_MISMATCH))
    tail = st.one_of(
        st.just(""),
        st.integers(0, 2**31).map(" generation={}".format),
        st.integers(1, 65535).map(" leader=127.0.0.1:{}".format),
    )
    return st.builds(lambda k, t: SpecialReply(k, k + t), kind, tail)


def ok_replies() -> st.SearchStrategy[OkReply]:
    key = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)
    value = st.text("abcdefghijklmnopqrstuvwxyz0123456789,:.=-", max_size=12)
    return st.lists(st.tuples(key, value), max_size=4).map(lambda f: OkReply(tuple(f)))


def topic_lists() -> st.SearchStrategy[TopicList]:
    return st.lists(names(LOWER), max_size=5).map(lambda t: TopicList(tuple(t)))


def text_replies() -> st.SearchStrategy[TextReply]:
    """Text that is none of the other replies (not JSON, not ERROR:, not OK, no special)."""
    text = st.lists(st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8), max_size=4)
    return text.map(" ".join).filter(lambda t: t != "ok" and not t.startswith("ok ")).map(TextReply)


def consume_batches() -> st.SearchStrategy[Batch]:
    """A CONSUME reply: consecutive offsets, empty acks, seqStart/seqEnd the first/last offset."""

    def build(topic: str, partition: int, start: int, msgs: list[Message]) -> Batch:
        numbered = tuple(replace(m, offset=start + i) for i, m in enumerate(msgs))
        last = start + len(msgs) - 1 if msgs else start
        return Batch(topic, str(partition), "", False, start, last, numbered)

    return st.builds(
        build, names(), st.integers(0, 99), st.integers(0, 2**40), st.lists(messages(), max_size=3)
    )


def replies() -> st.SearchStrategy[Reply]:
    return st.one_of(
        acks(),
        consume_batches(),
        error_replies(),
        special_replies(),
        ok_replies(),
        topic_lists(),
        text_replies(),
    )


# ------------------------------------------------------------------- invalid


def _tokens(cmd: Command) -> list[str]:
    return codec.encode_command(cmd).decode().split(" ")


NOT_NUMBERS = (
    "x",
    "-",
    "--1",
    "1-",
    "-+1",
    "1.5",
    "+1",
    "1e3",
    "0x10",
    "1_0",
    "\u0661",
    "-\u0661",
    "9223372036854775808",
    "-9223372036854775809",
)
"""Number fields the codec refuses: not ``-?[0-9]+`` in ASCII, or outside the int64 range."""


def _bad_arg(kind: ArgKind) -> st.SearchStrategy[str]:
    """A field the codec refuses; names have none (any non-empty token is a name)."""
    if kind == "offsets":
        return st.sampled_from(
            ("0", "0:", ":1", "0:1,0:2", "0:1,00:2", "-0:1,0:2", "a:1", "0:1;1:2", "0:--1", "0:+1")
        )
    return st.sampled_from(NOT_NUMBERS)


@st.composite
def invalid_commands(draw: st.DrawFn) -> tuple[bytes, str]:
    """A text command payload the codec must refuse, and the code it refuses it with."""
    way = draw(st.sampled_from(("arg", "arity", "space", "unknown", "utf8", "empty")))
    name = draw(st.sampled_from(sorted(COMMANDS)))
    refusable = [i for i, a in enumerate(COMMANDS[name].args, 1) if a.kind not in ("topic", "name")]
    if way == "arg" and not refusable:
        way = "arity"
    tokens = _tokens(draw(command(name)))
    if way == "arg":
        i = draw(st.sampled_from(refusable))
        tokens[i] = draw(_bad_arg(COMMANDS[name].args[i - 1].kind))
        return " ".join(tokens).encode(), "BAD_ARGUMENT"
    if way == "arity":
        if len(tokens) > 1 and draw(st.booleans()):
            tokens.pop()
        else:
            tokens.append(draw(names()))
        return " ".join(tokens).encode(), "BAD_ARGUMENTS"
    if way == "space":
        if len(tokens) == 1:
            return (tokens[0] + " ").encode(), "BAD_ARGUMENTS"
        i = draw(st.integers(1, len(tokens) - 1))
        tokens[i] = " " + tokens[i]
        return " ".join(tokens).encode(), "BAD_ARGUMENTS"
    if way == "unknown":
        tokens[0] = draw(names().filter(lambda n: n not in COMMANDS))
        return " ".join(tokens).encode(), "UNKNOWN_COMMAND"
    if way == "utf8":
        text = " ".join(tokens).encode()
        i = draw(st.integers(0, len(text)))
        bad = draw(st.sampled_from((b"\xff", b"\xc3", b"\x80", b"\xed\xa0\x80")))
        return text[:i] + bad + text[i:], "INVALID_UTF8"
    return b"", "EMPTY_COMMAND"


@st.composite
def invalid_batches(draw: st.DrawFn) -> tuple[bytes, str]:
    """A batch payload (magic first) the codec must refuse, and the code."""
    body = codec.encode_batch(draw(batches(max_messages=2)))
    way = draw(st.sampled_from(("truncate", "trailing", "idempotent", "count")))
    if way == "truncate":
        return body[: draw(st.integers(2, len(body) - 1))], "MALFORMED_BATCH"
    if way == "trailing":
        return body + draw(st.binary(min_size=1, max_size=8)), "MALFORMED_BATCH"
    topic_len = int.from_bytes(body[2:4], "big")
    at = 4 + topic_len
    at += 2 + int.from_bytes(body[at : at + 2], "big")  # partition
    at += 2 + int.from_bytes(body[at : at + 2], "big")  # acks
    if way == "idempotent":
        flag = draw(st.integers(2, 255))
        return body[:at] + bytes([flag]) + body[at + 1 :], "MALFORMED_BATCH"
    at += 1 + 16  # idempotent, seqStart, seqEnd
    count = draw(st.integers(-(2**31), -1))
    return body[:at] + count.to_bytes(4, "big", signed=True) + body[at + 4 :], "MALFORMED_BATCH"


def frames_payloads() -> st.SearchStrategy[list[bytes]]:
    """Payloads of a sequence of frames (empty payloads included)."""
    return st.lists(st.binary(max_size=40), max_size=6)


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[bytes]) -> bytes:
    """Bytes of ``base`` with one to three edits: a byte changed, a slice cut out, or a few
    bytes inserted."""
    data = bytearray(draw(base))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(("set", "cut", "insert")))
        if how == "set" and i < len(data):
            data[i] = draw(st.integers(0, 255))
        elif how == "cut":
            del data[i : i + draw(st.integers(1, 8))]
        else:
            data[i:i] = draw(st.binary(min_size=1, max_size=4))
    return bytes(data)
