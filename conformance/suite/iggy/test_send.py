"""Iggy SEND_MESSAGES: layouts, partitioning, offsets and ids, checksums (SPEC.md, area
"send")."""

from __future__ import annotations

import struct
import zlib

import xxhash

from conformance.client import Connection
from conformance.suite.case import case, require
from conformance.suite.iggy.steps import (
    FIRST,
    balanced,
    by_key,
    ident,
    message,
    msg_fields,
    offsets,
    payloads,
    poll,
    poll_body,
    polled,
    send_messages,
    stream,
    stream_topic,
    to_partition,
)
from conformance.suite.iggy.verify import Reply, both, expect_status
from conformance.suite.shown import show, show_all
from conformance.suite.target import CaseContext

UNKNOWN = 4_000_000_000


def all_of(ctx: CaseContext, conn: Connection, sid: int, tid: int, pid: int) -> Reply:
    return poll(ctx, conn, poll_body(ctx, sid, tid, pid, FIRST, 0, 1000))


@case("iggy/send/1", "IGG-SEND-1")
def test_send_messages_in_the_08_layout_is_stored(target: CaseContext) -> None:
    """Three messages in the 0.8 layout are answered 0 with no payload and polled back in order.

    IGG-SEND-1: "SEND_MESSAGES (101) in the 0.8 layout is stored and answered with status 0 and
    an empty payload ..."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "send08")
        msgs = [message(target, p) for p in (b"one", b"two", b"three")]
        sent = send_messages(target, conn, sid, tid, to_partition(0), msgs, "IGG-SEND-1")
        require(
            not sent.payload,
            "IGG-SEND-1",
            f"SEND_MESSAGES answered {len(sent.payload)} payload byte(s), expected none",
            sent.at(),
        )
        got = all_of(target, conn, sid, tid, 0)
        require(
            payloads(got) == [b"one", b"two", b"three"],
            "IGG-SEND-1",
            "the partition holds payloads other than the three sent",
            got.at(*msg_fields(got, "payload")) if polled(got) else got.at("messages count"),
        )


@case("iggy/send/2", "IGG-SEND-2")
def test_partition_id_partitioning_stores_into_that_partition(target: CaseContext) -> None:
    """A message sent to partition 1 of 3 is in partition 1 only; partition 7 is answered 3007.

    IGG-SEND-2: "with partition-id partitioning (kind 2, length 4, u32 id) the messages are
    stored in that partition; a partition id the topic does not have is answered with status
    3007 (PartitionNotFound) and nothing is stored."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "bypart", 3)
        send_messages(target, conn, sid, tid, to_partition(1), [message(target, b"p1")])
        for pid in range(3):
            got = all_of(target, conn, sid, tid, pid)
            want = [b"p1"] if pid == 1 else []
            require(
                payloads(got) == want,
                "IGG-SEND-2",
                f"partition {pid} holds {len(polled(got))} message(s) after a send to partition 1,"
                f" expected {len(want)}",
                got.at("messages count", asked=("partition_id",)),
            )
        body = {
            "stream": ident(sid),
            "topic": ident(tid),
            "partitioning": to_partition(7),
            "messages": [message(target, b"nowhere")],
        }
        expect_status(
            target,
            conn,
            "send_messages",
            body,
            3007,
            "IGG-SEND-2",
            "SEND_MESSAGES to partition 7 of 3",
        )


