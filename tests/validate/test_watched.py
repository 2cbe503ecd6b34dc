"""The watched deframer hands out the bytes a client really sent for each frame, however
the reads cut them, without keeping a second copy of a frame's payload."""

from __future__ import annotations

from conformance import protocols
from conformance.validate.watched import WatchedDeframer


def _watched(protocol: str) -> WatchedDeframer:
    framing = protocols.get(protocol).framing
    return WatchedDeframer(framing.deframer("request"), framing)


def _feed_in_pieces(w: WatchedDeframer, stream: bytes, piece: int) -> list[bytes]:
    out: list[bytes] = []
    for at in range(0, len(stream), piece):
        for payload in w.feed(stream[at : at + piece]):
            out.append(w.sent(payload))
    return out


def test_frames_cut_and_pipelined_any_way_come_back_as_sent() -> None:
    framing = protocols.get("kafka").framing
    frames = [framing.frame(bytes([i]) * (10 + 7 * i), "request") for i in range(6)]
    stream = b"".join(frames)
    for piece in (1, 3, 11, 64, len(stream)):
        assert _feed_in_pieces(_watched("kafka"), stream, piece) == frames, piece


def test_a_line_protocol_keeps_its_own_terminator() -> None:
    lines = [b"V1|1|PING|\n", b"V1|2|CONSUME|t 0 0 5\n", b"V1|3|PING|\n"]
    stream = b"".join(lines)
    for piece in (1, 4, len(stream)):
        assert _feed_in_pieces(_watched("v1line"), stream, piece) == lines, piece


def test_a_length_the_framing_would_not_write_is_shown_as_sent() -> None:
    # mini-Kafka's length counts its own 4 bytes; its deframer takes the frame as the
    # length says: what was sent is what the report must show
    w = _watched("minikafka")
    sent = (9).to_bytes(4, "big") + b"\x05" + b"abcd"
    (payload,) = w.feed(sent)
    assert w.sent(payload) == sent


def test_an_iggy_length_below_its_code_is_shown_as_sent() -> None:
    w = _watched("iggy")
    sent = (2).to_bytes(4, "little") + b"\x01\x00"  # claims 2 bytes: not even a whole code
    (payload,) = w.feed(sent + b"zz")
    assert w.sent(payload) == sent
