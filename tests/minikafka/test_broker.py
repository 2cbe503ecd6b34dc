"""The mini-Kafka reference broker over TCP (``conformance serve --protocol minikafka``, a
subprocess on 127.0.0.1), both revisions, against handler.py's rules and SPEC.md.

Every input that stops the real phase-2 server (FACTS.md 1.4, 3.1, 3.2, 3.8, 4.3) is sent on
a connection of its own; handler.py says what that connection gets -- closed with nothing
written (no type byte, an unknown one, a length below 4 or over ``--max-frame-bytes``), an
error reply of the request's type (fields cut short or malformed; the connection goes on),
or, for topic names only a filesystem refuses, a success -- and a valid PRODUCE and CONSUME
on a second connection are answered after it, whatever it was (MK-ROBUST-1..3).  Then
pipelining, per-topic offsets, the two limits as ``serve`` options, and where ``doc`` and
``real`` differ.  Replies are decoded by the protocol's codec and compared whole."""

from __future__ import annotations

import itertools
import socket
import struct
from collections.abc import Iterator

import pytest

from conformance.protocols.minikafka import codec
from tests.support import broker
from tests.support.minikafka_wire import DEADLINE_S, Conn

REVISIONS = ("doc", "real")
MAX_FRAME = 64  # the smallest --max-frame-bytes serve takes
_names = itertools.count()


def fresh(prefix: str = "t") -> str:
    """A topic no other test of this module uses."""
    return f"{prefix}{next(_names)}"


@pytest.fixture(scope="module", params=REVISIONS)
def served(request: pytest.FixtureRequest) -> Iterator[broker.Broker]:
    with broker.running("--revision", request.param, protocol="minikafka") as b:
        yield b


def revision_of(b: broker.Broker) -> str:
    args = b.proc.args
    assert isinstance(args, list)
    return str(args[args.index("--revision") + 1])


def connect(b: broker.Broker) -> Conn:
    return Conn(b.host, b.port)


def assert_still_serves(b: broker.Broker, after: str) -> None:
    """A valid PRODUCE and CONSUME on a new connection are answered (MK-ROBUST-1..3)."""
    topic = fresh("alive")
    with connect(b) as c2:
        assert c2.produce(topic, b"still here") == 0, f"after {after}"
        got = c2.consume(topic, 0, 10)
        assert got == codec.ConsumeOk(1, (codec.Consumed(0, b"still here"),)), f"after {after}"


def framed(request: codec.Request) -> bytes:
    return codec.frame(codec.encode_request(request))


# ----------------------------------------------------- inputs that stop the original

CLOSING = [
    # (what, bytes, why handler.py closes): nothing is written, no reply type fits
    ("type 0x00", codec.frame(b"\x00"), "unknown type byte"),
    ("type 0x02", codec.frame(b"\x02"), "unknown type byte (a reply type)"),
    ("type 0x07", codec.frame(b"\x07topic"), "unknown type byte"),
    ("type 0xff", codec.frame(b"\xff"), "unknown type byte (-1 signed)"),
    ("length 0", struct.pack(">i", 0), "length below 4"),
    ("length 1", struct.pack(">i", 1), "length below 4"),
    ("length 3", struct.pack(">i", 3), "length below 4"),
    ("length 4", struct.pack(">i", 4), "empty payload: no type byte"),
    ("length -1", struct.pack(">i", -1), "below 4 signed, over the limit unsigned"),
    ("length 0x80000000", bytes.fromhex("80000000"), "over the limit (2 GiB)"),
    ("length 0x7fffffff", bytes.fromhex("7fffffff"), "over the limit"),
]


@pytest.mark.parametrize(("what", "raw", "why"), CLOSING, ids=[c[0] for c in CLOSING])
def test_a_frame_no_reply_fits_closes_that_connection_only(
    served: broker.Broker, what: str, raw: bytes, why: str
) -> None:
    """handler.py: a length below 4 or over the limit, an empty payload and an unknown type
    byte close the connection with nothing written; MK-ROBUST-1, -2: the broker goes on."""
    with connect(served) as other:  # an open connection is served before and after
        assert other.call(codec.Flush()) == codec.FlushOk()
        with connect(served) as c1:
            c1.send(raw + framed(codec.Flush()))  # the FLUSH after it is never read
            assert c1.closed_within(DEADLINE_S), f"{what} ({why}) left the connection open"
            assert c1.buf == b"", f"{what} ({why}) was answered {c1.buf.hex()}"
        assert other.call(codec.Flush()) == codec.FlushOk(), f"after {what}"
    assert_still_serves(served, what)