@case("iggy/send/3", "IGG-SEND-3")
def test_balanced_partitioning_is_round_robin(target: CaseContext) -> None:
    """Six balanced sends of one message each put two messages in each of three partitions.

    IGG-SEND-3: "with balanced partitioning (kind 1, length 0) successive sends to a topic go to
    its partitions in turn, one partition per send, cycling through all of them."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "balanced", 3)
        for i in range(6):
            send_messages(target, conn, sid, tid, balanced(), [message(target, f"b{i}".encode())])
        for pid in range(3):
            got = all_of(target, conn, sid, tid, pid)
            held = payloads(got)
            require(
                len(held) == 2,
                "IGG-SEND-3",
                f"partition {pid} holds {len(held)} of six balanced sends, expected 2",
                got.at("messages count", asked=("partition_id",)),
            )
            require(
                len(held) < 2 or int(held[1][1:]) - int(held[0][1:]) == 3,
                "IGG-SEND-3",
                f"partition {pid} holds sends {show(held[0])} and {show(held[1])}, not three apart",
                got.at(*msg_fields(got, "payload")),
            )


def keys_that_tell(partitions: int) -> list[bytes]:
    """Keys whose XXH32 and CRC32 placements differ (so a wrong hash shows), and one where
    they agree."""
    keys = [f"key-{i}".encode() for i in range(64)]
    differ = [
        k for k in keys if xxhash.xxh32_intdigest(k, 0) % partitions != zlib.crc32(k) % partitions
    ]
    same = [k for k in keys if k not in differ]
    return differ[:4] + same[:1]


@case("iggy/send/4", "IGG-SEND-4")
def test_a_messages_key_lands_in_xxh32_mod_partitions(target: CaseContext) -> None:
    """Each key's messages land in partition XXH32(key, seed 0) mod 3, every time.

    IGG-SEND-4: "with messages-key partitioning (kind 3, length 1..255, key bytes) the messages
    are stored in partition XXH32(key, seed 0) mod partitions_count, so one key always lands in
    the same partition."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "bykey", 3)
        keys = keys_that_tell(3)
        for round_ in range(2):
            for key in keys:
                msg = message(target, key + f"#{round_}".encode())
                send_messages(target, conn, sid, tid, by_key(key), [msg])
        placed = {pid: all_of(target, conn, sid, tid, pid) for pid in range(3)}
        for key in keys:
            want = xxhash.xxh32_intdigest(key, 0) % 3
            for pid, got in placed.items():
                mine = [p for p in payloads(got) if p.split(b"#")[0] == key]
                expected = 2 if pid == want else 0
                require(
                    len(mine) == expected,
                    "IGG-SEND-4",
                    f"partition {pid} holds {len(mine)} message(s) of key '{key.decode()}',"
                    f" expected {expected} (XXH32 mod 3 = {want})",
                    got.at(*msg_fields(got, "payload"), asked=("partition_id",)),
                )


