"""Iggy's codec (conformance.protocols.iggy) against the bytes the real client sent.

Oracle: every frame in ``tests/iggy/captured`` (the real ``apache-iggy==0.8.0`` client's)
decodes to its recorded command and re-encodes to the same bytes, fed whole, one byte at a
time and followed by other bytes; every reply declaration round-trips, agrees with the
hand-checked bytes below and with the replies the loopback recorder
(``tests/support/iggy_capture.py``, which the real client accepted) gives to the captured
requests; any input cut short decodes to a value or raises IggyError, nothing else.
"""

from __future__ import annotations

import contextlib
import struct
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.errors import FrameTooLarge
from conformance.protocols.iggy import codec
from conformance.protocols.iggy.batch import USER_HEADERS
from conformance.protocols.iggy.errors import IggyError, IggyFrameTooLarge, UnknownCommand
from conformance.protocols.iggy.messages import CODES, REQUESTS
from conformance.protocols.iggy.replies import OPTIONAL_REPLIES, REPLIES
from conformance.wire.schema_strategies import values
from tests.support import iggy_capture as rec

CAPTURED = sorted((Path(__file__).parent / "captured").glob("*.yaml"))
FRAMES = [yaml.safe_load(p.read_text()) for p in CAPTURED]
IDS = [p.stem for p in CAPTURED]
FEW = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_every_command_the_binding_sends_is_captured_or_declared() -> None:
    assert len(FRAMES) == 47
    assert {d["command"] for d in FRAMES} <= set(REQUESTS)
    assert set(REQUESTS) == set(REPLIES)
    assert all(CODES[name] for name in REQUESTS)


# ------------------------------------------------------------ captured requests


@pytest.mark.parametrize("doc", FRAMES, ids=IDS)
def test_a_captured_frame_decodes_and_reencodes_to_its_bytes(doc: dict[str, Any]) -> None:
    raw = bytes.fromhex(doc["hex"])
    [frame] = codec.new_deframer().feed(raw)
    code, _ = codec.split_request(frame)
    name, body = codec.decode_request(frame)
    assert (name, code) == (doc["command"], doc["code"]) and CODES[name] == code
    assert codec.frame_request(code, codec.encode_request(name, body)) == raw


@pytest.mark.parametrize("doc", FRAMES, ids=IDS)
def test_a_captured_frame_byte_at_a_time_and_with_trailing_bytes(doc: dict[str, Any]) -> None:
    raw = bytes.fromhex(doc["hex"])
    deframer = codec.new_deframer()
    got = [frame for byte in raw for frame in deframer.feed(bytes([byte]))]
    assert got == [raw[4:]] and deframer.buffered == 0
    deframer = codec.new_deframer()
    assert deframer.feed(raw + raw[:5]) == [raw[4:]]
    # the next frame's length is read (the shared deframer keeps only its payload bytes)
    assert deframer.pending_frame_length == len(raw) - 4 and deframer.buffered == 1
    assert deframer.feed(raw[5:]) == [raw[4:]]
    with pytest.raises(IggyError, match="bytes after"):  # stricter than the server
        codec.decode_request(raw[4:] + b"\x00")
    # lenient, as the server: bytes after the payload are ignored
    for tail in (b"\x00", b"\xff" * 7):
        lenient = codec.decode_request(raw[4:] + tail, strict=False)
        assert lenient == codec.decode_request(raw[4:])


@pytest.mark.parametrize("doc", FRAMES, ids=IDS)
def test_a_captured_frame_cut_anywhere_is_an_iggy_error(doc: dict[str, Any]) -> None:
    frame = bytes.fromhex(doc["hex"])[4:]
    for end in range(len(frame)):
        with pytest.raises(IggyError):
            codec.decode_request(frame[:end])


def test_what_the_captured_frames_say() -> None:
    by_name = {d["command"]: codec.decode_request(bytes.fromhex(d["hex"])[4:])[1] for d in FRAMES}
    assert by_name["login_user"]["version"] == "0.10.0"
    send = by_name["send_messages"]
    assert send["partitioning"] == {"kind": 2, "value": 2}
    assert [m["payload"] for m in send["messages"]] == [b"p2-m0", b"p2-m1", b"p2-m2"]
    assert all(m["id"] == 0 and m["headers"] == b"" for m in send["messages"])
    store = by_name["store_consumer_offset"]
    assert store["consumer"] == {"kind": 2, "value": {"kind": 2, "value": "capture-group"}}
    assert (store["partition_flag"], store["partition_id"], store["offset"]) == (1, 1, 0)