PRODUCE = codec.encode_request(codec.Produce("tp", b"data"))
CONSUME = codec.encode_request(codec.Consume("tp", 3, 7))
# field -> the payload's cut points inside it (the type byte is payload[0])
PRODUCE_FIELDS = {
    "topic length": (1, 2, 4),
    "topic": (5, 6),
    "data length": (7, 9),
    "data": (11, 14),
}
CONSUME_FIELDS = {
    "topic length": (1, 3, 4),
    "topic": (5, 6),
    "offset": (7, 10, 14),
    "batch size": (15, 18),
}
CUTS = [("PRODUCE", f, PRODUCE, n) for f, ns in PRODUCE_FIELDS.items() for n in ns] + [
    ("CONSUME", f, CONSUME, n) for f, ns in CONSUME_FIELDS.items() for n in ns
]


def test_the_cut_points_cover_every_field() -> None:
    assert len(PRODUCE) == 15 and max(PRODUCE_FIELDS["data"]) == len(PRODUCE) - 1
    assert len(CONSUME) == 19 and max(CONSUME_FIELDS["batch size"]) == len(CONSUME) - 1


@pytest.mark.parametrize(
    ("kind", "field", "payload", "cut"), CUTS, ids=[f"{c[0]}-{c[1]}-{c[3]}" for c in CUTS]
)
def test_a_request_cut_short_inside_a_field_gets_its_error_reply(
    served: broker.Broker, kind: str, field: str, payload: bytes, cut: int
) -> None:
    """handler.py, MK-ERR-2: a known type whose fields are cut short (a whole frame that ends
    inside ``field``) is answered with its type's error path, and the connection goes on;
    MK-ROBUST-3: a new connection is answered too."""
    with connect(served) as c1:
        c1.send(codec.frame(payload[:cut]))
        reply = c1.reply()
        assert isinstance(reply, codec.Failure), f"{kind} cut in its {field}: {reply}"
        assert reply.type == payload[0] + 1, f"reply type {reply.type}, expected {payload[0] + 1}"
        assert "cut short" in reply.error and field.split()[0] in reply.error, reply.error
        assert c1.call(codec.Flush()) == codec.FlushOk(), "the connection did not go on"
    assert_still_serves(served, f"{kind} cut in its {field}")


NEGATIVE = [
    ("PRODUCE topic length -1", b"\x03\xff\xff\xff\xff", "topic length: negative -1"),
    ("PRODUCE data length -1", b"\x03\x00\x00\x00\x01a\xff\xff\xff\xff", "data length: negative"),
    ("CONSUME topic length -2", b"\x01\xff\xff\xff\xfe" + bytes(12), "topic length: negative -2"),
    ("PRODUCE topic length min", b"\x03\x80\x00\x00\x00", "topic length: negative"),
]


