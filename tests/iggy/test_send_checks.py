"""SEND_MESSAGES judged on its raw bytes as the 0.8 server reads it (send_checks.py), before
any lookup, through the broker too; and the three quirks that bend it (send-index-unchecked,
send-limits-3, send-identifier-3)."""

from __future__ import annotations

import struct

import pytest

from conformance.protocols.iggy import codec, send_checks
from conformance.protocols.iggy.quirks import Quirks
from tests.iggy.broker_client import S0, T0, Conn, consumer, frontend, logged, setup

STREAM, TOPIC = bytes([1, 4, 0, 0, 0, 0]), bytes([1, 4, 0, 0, 0, 0])
TO_0 = bytes([2, 4, 0, 0, 0, 0])  # partition id 0


def message(payload: bytes, headers: bytes = b"", offset: int = 0) -> bytes:
    head = struct.pack("<Q16sQQQIIQ", 0, bytes(16), offset, 0, 0, len(headers), len(payload), 0)
    return head + payload + headers


def payload(
    messages: list[bytes],
    *,
    index: list[tuple[int, int, int]] | None = None,
    count: int | None = None,
    meta: bytes | None = None,
    after: bytes = b"",
) -> bytes:
    n = len(messages) if count is None else count
    meta = STREAM + TOPIC + TO_0 + struct.pack("<I", n) if meta is None else meta
    if index is None:
        index, end = [], 0
        for m in messages:
            end += len(m)
            index.append((0, end, 0))
    table = b"".join(struct.pack("<IIQ", *e) for e in index)
    return struct.pack("<I", len(meta)) + meta + table + b"".join(messages) + after


def status(data: bytes) -> int | None:
    refused = send_checks.refusal(data)
    return None if refused is None else refused.status


ONE = message(b"abc")


@pytest.mark.parametrize(
    ("data", "want"),
    [
        (payload([ONE]), None),
        (payload([ONE, message(b"de")]), None),
        (payload([]), 4009),
        (payload([ONE], index=[(1, len(ONE), 0)]), 4031),
        (payload([ONE], index=[(0, len(ONE), 9)]), 4032),
        (payload([ONE], after=b"!"), 4036),
        (payload([message(b"x", b"h" * 100_001)]), 4017),
        (payload([message(b"x", b"h" * 100_000)]), None),  # the limit itself passes
        (payload([ONE, ONE], index=[(0, 10, 0), (0, 2 * len(ONE), 0)]), 4033),  # 10 < 64
        (payload([ONE], count=2), 4033),  # the second entry eats the message's first bytes
        (payload([message(b"a", offset=5), message(b"b")]), 4100),  # header offsets go back
        (payload([ONE, ONE], index=[(0, len(ONE), 0), (0, 0, 0)]), 10011),  # positions too
        (payload([ONE, ONE], index=[(0, len(ONE), 0), (0, 999, 0)]), None),  # last: unread
        (b"\x01\x00", 3),
        (struct.pack("<I", 99) + STREAM, 3),  # a metadata length past the payload
        (payload([ONE], meta=bytes([3, 4, 0, 0, 0, 0]) + TOPIC + TO_0 + b"\1\0\0\0"), 6),
        (payload([ONE], meta=bytes([1, 2, 0, 0]) + TOPIC + TO_0 + b"\1\0\0\0"), 6),
        (payload([ONE], meta=bytes([2, 0]) + TOPIC + TO_0 + b"\1\0\0\0"), 6),
        (payload([ONE], meta=STREAM + bytes([1, 4, 0])), 6),  # the topic's value cut short
        (payload([ONE], meta=STREAM), 6),  # no topic at all
        (payload([ONE], meta=STREAM + TOPIC + bytes([4, 0]) + b"\1\0\0\0"), 3),  # kind 4
        (payload([ONE], meta=STREAM + TOPIC + bytes([1, 1, 0]) + b"\1\0\0\0"), 3),
        (payload([ONE], meta=STREAM + TOPIC + bytes([2, 3, 0, 0, 0])), 3),  # partition len 3
        (payload([ONE], meta=STREAM + TOPIC + TO_0 + b"\1\0"), 3),  # count cut short
        (payload([ONE], count=100), 3),  # 100 index entries do not fit
    ],
)
def test_each_check_answers_the_servers_status(data: bytes, want: int | None) -> None:
    assert status(data) == want


def test_the_checks_go_message_by_message_each_index_entry_before_its_message() -> None:
    big = message(b"y", b"h" * 100_001)
    second_stamped = [(0, len(ONE), 0), (0, len(ONE) + len(big), 4)]
    assert status(payload([ONE, big], index=second_stamped)) == 4032
    first_big = [(0, len(big), 0), (0, len(big) + len(ONE), 4)]
    assert status(payload([big, ONE], index=first_big)) == 4017


def test_a_payload_over_64_mb_is_4022_without_a_copy() -> None:
    big = message(bytes(send_checks.MAX_PAYLOAD + 1))
    assert status(payload([big])) == 4022
    assert status(payload([message(bytes(send_checks.MAX_PAYLOAD))])) is None