# ------------------------------------------------------------ framing


def test_framing_limits_and_errors() -> None:
    with pytest.raises(FrameTooLarge):
        codec.new_deframer(max_frame=10).feed(struct.pack("<I", 11))
    with pytest.raises(IggyError, match="no u32 code"):
        codec.decode_request(b"\x01\x00")
    with pytest.raises(UnknownCommand):
        codec.decode_request(struct.pack("<I", 9999))
    with pytest.raises(IggyFrameTooLarge):
        codec.decode_request(struct.pack("<I", 1) + bytes(codec.MAX_CONTROL_PAYLOAD + 1))


def test_a_reply_frame_status_first_whole_and_byte_at_a_time() -> None:
    raw = codec.frame_reply(0, b"\x07\x00\x00\x00") + codec.frame_reply(42)
    assert raw.hex() == "0000000004000000070000002a00000000000000"
    deframer = codec.new_deframer("reply")
    got = [fr for b in raw for fr in deframer.feed(bytes([b]))]
    assert [codec.split_reply(fr) for fr in got] == [(0, b"\x07\0\0\0"), (42, b"")]
    framing = codec.IggyFraming()
    assert framing.frame(got[0], "reply") == raw[:12]
    assert framing.frame(b"\x01\0\0\0", "request") == bytes.fromhex("04000000 01000000")


# ------------------------------------------------------------ replies, hand-checked

NAME_C = bytes([11]) + b"conformance"
TOPIC_BYTES = (
    "00000000"  # id 0
    "00401e18240a0600"  # created_at 1_700_000_000_000_000 µs
    "01000000"  # partitions_count 1
    "0000000000000000"  # message_expiry 0
    "01"  # compression 1 (none)
    "0000000000000000"  # max_topic_size 0
    "01"  # replication_factor 1
    "0000000000000000"  # size_bytes 0
    "0000000000000000"  # messages_count 0
    "066f7264657273"  # name "orders"
)
PARTITION_BYTES = "0000000000401e18240a060001000000" + "00" * 24
CREATED = 1_700_000_000_000_000
TOPIC = {
    "id": 0,
    "created_at": CREATED,
    "partitions_count": 1,
    "message_expiry": 0,
    "compression": 1,
    "max_topic_size": 0,
    "replication_factor": 1,
    "size_bytes": 0,
    "messages_count": 0,
    "name": "orders",
}
PARTITION = {
    "id": 0,
    "created_at": CREATED,
    "segments_count": 1,
    "current_offset": 0,
    "size_bytes": 0,
    "messages_count": 0,
}
STREAM = {
    "id": 0,
    "created_at": CREATED,
    "topics_count": 1,
    "size_bytes": 0,
    "messages_count": 0,
    "name": "conformance",
    "topics": [TOPIC],
}
GROUP = {
    "id": 0,
    "partitions_count": 1,
    "members_count": 1,
    "name": "g",
    "members": [{"id": 1, "partitions": [0]}],
}
POLLED_MESSAGE = {
    "checksum": 0,
    "id": 0,
    "offset": 0,
    "timestamp": rec.BASE_TS,
    "origin_timestamp": 5,
    "reserved": 0,
    "payload": b"p0-m0",
    "headers": b"",
}