@pytest.mark.parametrize(("what", "payload", "error"), NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_a_negative_length_gets_its_error_reply(
    served: broker.Broker, what: str, payload: bytes, error: str
) -> None:
    """handler.py: a malformed field is answered with the type's error path (the original
    threw NegativeArraySizeException and stopped, FACTS.md 3.2)."""
    with connect(served) as c1:
        c1.send(codec.frame(payload))
        reply = c1.reply()
        assert isinstance(reply, codec.Failure), f"{what}: {reply}"
        assert reply.type == payload[0] + 1 and error in reply.error, f"{what}: {reply}"
        assert c1.call(codec.Flush()) == codec.FlushOk()
    assert_still_serves(served, what)


@pytest.mark.parametrize(
    "topic", ["nul\x00inside", "x" * 300], ids=["NUL in the topic", "300-byte topic"]
)
def test_a_topic_only_a_filesystem_refuses_is_a_topic(served: broker.Broker, topic: str) -> None:
    """The original stopped on these (InvalidPathException, 'File name too long': FACTS.md
    3.8); the protocol allows any UTF-8 topic, and ours is no path: PRODUCE succeeds, CONSUME
    reads it back, and the broker goes on."""
    with connect(served) as c1:
        first = c1.produce(topic, b"a")
        assert c1.produce(topic, b"b") == first + 1
        got = c1.consume(topic, first, 10)
        assert [(m.offset, m.data) for m in got.messages] == [(first, b"a"), (first + 1, b"b")]
    assert_still_serves(served, f"topic {topic[:12]!r}")


def test_an_empty_topic_is_refused_with_the_error_path(served: broker.Broker) -> None:
    """SPEC.md (refusals): the empty topic is refused in both revisions; nothing is stored."""
    with connect(served) as c1:
        reply = c1.call(codec.Produce("", b"x"))
        assert isinstance(reply, codec.Failure) and reply.type == 0x04, reply
        assert c1.call(codec.Flush()) == codec.FlushOk()


def test_a_length_longer_than_what_follows_waits_for_the_rest_and_serves_others(
    served: broker.Broker,
) -> None:
    """The original blocked every client on this (FACTS.md 1.4); ours waits on that
    connection alone, answers once the rest comes, and a half-close ends it."""
    topic = fresh()
    whole = framed(codec.Produce(topic, b"late"))
    with connect(served) as c1:
        c1.send(whole[:9])
        assert_still_serves(served, "a frame waiting for its rest")
        c1.send(whole[9:])
        assert c1.reply() == codec.ProduceOk(0)
        c1.send(whole[:9])
        c1.sock.shutdown(socket.SHUT_WR)
        assert c1.closed_within(DEADLINE_S) and c1.buf == b""


# ----------------------------------------------------------------- framing, offsets


def test_pipelined_requests_get_one_reply_each_in_order(served: broker.Broker) -> None:
    """MK-FRAME-3: five requests in one write, five replies in order."""
    topic, other = fresh(), fresh()
    requests: list[codec.Request] = [
        codec.Produce(topic, b"a"),
        codec.Produce(other, b"z"),
        codec.Produce(topic, b"b"),
        codec.Consume(topic, 0, 10),
        codec.Flush(),
    ]
    with connect(served) as c:
        c.send(b"".join(framed(r) for r in requests))
        got = [c.reply() for _ in requests]
    pair = (codec.Consumed(0, b"a"), codec.Consumed(1, b"b"))
    expected = [codec.ProduceOk(0), codec.ProduceOk(0), codec.ProduceOk(1)]
    assert got == [*expected, codec.ConsumeOk(2, pair), codec.FlushOk()]


def test_a_request_sent_one_byte_at_a_time_is_answered(served: broker.Broker) -> None:
    """MK-FRAME-2: the frame is whole only once its length says so, however it arrives."""
    topic = fresh()
    with connect(served) as c:
        c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for byte in framed(codec.Produce(topic, b"slow")) + framed(codec.Flush()):
            c.send(bytes([byte]))
        assert c.reply() == codec.ProduceOk(0)
        assert c.reply() == codec.FlushOk()


def test_offsets_are_per_topic_from_0(served: broker.Broker) -> None:
    """MK-PROD-2, -3, -4, MK-CONS-2, -5: a:0, a:1, b:0, a:2, b:1; each reads back."""
    a, b = fresh("a"), fresh("b")
    with connect(served) as c:
        got = [c.produce(t, f"{t}-{i}".encode()) for i, t in enumerate([a, a, b, a, b])]
        assert got == [0, 1, 0, 2, 1]
        assert c.consume(a, 0, 10) == codec.ConsumeOk(
            3,
            (
                codec.Consumed(0, f"{a}-0".encode()),
                codec.Consumed(1, f"{a}-1".encode()),
                codec.Consumed(2, f"{a}-3".encode()),
            ),
        )
        assert c.consume(b, 1, 10) == codec.ConsumeOk(2, (codec.Consumed(1, f"{b}-4".encode()),))
        assert c.consume(a, 1, 1) == codec.ConsumeOk(2, (codec.Consumed(1, f"{a}-1".encode()),))


def test_data_is_stored_byte_for_byte(served: broker.Broker) -> None:
    """MK-PROD-5: zero bytes, bytes that are not UTF-8 and empty data come back as sent."""
    topic = fresh()
    values = [b"", b"\x00\x00", b"\xff\xfe\x80", bytes(range(256))]
    with connect(served) as c:
        assert [c.produce(topic, v) for v in values] == [0, 1, 2, 3]
        got = c.consume(topic, 0, 10)
    assert got == codec.ConsumeOk(4, tuple(codec.Consumed(i, v) for i, v in enumerate(values)))


# -------------------------------------------------------------------- serve options


def test_max_batch_caps_what_one_consume_returns() -> None:
    """--max-batch 3: a CONSUME of batch size 10 returns 3 messages; next_offset says where
    the rest begins (MK-CONS-5), and a smaller batch size still wins (MK-CONS-3)."""
    options = ("--revision", "real", "--max-batch", "3")
    with broker.running(*options, protocol="minikafka") as b, connect(b) as c:
        for i in range(5):
            assert c.produce("capped", bytes([i])) == i
        first = c.consume("capped", 0, 10)
        assert [m.offset for m in first.messages] == [0, 1, 2] and first.next_offset == 3
        rest = c.consume("capped", first.next_offset, 10)
        assert [m.offset for m in rest.messages] == [3, 4] and rest.next_offset == 5
        assert [m.offset for m in c.consume("capped", 1, 2).messages] == [1, 2]


def test_max_frame_bytes_limits_requests_from_the_prefix_and_replies_by_size() -> None:
    """--max-frame-bytes 64: a request whose length field is 64 is answered, a PRODUCE of data
    one CONSUME reply could not carry (over 64 - 30 bytes) with the error path; 65 closes the
    connection as soon as the prefix is in (nothing buffered, nothing written); a CONSUME
    reply stops before it would pass 64 bytes and says where to go on."""
    with broker.running(
        "--revision", "doc", "--max-frame-bytes", str(MAX_FRAME), protocol="minikafka"
    ) as b:
        biggest = codec.Produce("big", bytes(MAX_FRAME - 4 - 1 - 4 - 3 - 4))
        assert len(framed(biggest)) == MAX_FRAME
        with connect(b) as c:
            refused = c.call(biggest)
            assert isinstance(refused, codec.Failure) and "over 34" in refused.error, refused
            assert c.call(codec.Produce("big", bytes(MAX_FRAME - 30))) == codec.ProduceOk(0)
            reply = c.call(codec.Consume("big", 0, 10))
            assert isinstance(reply, codec.ConsumeOk) and len(reply.messages) == 1, reply
        with connect(b) as c:
            c.send(struct.pack(">i", MAX_FRAME + 1))  # the prefix alone
            assert c.closed_within(DEADLINE_S) and c.buf == b"", "a 65-byte length was waited on"
        with connect(b) as c:
            for i in range(3):
                assert c.produce("wide", bytes([i]) * 30) == i
            got, offset, frames = [], 0, 0
            while offset < 3 and frames < 10:
                frames += 1
                c.send(framed(codec.Consume("wide", offset, 10)))
                payload = c.read_frame()
                assert len(payload) + 4 <= MAX_FRAME, f"a reply of {len(payload) + 4} bytes"
                reply = codec.decode_reply(payload)
                assert isinstance(reply, codec.ConsumeOk) and reply.messages, reply
                got += [m.offset for m in reply.messages]
                offset = reply.next_offset
            assert got == [0, 1, 2] and frames == 3, f"offsets {got} in {frames} replies"
        assert_still_serves(b, "a frame over --max-frame-bytes")


# --------------------------------------------------------------- doc against real


def test_an_empty_read_answers_next_offset_1_in_real_and_the_offset_in_doc(
    served: broker.Broker,
) -> None:
    """MK-CONS-6, -7 with MK-CONS-8 (real: 1, FACTS.md 2.11) or MK-CONS-9 (doc: the
    requested offset): an unknown topic, and an offset past the end; neither creates it."""
    real = revision_of(served) == "real"
    topic, unknown = fresh(), fresh("unknown")
    with connect(served) as c:
        assert c.produce(topic, b"x") == 0
        for t, offset in ((unknown, 0), (unknown, 5), (topic, 1), (topic, 7)):
            expected = 1 if real else offset
            assert c.consume(t, offset, 10) == codec.ConsumeOk(expected), (t, offset)
        assert c.produce(unknown, b"first") == 0, "CONSUME created the topic"


@pytest.mark.parametrize(("offset", "batch"), [(-1, 5), (-(2**63), 1), (0, 0), (0, -3)])
def test_a_negative_offset_or_batch_is_an_empty_read_in_real_and_refused_in_doc(
    served: broker.Broker, offset: int, batch: int
) -> None:
    """MK-CONS-10 (real: success, no messages, next offset 1) against MK-CONS-11 (doc: the
    CONSUME error path); the connection goes on either way."""
    topic = fresh()
    with connect(served) as c:
        assert c.produce(topic, b"x") == 0
        reply = c.call(codec.Consume(topic, offset, batch))
        if revision_of(served) == "real":
            assert reply == codec.ConsumeOk(1), reply
        else:
            assert isinstance(reply, codec.Failure) and reply.type == 0x02 and reply.error, reply
        assert c.call(codec.Flush()) == codec.FlushOk()


def test_topics_that_are_not_utf8_are_one_topic_in_real_and_refused_in_doc(
    served: broker.Broker,
) -> None:
    """MK-ERR-4 (real: each bad byte reads as U+FFFD, so b'\\xff' and b'\\xfe' are one topic,
    FACTS.md 2.10) against MK-ERR-3 (doc: refused with the error path, PRODUCE and CONSUME)."""
    suffix = fresh("-").encode()
    bad, other_bad = b"\xff" + suffix, b"\xfe" + suffix
    with connect(served) as c:
        if revision_of(served) == "real":
            assert c.produce(bad, b"one") == 0
            assert c.produce(other_bad, b"two") == 1
            replaced = "\ufffd" + suffix.decode()
            expected = codec.ConsumeOk(2, (codec.Consumed(0, b"one"), codec.Consumed(1, b"two")))
            assert c.consume(other_bad, 0, 10) == expected
            assert c.consume(replaced, 0, 10) == expected
        else:
            for request in (codec.Produce(bad, b"one"), codec.Consume(bad, 0, 10)):
                reply = c.call(request)
                assert isinstance(reply, codec.Failure), f"{codec.describe(request)}: {reply}"
                assert reply.type == request.type + 1 and "UTF-8" in reply.error, reply


def test_the_real_clients_padded_consume_is_answered(served: broker.Broker) -> None:
    """MK-FRAME-5 (real), MK-FRAME-6 (doc): the real client pads CONSUME with 3N+4 zero bytes
    its length counts (FACTS.md 2.3: topic 'ab', offset 3, batch 7 is the example)."""
    topic = fresh("ab")
    padded = codec.encode_request(codec.Consume(topic, 0, 7)) + bytes(3 * len(topic) + 4)
    with connect(served) as c:
        for i in range(4):
            assert c.produce(topic, bytes([i])) == i
        c.send(codec.frame(padded))
        got = c.reply()
        assert got == codec.ConsumeOk(4, tuple(codec.Consumed(i, bytes([i])) for i in range(4)))
        facts = bytes.fromhex("00000021 01 00000002 6162 0000000000000003 00000007") + bytes(10)
        c.send(facts)  # topic 'ab': fresh() never gives it, so no test produced to it
        reply = c.reply()
        assert isinstance(reply, codec.ConsumeOk) and reply.messages == (), reply


def test_flush_is_answered_000000060601(served: broker.Broker) -> None:
    """MK-FLUSH-1: the exact bytes, with trailing bytes ignored (FACTS.md 2.5)."""
    with connect(served) as c:
        c.send(bytes.fromhex("0000000505") + bytes.fromhex("00000008 05 ffffff"))
        assert c.read_exactly(12) == bytes.fromhex("000000060601") * 2
