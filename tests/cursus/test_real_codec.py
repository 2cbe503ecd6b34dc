"""Cursus revision real's codec (real_codec.py): round trips, whole and byte at a time and
with trailing bytes, the refusals the real broker sends, and agreement with the official
Python client's own encoder and decoder (an independent implementation, cursus-client 0.1.1)."""

from __future__ import annotations

import gzip

from cursus.protocol import decoder as client_decoder
from cursus.protocol import encoder as client_encoder
from cursus.types import Message as ClientMessage
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.engine import Engine
from conformance.protocols.cursus import codec, real_codec, real_strategies
from conformance.protocols.cursus.handler import CursusConfig, CursusFrontend
from conformance.protocols.cursus.messages import Batch, BatchAck, ErrorReply, Message
from conformance.protocols.cursus.real_codec import RealRefusal
from conformance.protocols.cursus.real_messages import RealCommand, command

SETTINGS = settings(max_examples=150, deadline=None)


@SETTINGS
@given(real_strategies.batches())
def test_a_batch_round_trips_whole_byte_at_a_time_and_with_trailing_bytes(b: Batch) -> None:
    payload = real_codec.encode_batch(b)
    assert real_codec.decode_batch(payload) == b
    assert real_codec.decode_batch(payload + b"\x00\xff") == b  # the real broker ignores them
    frames: list[bytes] = []
    deframer = codec.new_deframer()
    for byte in codec.frame(payload):
        frames += deframer.feed(bytes([byte]))
    assert frames == [payload]
    assert real_codec.classify(payload) == b


@SETTINGS
@given(real_strategies.batches(), st.integers(1, 40))
def test_a_batch_cut_short_is_refused_as_the_real_broker_refuses_it(b: Batch, cut: int) -> None:
    payload = real_codec.encode_batch(b)[:-cut]
    got = real_codec.classify(payload)
    if real_codec.is_batch(payload):
        assert isinstance(got, RealRefusal) and got.reply.code == "batch_decode_failed"
    else:
        assert not isinstance(got, Batch)


@SETTINGS
@given(real_strategies.commands())
def test_a_command_round_trips(cmd: RealCommand) -> None:
    payload = real_codec.encode_command(cmd)
    assert real_codec.classify(payload) == cmd


@SETTINGS
@given(real_strategies.replies())
def test_a_reply_round_trips(reply: object) -> None:
    payload = real_codec.encode_reply(reply)  # type: ignore[arg-type]
    assert real_codec.decode_reply(payload) == reply


@SETTINGS
@given(real_strategies.invalid_requests())
def test_what_the_real_broker_refuses_before_a_command_runs(case: tuple[bytes, str]) -> None:
    payload, code = case
    got = real_codec.classify(payload)
    assert isinstance(got, RealRefusal) and got.reply.code == code
    assert got.close == (code == "malformed_input")


def test_the_ack_leaves_out_empty_leader_and_error() -> None:
    ack = BatchAck("OK", 4, 7, "p", 1, 5)
    assert real_codec.encode_ack(ack) == (
        b'{"status":"OK","last_offset":4,"producer_epoch":7,"producer_id":"p",'
        b'"seq_start":1,"seq_end":5}'
    )
    assert b'"leader":"h:1"' in real_codec.encode_ack(BatchAck("OK", 4, leader="h:1"))


def test_reply_words_keep_brackets_and_quotes_whole() -> None:
    text = 'OK generation=2 member=m-1 assignments=[0 1 2] reason="a b c"'
    assert real_codec.fields_of(text[3:]) == (
        ("generation", "2"),
        ("member", "m-1"),
        ("assignments", "[0 1 2]"),
        ("reason", '"a b c"'),
    )
    assert real_codec.assignment("[0 1 2]") == [0, 1, 2]
    assert real_codec.assignment("[]") == []
    assert real_codec.assignment("0,1") is None


# --------------------------------------------------- the official client's own codec


def _client_message(m: Message) -> ClientMessage:
    return ClientMessage(
        offset=m.offset,
        seq_num=m.seq_num,
        payload=m.payload.decode("utf-8"),
        key=m.key,
        producer_id=m.producer_id,
        epoch=m.epoch,
        event_type=m.event_type,
        schema_version=m.schema_version,
        aggregate_version=m.aggregate_version,
        metadata=m.metadata,
    )


TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
CLIENT_MESSAGES = st.builds(
    Message,
    offset=st.integers(0, 2**64 - 1),
    seq_num=st.integers(0, 2**64 - 1),
    producer_id=TEXT,
    key=TEXT,
    epoch=st.integers(-(2**63), 2**63 - 1),
    payload=TEXT.map(str.encode),
    event_type=TEXT,
    schema_version=st.integers(0, 2**32 - 1),
    aggregate_version=st.integers(0, 2**64 - 1),
    metadata=TEXT,
)


@SETTINGS
@given(
    st.text("abcdefgh-", min_size=1, max_size=8),
    st.integers(-(2**31), 2**31 - 1),
    st.sampled_from(("0", "1", "-1", "all")),
    st.booleans(),
    st.lists(CLIENT_MESSAGES, max_size=3),
)
def test_our_batch_is_byte_for_byte_the_clients(
    topic: str, partition: int, acks: str, idempotent: bool, msgs: list[Message]
) -> None:
    seqs = [m.seq_num for m in msgs] or [0]
    ours = Batch(topic, str(partition), acks, idempotent, seqs[0], seqs[-1], tuple(msgs))
    theirs = client_encoder.encode_batch(
        topic, partition, acks, idempotent, [_client_message(m) for m in msgs]
    )
    assert real_codec.encode_batch(ours) == theirs
    got, got_topic, got_partition = client_decoder.decode_batch(real_codec.encode_batch(ours))
    assert (got_topic, got_partition) == (topic, partition)
    assert [(m.offset, m.payload, m.key) for m in got] == [
        (m.offset, m.payload.decode(), m.key) for m in msgs
    ]


@SETTINGS
@given(st.text("abcdefghij", max_size=6), real_strategies.commands())
def test_our_envelope_is_the_clients(topic: str, cmd: RealCommand) -> None:
    assert real_codec.envelope(cmd.text(), topic) == client_encoder.encode_message(
        topic, cmd.text()
    )


def test_the_client_reads_our_ack() -> None:
    ack = client_decoder.decode_ack(real_codec.encode_ack(BatchAck("OK", 9, 3, "p", 1, 2)))
    assert (ack.status, ack.last_offset, ack.leader, ack.error) == ("OK", 9, "", "")


# ----------------------------------------------------------------- the front-end


def _session(compression: str = "none") -> object:
    frontend = CursusFrontend(Engine(), CursusConfig(revision="real", compression=compression))
    frontend.set_address("127.0.0.1", 9000)
    return frontend.new_session("test")


def _reply(session: object, payload: bytes) -> object:
    (framed,) = session.handle(payload).replies  # type: ignore[attr-defined]
    (inner,) = codec.new_deframer().feed(framed)
    return real_codec.decode_reply(inner)


def test_a_gzip_batch_is_inflated_with_compression_gzip() -> None:
    s = _session("gzip")
    _reply(s, real_codec.encode_command(command("CREATE", topic="z", partitions=1)))
    batch = Batch("z", "0", "1", False, 1, 1, (Message(seq_num=1, payload=b"zip"),))
    ack = _reply(s, gzip.compress(real_codec.encode_batch(batch)))
    assert isinstance(ack, BatchAck) and ack.last_offset == 0
    page = _reply(
        s,
        real_codec.encode_command(command("CONSUME", topic="z", partition=0, offset=0, member="m")),
    )
    assert isinstance(page, Batch) and [m.payload for m in page.messages] == [b"zip"]
    bad = _reply(s, b"\x1f\x8b\x08\x00junk")
    assert isinstance(bad, ErrorReply) and bad.code == "decompress_failed"


def test_an_unknown_command_closes_and_a_broken_envelope_does_not() -> None:
    s = _session()
    assert s.handle(real_codec.envelope("SUBSCRIBE t g")).close  # type: ignore[attr-defined]
    assert not s.handle(b"\x00\x09LIST").close  # type: ignore[attr-defined]


def test_an_oversize_prefix_closes_without_a_reply() -> None:
    frontend = CursusFrontend(Engine(), CursusConfig(revision="real"))
    deframer = frontend.new_deframer()
    try:
        deframer.feed((16 * 1024 * 1024 + 1).to_bytes(4, "big"))
    except Exception as exc:  # the deframer refuses the prefix
        outcome = frontend.framing_error(exc)  # type: ignore[arg-type]
        assert outcome.close and outcome.replies == []
    else:  # pragma: no cover - reported
        raise AssertionError("a 16 MiB + 1 prefix was taken")
    assert frontend.new_deframer().feed((16 * 1024 * 1024).to_bytes(4, "big")) == []