CLIENT = {
    "client_id": 7,
    "user_id": 0,
    "transport": 1,
    "address": "127.0.0.1:50000",
    "consumer_groups_count": 1,
}
CLIENT_BYTES = (
    "07000000"  # client_id 7
    "00000000"  # user_id 0
    "01"  # transport 1 (tcp)
    "0f000000" + b"127.0.0.1:50000".hex() + "01000000"  # u32 len + address; 1 group
)
CLIENT_DETAILS = {
    **CLIENT,
    "consumer_groups": [{"stream_id": 0, "topic_id": 0, "group_id": 2}],
}
CLIENT_DETAILS_BYTES = bytes.fromhex(CLIENT_BYTES + "00000000 00000000 02000000")
STATS = {
    "process_id": 42,
    "cpu_usage": 0.5,
    "total_cpu_usage": 1.5,
    "memory_usage": 1,
    "total_memory": 2,
    "available_memory": 3,
    "run_time": 4,
    "start_time": 5,
    "read_bytes": 6,
    "written_bytes": 7,
    "messages_size_bytes": 8,
    "streams_count": 1,
    "topics_count": 2,
    "partitions_count": 3,
    "segments_count": 4,
    "messages_count": 9,
    "clients_count": 1,
    "consumer_groups_count": 0,
    "hostname": "h",
    "os_name": "Linux",
    "os_version": "",
    "kernel_version": "6",
    "iggy_server_version": "0.8.0",
    "iggy_server_semver": 0,
    "caches": [
        {
            "stream_id": 0,
            "topic_id": 1,
            "partition_id": 2,
            "hits": 3,
            "misses": 4,
            "hit_ratio": 0.75,
        }
    ],
    "threads_count": 8,
    "free_disk_space": 10,
    "total_disk_space": 20,
}
STATS_BYTES = bytes.fromhex(
    "2a000000"  # process_id 42
    "0000003f"  # cpu_usage f32 0.5
    "0000c03f"  # total_cpu_usage f32 1.5
    "0100000000000000 0200000000000000 0300000000000000"  # memory, total, available
    "0400000000000000 0500000000000000"  # run_time, start_time
    "0600000000000000 0700000000000000 0800000000000000"  # read, written, messages size
    "01000000 02000000 03000000 04000000"  # streams, topics, partitions, segments
    "0900000000000000"  # messages_count
    "01000000 00000000"  # clients, consumer groups
    "01000000 68"  # hostname "h"
    "05000000 4c696e7578"  # os_name "Linux"
    "00000000"  # os_version ""
    "01000000 36"  # kernel_version "6"
    "05000000 302e382e30"  # iggy_server_version "0.8.0"
    "00000000"  # semver 0: none
    "01000000"  # 1 cache
    "00000000 01000000 02000000 0300000000000000 0400000000000000 0000403f"  # ratio 0.75
    "08000000 0a00000000000000 1400000000000000"  # threads 8, free 10, total 20
)


def _recorder_topic() -> rec.Topic:
    return rec.Topic(0, "orders", [[]])


def _recorder_stream() -> rec.Stream:
    return rec.Stream(0, "conformance", [_recorder_topic()])


def _recorder_group() -> bytes:
    topic = _recorder_topic()
    return rec.Model()._group_details(topic, rec.Group(0, "g", [1]))


def _recorder_poll() -> bytes:
    model = rec.Model()
    model.streams.append(_recorder_stream())
    part = model.streams[0].topics[0].partitions[0]
    part.append(rec.Message(0, 0, rec.BASE_TS, 5, b"p0-m0", b""))
    request = codec.encode_request(
        "poll_messages",
        {
            "consumer": {"kind": 1, "value": {"kind": 1, "value": 0}},
            "stream": {"kind": 1, "value": 0},
            "topic": {"kind": 1, "value": 0},
            "partition_flag": 1,
            "strategy": {"kind": 1, "value": 0},
            "count": 10,
        },
    )
    status, body = model.answer(CODES["poll_messages"], request, 1)
    assert status == 0
    return body


