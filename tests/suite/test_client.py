"""The client's deadlines and wire log, against tiny loopback servers."""

from __future__ import annotations

import time

import pytest

from conformance.client import ConnectFailed, Connection, PeerClosed, ReplyTimeout, WireLog, probe
from conformance.protocols.cursus import codec
from tests.support import net


def test_a_silent_peer_costs_one_deadline_and_is_logged() -> None:
    log = WireLog()
    with net.silent_server() as (host, port):
        conn = Connection(host, port, deframer=codec.new_deframer(), log=log, timeout=0.3)
        conn.send(codec.frame(b"LIST"))
        start = time.monotonic()
        with pytest.raises(ReplyTimeout):
            conn.recv_frame()
        assert 0.25 < time.monotonic() - start < 2
        conn.close()
    dirs = [e.dir for e in log.entries]
    assert dirs[:2] == ["event", "send"] and "deadline passed" in log.entries[2].summary
    assert log.entries[1].hex == "000000044c495354"


def test_probe_reports_silence_and_refusal() -> None:
    with net.silent_server() as (host, port):
        assert "no reply" in (
            probe(host, port, codec.PROBE_REQUEST, codec.new_deframer(), 0.2) or ""
        )
    port = net.closed_port()
    why = probe("127.0.0.1", port, codec.PROBE_REQUEST, codec.new_deframer(), 0.2)
    assert why is not None and "cannot connect" in why


def test_a_lenient_probe_counts_any_answer_as_the_target_being_there() -> None:
    """Is a target that answered before still there (before a close becomes a FAIL)? Bytes
    that do not frame are the target talking: there for the lenient probe, not a working
    target for the first one."""
    with net.babbling_server(b"\xff\xff\xff\xffnot a frame") as (host, port):
        strict = probe(host, port, codec.PROBE_REQUEST, codec.new_deframer(), 1.0)
        lenient = probe(host, port, codec.PROBE_REQUEST, codec.new_deframer(), 1.0, lenient=True)
    assert strict is not None and lenient is None
    with net.silent_server() as (host, port):
        assert probe(host, port, codec.PROBE_REQUEST, codec.new_deframer(), 0.2, lenient=True)


def test_connect_to_a_closed_port_fails_clearly() -> None:
    port = net.closed_port()
    with pytest.raises(ConnectFailed, match=f"127.0.0.1:{port}"):
        Connection("127.0.0.1", port, deframer=codec.new_deframer(), log=WireLog(), timeout=1)


def test_frames_from_a_real_broker_and_a_close_are_seen() -> None:
    from tests.support import broker

    with broker.running() as b:
        log = WireLog(describe=codec.describe)
        conn = Connection(b.host, b.port, deframer=codec.new_deframer(), log=log, timeout=5)
        conn.send(codec.frame(b"LIST") * 2)
        assert conn.recv_frame() == conn.recv_frame() == b"[]"
        conn.send((64 * 1024 * 1024 + 1).to_bytes(4, "big"))
        assert conn.wait_closed(5)
        with pytest.raises(PeerClosed):
            conn.recv_frame()
        conn.close()
    assert any(e.summary == "'[]'" for e in log.entries)


def test_a_request_pipelined_before_a_lying_prefix_is_still_answered() -> None:
    from tests.support import broker

    with broker.running() as b:
        conn = Connection(b.host, b.port, deframer=codec.new_deframer(), log=WireLog(), timeout=5)
        conn.send(codec.frame(b"LIST") + (64 * 1024 * 1024 + 1).to_bytes(4, "big"))
        assert conn.recv_frame() == b"[]"
        assert conn.recv_frame().startswith(b"ERROR: FRAME_TOO_LARGE")
        assert conn.wait_closed(5)
        conn.close()
