"""Hypothesis strategies for revision real's messages (real_messages.py, FACTS.md).

Valid strategies draw what the real layouts carry, so each encodes and decodes back to itself:
batches with an int32 partition, acks of at most 255 bytes, unsigned offsets and sequences;
commands of every served name with the keys it needs, in the envelope (with or without a topic)
or raw; replies of every kind a client tells apart.  ``invalid_requests`` draws a payload with
the refusal code the real broker sends for it.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.protocols.cursus import real_codec
from conformance.protocols.cursus.messages import (
    Batch,
    BatchAck,
    ErrorReply,
    Message,
    OkReply,
    TextReply,
)
from conformance.protocols.cursus.real_codec import RealReply
from conformance.protocols.cursus.real_messages import SERVED, Keepalive, RealCommand
from conformance.protocols.cursus.strategies import LOWER, names, short_text

U64 = st.integers(0, 2**64 - 1)
U32 = st.integers(0, 2**32 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
VALUE_CHARS = LOWER + "ABCDEFGHIJKLMNOPQRSTUVWXYZ-_.:,"


def messages() -> st.SearchStrategy[Message]:
    return st.builds(
        Message,
        offset=U64,
        seq_num=U64,
        producer_id=short_text(),
        key=short_text(),
        epoch=I64,
        payload=st.binary(max_size=64),
        event_type=short_text(),
        schema_version=U32,
        aggregate_version=U64,
        metadata=short_text(),
    )


def batches(max_messages: int = 4) -> st.SearchStrategy[Batch]:
    """Any batch the real layout carries (a non-empty topic: with none it is not a batch)."""
    return st.builds(
        Batch,
        topic=names(),
        partition=st.integers(-(2**31), 2**31 - 1).map(str),
        acks=st.one_of(st.sampled_from(("0", "1", "-1", "all")), short_text(4)),
        idempotent=st.booleans(),
        seq_start=U64,
        seq_end=U64,
        messages=st.lists(messages(), max_size=max_messages).map(tuple),
    )


def produce_batches(max_messages: int = 4) -> st.SearchStrategy[Batch]:
    """Batches a broker reads the header of: partitions 0-7, acks 1, -1 or all, messages."""
    return st.builds(
        Batch,
        topic=names(),
        partition=st.integers(0, 7).map(str),
        acks=st.sampled_from(("1", "-1", "all")),
        idempotent=st.booleans(),
        seq_start=st.integers(0, 2**31),
        seq_end=st.integers(0, 2**31),
        messages=st.lists(messages(), min_size=1, max_size=max_messages).map(tuple),
    )


def _value(key: str) -> st.SearchStrategy[str]:
    if key in ("partition", "partitions", "offset", "generation"):
        return st.integers(0, 2**31).map(str)
    return st.text(VALUE_CHARS, min_size=1, max_size=16)


def command(name: str) -> st.SearchStrategy[RealCommand]:
    served = SERVED[name]
    keys = (
        st.just(served.required)
        if not served.optional
        else st.tuples(
            st.just(served.required), st.lists(st.sampled_from(served.optional), unique=True)
        ).map(lambda p: p[0] + tuple(p[1]))
    )
    entries = st.lists(
        st.tuples(st.integers(0, 7), st.integers(0, 2**31)).map("P{0[0]}:{0[1]}".format),
        min_size=1,
        max_size=3,
    ).map(",".join)

    def build(
        ks: tuple[str, ...], values: list[str], tail: str, topic: str, raw: bool
    ) -> RealCommand:
        words = (tail,) if served.bare else ()
        cmd = RealCommand(name, tuple(zip(ks, values, strict=True)), words, topic, raw)
        return real_codec.parse_command(cmd.text(), topic=topic, raw=raw)

    return keys.flatmap(
        lambda ks: st.builds(
            build,
            st.just(ks),
            st.tuples(*(_value(k) for k in ks)).map(list),
            entries,
            st.one_of(st.just(""), names(LOWER, 8)),
            st.booleans(),
        )
    ).map(lambda c: c if not c.raw else RealCommand(c.name, c.args, c.words, "", True, c.last))


def commands() -> st.SearchStrategy[RealCommand]:
    return st.sampled_from(sorted(SERVED)).flatmap(command)


def acks() -> st.SearchStrategy[BatchAck]:
    return st.builds(
        BatchAck,
        status=st.just("OK"),
        last_offset=U64,
        producer_epoch=I64,
        producer_id=short_text(),
        seq_start=U64,
        seq_end=U64,
        leader=st.one_of(st.just(""), st.just("127.0.0.1:9000")),
        error=st.one_of(st.just(""), st.text(LOWER, min_size=1, max_size=12)),
    )


def ok_replies() -> st.SearchStrategy[OkReply]:
    key = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=10)
    value = st.one_of(
        st.text(VALUE_CHARS, max_size=12),
        st.lists(st.integers(0, 99), max_size=4).map(lambda p: "[" + " ".join(map(str, p)) + "]"),
    )
    return st.lists(st.tuples(key, value), max_size=4).map(lambda f: OkReply(tuple(f)))


def error_replies() -> st.SearchStrategy[ErrorReply]:
    code = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=16)
    detail = st.lists(st.text(VALUE_CHARS, min_size=1, max_size=8), max_size=3)
    return st.builds(lambda c, d: real_codec.error(c, *d), code, detail)


def replies() -> st.SearchStrategy[RealReply]:
    return st.one_of(
        acks(),
        batches(),
        ok_replies(),
        error_replies(),
        st.just(Keepalive()),
        st.just(TextReply("STREAM_CONTROL type=CLOSE reason=stopped offset=3")),
    )


def invalid_requests() -> st.SearchStrategy[tuple[bytes, str]]:
    """A payload the real broker refuses before any command runs, and the code it sends."""
    short = st.binary(max_size=1).map(lambda b: (b, "decode_failed"))
    long_envelope = st.integers(
        3, 0x08FF
    ).flatmap(  # a first byte no letter nor space
        lambda n: st.binary(max_size=min(n - 1, 64)).map(
            lambda rest: (n.to_bytes(2, "big") + rest[: n - 1], "decode_failed")
        )
    )
    unknown = st.text("QWXYZ", min_size=1, max_size=8).map(
        lambda word: (real_codec.envelope(word + " x=1"), "malformed_input")
    )
    negative = names().map(
        lambda t: (
            real_codec.encode_batch(Batch(t))[:-4] + (-1).to_bytes(4, "big", signed=True),
            "batch_decode_failed",
        )
    )
    return st.one_of(short, long_envelope, unknown, negative)