# (command, reply value, hand-checked bytes, the recorder's bytes for it or None)
HAND: list[tuple[str, Any, bytes, bytes | None]] = [
    ("ping", {}, b"", b""),
    ("login_user", {"user_id": 0}, bytes(4), struct.pack("<I", 0)),
    (
        "get_cluster_metadata",
        {
            "name": "iggy-capture",
            "nodes": [
                {
                    "name": "recorder",
                    "ip": "127.0.0.1",
                    "tcp_port": 8090,
                    "quic_port": 0,
                    "http_port": 0,
                    "websocket_port": 0,
                    "role": 0,
                    "status": 0,
                }
            ],
        },
        bytes.fromhex("0c000000")
        + b"iggy-capture"
        + bytes.fromhex("01000000")
        + bytes.fromhex("08000000")
        + b"recorder"
        + bytes.fromhex("09000000")
        + b"127.0.0.1"
        + bytes.fromhex("9a1f 0000 0000 0000 00 00"),  # ports 8090, 0, 0, 0; role, status
        rec.Model(8090)._get_cluster_metadata(rec.Reader(b""), 1)[1],
    ),
    (
        "create_stream",
        {**STREAM, "topics_count": 0, "topics": []},
        bytes.fromhex("00000000 00401e18240a0600 00000000" + "00" * 16) + NAME_C,
        rec.Stream(0, "conformance").details(),
    ),
    (
        "get_stream",
        STREAM,
        bytes.fromhex("00000000 00401e18240a0600 01000000" + "00" * 16)
        + NAME_C
        + bytes.fromhex(TOPIC_BYTES),
        _recorder_stream().details(),
    ),
    (
        "get_topic",
        {**TOPIC, "partitions": [PARTITION]},
        bytes.fromhex(TOPIC_BYTES + PARTITION_BYTES),
        _recorder_topic().details(),
    ),
    (
        "create_topic",
        {**TOPIC, "partitions": [PARTITION]},
        bytes.fromhex(TOPIC_BYTES + PARTITION_BYTES),
        _recorder_topic().details(),
    ),
    ("send_messages", {}, b"", b""),
    (
        "poll_messages",
        {"partition_id": 0, "current_offset": 0, "messages": [POLLED_MESSAGE]},
        bytes.fromhex("00000000 0000000000000000 01000000")  # partition 0, offset 0, 1 message
        + bytes(8 + 16 + 8)  # checksum 0, id 0, offset 0
        + struct.pack("<QQ", rec.BASE_TS, 5)  # timestamp, origin_timestamp
        + bytes.fromhex("00000000 05000000 0000000000000000")  # headers 0, payload 5, reserved
        + b"p0-m0",
        _recorder_poll(),
    ),
    (
        "get_consumer_offset",
        {"partition_id": 1, "current_offset": 2, "stored_offset": 1},
        bytes.fromhex("01000000 0200000000000000 0100000000000000"),
        struct.pack("<IQQ", 1, 2, 1),
    ),
    ("store_consumer_offset", {}, b"", b""),
    ("delete_consumer_offset", {}, b"", b""),
    (
        "get_consumer_group",
        GROUP,
        bytes.fromhex("00000000 01000000 01000000 0167 01000000 01000000 00000000"),
        _recorder_group(),
    ),
    (
        "create_consumer_group",
        GROUP,
        bytes.fromhex("00000000 01000000 01000000 0167 01000000 01000000 00000000"),
        _recorder_group(),
    ),
    ("join_consumer_group", {}, b"", b""),
    ("leave_consumer_group", {}, b"", b""),
    # declared after the recorder was written: hand-checked bytes only (FACTS.md section 3)
    ("get_stats", STATS, STATS_BYTES, None),
    ("get_me", CLIENT_DETAILS, CLIENT_DETAILS_BYTES, None),
    ("get_client", CLIENT_DETAILS, CLIENT_DETAILS_BYTES, None),
    (
        "get_clients",
        {"clients": [CLIENT, {**CLIENT, "client_id": 8, "consumer_groups_count": 0}]},
        bytes.fromhex(CLIENT_BYTES)  # a Client record, no group triples (no count)
        + bytes.fromhex("08000000 00000000 01 0f000000")  # client 8, user 0, tcp, address
        + b"127.0.0.1:50000"
        + bytes.fromhex("00000000"),
        None,
    ),
    ("logout_user", {}, b"", None),
    (
        "get_streams",
        {"streams": [{k: v for k, v in STREAM.items() if k != "topics"}]},
        bytes.fromhex("00000000 00401e18240a0600 01000000" + "00" * 16) + NAME_C,
        None,
    ),
    ("get_streams", {"streams": []}, b"", None),
    ("delete_stream", {}, b"", None),
    (
        "get_topics",
        {"topics": [TOPIC, {**TOPIC, "id": 1, "name": "o"}]},
        bytes.fromhex(TOPIC_BYTES)
        + bytes.fromhex(
            "01000000 00401e18240a0600 01000000 0000000000000000 01"  # id 1 ... compression
            "0000000000000000 01 0000000000000000 0000000000000000 016f"  # ... name "o"
        ),
        None,
    ),
    ("delete_topic", {}, b"", None),
    ("create_partitions", {}, b"", None),
    ("delete_partitions", {}, b"", None),
    (
        "get_consumer_groups",
        {"groups": [{k: v for k, v in GROUP.items() if k != "members"}]},
        bytes.fromhex("00000000 01000000 01000000 0167"),  # id 0, 1 partition, 1 member, "g"
        None,
    ),
    ("delete_consumer_group", {}, b"", None),
]