def test_the_decoded_index_is_the_message_ends() -> None:
    data = payload([ONE, message(b"de")], index=[(0, len(ONE), 0), (0, 999, 0)])
    body = codec.decode_request_payload("send_messages", send_checks.as_decoded(data))
    assert [m["payload"] for m in body["messages"]] == [b"abc", b"de"]
    assert send_checks.as_decoded(b"\x01") == b"\x01"


def test_without_the_index_checks_the_fields_and_the_extra_bytes_pass() -> None:
    for data in (
        payload([ONE], index=[(1, len(ONE), 0)]),
        payload([ONE], index=[(0, len(ONE), 9)]),
        payload([ONE], after=b"!"),
    ):
        assert send_checks.refusal(data, check_index=False) is None
    assert send_checks.refusal(payload([]), check_index=False) is not None


# ------------------------------------------------------------------ through the broker


def raw_send(c: Conn, data: bytes) -> int:
    [(code, _)] = c.raw(codec.frame_request(101, data))
    return code


def polled(c: Conn) -> list[bytes]:
    body = {
        "consumer": consumer(1),
        "stream": S0,
        "topic": T0,
        "partition_flag": 1,
        "partition_id": 0,
        "strategy": {"kind": 3, "value": 0},
        "count": 100,
        "auto_commit": False,
    }
    return [m["payload"] for m in c.ok("poll_messages", body)["messages"]]


def test_the_batch_is_judged_before_the_stream_and_the_topic() -> None:
    c = logged(frontend())
    unknown = bytes([1, 4, 9, 0, 0, 0])
    assert raw_send(c, payload([], meta=unknown + TOPIC + TO_0 + b"\0\0\0\0")) == 4009
    entries = [(1, len(ONE), 0)]
    assert (
        raw_send(c, payload([ONE], index=entries, meta=unknown + TOPIC + TO_0 + b"\1\0\0\0"))
        == 4031
    )
    assert raw_send(c, payload([ONE], meta=unknown + TOPIC + TO_0 + b"\1\0\0\0")) == 1009


def test_a_refused_batch_stores_nothing_and_the_connection_goes_on() -> None:
    c = logged(frontend())
    setup(c, 1)
    for data in (payload([ONE], index=[(0, len(ONE), 9)]), payload([ONE], after=b"!")):
        assert raw_send(c, data) in (4032, 4036)
    assert raw_send(c, payload([ONE], index=[(0, len(ONE), 0)])) == 0
    assert polled(c) == [b"abc"]


def test_a_last_index_position_the_server_never_reads_is_accepted() -> None:
    c = logged(frontend())
    setup(c, 1)
    assert raw_send(c, payload([ONE, message(b"de")], index=[(0, len(ONE), 0), (0, 7777, 0)])) == 0
    assert polled(c) == [b"abc", b"de"]


def test_a_bad_identifier_is_6_and_the_connection_keeps_serving() -> None:
    c = logged(frontend())
    meta = bytes([2, 0]) + TOPIC + bytes([1, 0]) + b"\1\0\0\0"
    replies = c.raw(
        codec.frame_request(101, struct.pack("<I", len(meta)) + meta) + codec.frame_request(1, b"")
    )
    assert replies == [(6, b""), (0, b"")]


def test_doc_keeps_its_own_layout_and_answers_4009_for_no_message() -> None:
    c = logged(frontend("doc"))
    body = {"stream": S0, "topic": T0, "partitioning": {"kind": 1, "value": {}}, "messages": []}
    assert c.call("send_messages", body)[0] == 4009


# ------------------------------------------------------------------ quirks


def test_quirk_send_index_unchecked_stores_what_the_checks_refuse() -> None:
    c = logged(frontend("classic", "send-index-unchecked"))
    setup(c, 1)
    assert raw_send(c, payload([ONE], index=[(1, len(ONE), 9)])) == 0
    assert raw_send(c, payload([message(b"de")], after=b"!!")) == 0
    assert polled(c) == [b"abc", b"de"]
    assert raw_send(c, payload([])) == 4009


def test_quirk_send_limits_3_answers_3_for_the_limits() -> None:
    c = logged(frontend("classic", "send-limits-3"))
    setup(c, 1)
    assert raw_send(c, payload([message(b"x", b"h" * 100_001)])) == 3
    assert Quirks.of(["send-limits-3"]).send_status(4022) == 3
    assert Quirks.of(["send-limits-3"]).send_status(4009) == 4009
    assert raw_send(c, payload([], meta=bytes([3, 4, 0, 0, 0, 0]) + TOPIC)) == 6


def test_quirk_send_identifier_3_answers_3_for_a_bad_identifier() -> None:
    c = logged(frontend("classic", "send-identifier-3"))
    assert raw_send(c, payload([], meta=bytes([3, 4, 0, 0, 0, 0]) + TOPIC)) == 3
    assert raw_send(c, payload([], meta=STREAM + TOPIC + TO_0 + b"\0\0\0\0")) == 4009