@case("iggy/send/5", "IGG-SEND-5")
def test_offsets_are_consecutive_and_ids_are_kept_or_assigned(target: CaseContext) -> None:
    """Two sends number their messages 0..4; id 0 gets a non-zero id, id 77 stays 77.

    IGG-SEND-5: "stored messages get consecutive offsets in send order, starting at 0 in a new
    partition and otherwise right after the partition's last offset; a message sent with id 0 is
    given a non-zero id by the server, and a non-zero id is kept as sent."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "offsets")
        first = [message(target, b"a", mid=0), message(target, b"b", mid=77)]
        send_messages(target, conn, sid, tid, to_partition(0), first)
        send_messages(
            target,
            conn,
            sid,
            tid,
            to_partition(0),
            [message(target, p) for p in (b"c", b"d", b"e")],
        )
        got = all_of(target, conn, sid, tid, 0)
        require(
            offsets(got) == [0, 1, 2, 3, 4],
            "IGG-SEND-5",
            f"five messages sent in two batches have offsets {show_all(offsets(got))},"
            " expected 0..4",
            got.at(*msg_fields(got, "offset")),
        )
        ids = [int(m["id"]) for m in polled(got)]
        require(
            ids[0] != 0,
            "IGG-SEND-5",
            "a message sent with id 0 is stored with id 0, expected one the server assigns",
            got.at("messages[0].id"),
        )
        require(
            ids[1] == 77,
            "IGG-SEND-5",
            f"a message sent with id 77 is stored with id {ids[1]}",
            got.at("messages[1].id"),
        )


def raw_messages(payload: bytes) -> list[bytes]:
    """The bytes of each message of a classic POLL_MESSAGES reply payload."""
    (count,) = struct.unpack_from("<I", payload, 12)
    pos, out = 16, []
    for _ in range(count):
        hlen, plen = struct.unpack_from("<II", payload, pos + 48)
        end = pos + 64 + plen + hlen
        out.append(payload[pos:end])
        pos = end
    return out


@case("iggy/send/6", "IGG-SEND-6")
def test_the_checksum_is_xxh3_64_of_the_message_from_byte_8(target: CaseContext) -> None:
    """Each polled message's checksum is XXH3-64 of its bytes from offset 8 to its end.

    IGG-SEND-6: "the checksum of a polled message (its u64 at header offset 0) is XXH3-64,
    without seed, over the message's bytes from offset 8 to its end (the rest of the header, the
    payload and the user headers)."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "checksum")
        headers = bytes([2, 1, 0, 0, 0]) + b"k" + bytes([2, 1, 0, 0, 0]) + b"v"
        msgs = [message(target, b"sum-1"), message(target, b"sum-2", headers=headers)]
        send_messages(target, conn, sid, tid, to_partition(0), msgs)
        got = all_of(target, conn, sid, tid, 0)
        for i, raw in enumerate(raw_messages(got.payload)):
            want = xxhash.xxh3_64_intdigest(raw[8:])
            have = int(polled(got)[i]["checksum"])
            require(
                have == want,
                "IGG-SEND-6",
                f"message {i} has checksum {have}, expected XXH3-64 {want}",
                got.at(f"messages[{i}].checksum"),
            )


@case("iggy/send/7", "IGG-SEND-7")
def test_sending_to_an_unknown_stream_or_topic_is_refused(target: CaseContext) -> None:
    """SEND_MESSAGES to an unknown stream is answered 1009, to an unknown topic 2010.

    IGG-SEND-7: "SEND_MESSAGES to a stream that does not exist is answered with status 1009, and
    to a topic that does not exist with 2010; nothing is stored."
    """
    with target.connect() as conn:
        sid = stream(target, conn, "sendnowhere")
        for s, t, status, what in (
            (UNKNOWN, 0, 1009, f"stream {UNKNOWN}"),
            (sid, UNKNOWN, 2010, f"topic {UNKNOWN}"),
        ):
            body = {
                "stream": ident(s),
                "topic": ident(t),
                "partitioning": to_partition(0),
                "messages": [message(target, b"lost")],
            }
            expect_status(
                target,
                conn,
                "send_messages",
                body,
                status,
                "IGG-SEND-7",
                f"SEND_MESSAGES to {what}",
            )


@case("iggy/send/8", "IGG-SEND-8")
def test_send_messages_in_the_seed_layout_is_stored(target: CaseContext) -> None:
    """Messages of u128 id, u32 length and payload are answered 0 and polled back.

    IGG-SEND-8: "in doc, the SEND_MESSAGES payload is the stream Identifier, the topic
    Identifier, the Partitioning (u8 kind, u8 length, value), then messages back to back up to
    the end of the payload, each a u128 id, a u32 payload length and the payload, with no
    headers; they are stored and the request is answered with status 0 and an empty payload."
    """
    with target.connect() as conn:
        sid, tid = stream_topic(target, conn, "senddoc")
        msgs = [message(target, b"seed-1", mid=5), message(target, b"seed-2", mid=6)]
        send_messages(target, conn, sid, tid, to_partition(0), msgs, "IGG-SEND-8")
        got = all_of(target, conn, sid, tid, 0)
        require(
            payloads(got) == [b"seed-1", b"seed-2"],
            "IGG-SEND-8",
            "the partition holds payloads other than the two sent",
            got.at(*msg_fields(got, "payload")) if polled(got) else got.at("messages"),
        )
        _ = both