def test_every_reply_has_a_hand_checked_vector() -> None:
    assert {name for name, *_ in HAND} == set(REPLIES)


@pytest.mark.parametrize(("name", "value", "wire", "recorded"), HAND, ids=[h[0] for h in HAND])
def test_a_reply_both_ways_and_as_the_recorder_writes_it(
    name: str, value: Any, wire: bytes, recorded: bytes | None
) -> None:
    assert recorded is None or wire == recorded
    assert codec.encode_reply(name, value) == wire
    assert codec.decode_reply(name, wire) == value
    for end in range(len(wire)):  # cut short: a value (a shorter list) or an IggyError
        with contextlib.suppress(IggyError):
            codec.decode_reply(name, wire[:end])


@pytest.mark.parametrize("name", sorted(OPTIONAL_REPLIES))
def test_a_thing_not_found_is_an_empty_reply(name: str) -> None:
    assert codec.encode_reply(name, None) == b""
    assert codec.decode_reply(name, b"") is None


def test_the_recorder_replies_to_the_captured_session_round_trip() -> None:
    """Each reply the recorder gives to the captured requests (which the real client
    accepted) decodes and re-encodes to its bytes."""
    model, seen = rec.Model(), set()
    for doc in FRAMES:
        frame = bytes.fromhex(doc["hex"])[4:]
        code, payload = codec.split_request(frame)
        status, body = model.answer(code, payload, doc["connection"])
        if status:
            continue
        name = doc["command"]
        assert codec.encode_reply(name, codec.decode_reply(name, body)) == body, name
        seen.add(name)
    assert seen == {d["command"] for d in FRAMES}


# ------------------------------------------------------------ properties


def _request_values(name: str) -> st.SearchStrategy[dict[str, Any]]:
    return values(REQUESTS[name], 0)  # SEND_MESSAGES' messages too: declared whole


@pytest.mark.parametrize("name", sorted(REQUESTS))
@FEW
@given(data=st.data())
def test_a_drawn_request_round_trips_and_its_cuts_fail(name: str, data: st.DataObject) -> None:
    value = data.draw(_request_values(name))
    payload = codec.encode_request(name, value)
    frame = codec.frame_request(CODES[name], payload)
    [got] = codec.new_deframer().feed(frame)
    assert codec.decode_request(got) == (name, value)
    for end in range(4, len(got)):
        with pytest.raises(IggyError):
            codec.decode_request(got[:end])


@pytest.mark.parametrize("name", sorted(REPLIES))
@FEW
@given(data=st.data())
def test_a_drawn_reply_round_trips(name: str, data: st.DataObject) -> None:
    value = data.draw(values(REPLIES[name], 0))
    payload = codec.encode_reply(name, value)
    if name in OPTIONAL_REPLIES and not payload:
        return
    assert codec.decode_reply(name, payload) == value
    for end in range(len(payload)):
        with contextlib.suppress(IggyError):
            codec.decode_reply(name, payload[:end])


@FEW
@given(data=st.binary(max_size=64), name=st.sampled_from(sorted(REPLIES)))
def test_any_bytes_decode_or_raise_iggy_error(data: bytes, name: str) -> None:
    for decode in (lambda: codec.decode_reply(name, data), lambda: codec.decode_request(data)):
        with contextlib.suppress(IggyError):
            decode()


def test_user_headers_are_declared() -> None:
    block = bytes.fromhex("02 01000000 6b 09 04000000 07000000")  # string "k" -> uint32 7
    entry = {"key_kind": 2, "key": b"k", "value_kind": 9, "value": b"\x07\0\0\0"}
    assert USER_HEADERS.decode(block, 0) == {"entries": [entry]}
    assert USER_HEADERS.encode({"entries": [entry]}, 0) == block
