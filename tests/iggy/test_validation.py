"""``serve --protocol iggy --validate`` against raw clients: one that breaks a client
requirement per request and is reported with exactly those (and nothing else), one that
breaks none and gets none, and the ``doc`` revision's command table.

The clients speak classic framing written with ``struct`` in tests/support/iggy_validation.py,
not through the package's codec, so that the bytes are what each step says."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from tests.support import iggy_validation as wire
from tests.support.iggy_validation import RawIggy
from tests.support.validating import Validated, validating

pytestmark = [pytest.mark.timeout(120)]

CLIENT_CHECKED = ("IGG-CLI-1", "IGG-CLI-3", "IGG-CLI-4", "IGG-CLI-5", "IGG-CLI-6", "IGG-CLI-7")


def requirement(v: Validated, rid: str) -> dict[str, Any]:
    return v.case(f"iggy/client/{rid}")


def test_a_broken_client_is_reported_with_exactly_what_it_broke(tmp_path: Path) -> None:
    with validating("iggy", tmp_path) as v, RawIggy(v.address) as c:
        assert c.call(wire.PING) == (0, b"")
        assert c.call(wire.GET_STREAMS)[0] == 40  # IGG-CLI-7: before login
        assert c.call(wire.LOGIN_USER, wire.login_body())[0] == 0
        assert c.call(wire.CREATE_STREAM, wire.name("v"))[0] == 0
        assert c.call(wire.CREATE_TOPIC, wire.create_topic_body("v", "t", 2))[0] == 0
        assert c.call(999, b"abc")[0] == 3  # IGG-CLI-3: no such command
        assert c.call(wire.CREATE_STREAM, b"\x00")[0] == 4  # IGG-CLI-6: an empty name
        assert c.call(wire.GET_STREAM, b"\x01\x02\x07\x00")[0] == 4  # IGG-CLI-5: numeric, 2 bytes
        assert c.call(wire.POLL_MESSAGES, wire.poll_body("v", "t", 0, kind=9))[0] == 3  # CLI-10
        assert c.call(wire.POLL_MESSAGES, wire.poll_body("v", "t", 0, count=0))[0] == 0  # CLI-11
        assert c.call(wire.GET_STREAMS, b"zz")[0] == 0  # IGG-CLI-4: trailing bytes (accepted)
        one = [wire.message(b"hello")]
        assert c.call(wire.SEND_MESSAGES, wire.send_body("v", "t", 5, one))[0] == 3007  # CLI-12
        bad_headers = [wire.message(b"x", wire.header_entry(b"k", b"v", key_kind=0))]
        c.call(wire.SEND_MESSAGES, wire.send_body("v", "t", 0, bad_headers))  # IGG-CLI-9
        c.call(wire.SEND_MESSAGES, wire.send_body("v", "t", 0, []))  # IGG-CLI-8: no message
        for _ in range(4):  # IGG-CLI-13: the fourth identical request after three 1009s
            assert c.call(203, wire.ident("nope"))[0] == 1009
        assert c.call(0, length=2)[0] == 3  # IGG-CLI-1: a length below 4
        assert c.call(wire.PING) == (0, b""), "the broker went on after the short length"
        with RawIggy(v.address) as big:  # IGG-CLI-2: a control payload over 10 MiB
            assert big.call(wire.GET_STREAMS, bytes(10 * 1024 * 1024 + 1))[0] == 3
            assert big.call(wire.PING) == (0, b"")

    assert v.code == 1, v.stdout[-2000:]
    expected = {f"IGG-CLI-{n}" for n in range(1, 14)}
    assert v.broken() == expected, f"broken {sorted(v.broken())}, expected {sorted(expected)}"
    for rid in sorted(expected):
        case = requirement(v, rid)
        assert "broken once" in case["message"], f"{rid}: {case['message']}"
    reasons = {
        "IGG-CLI-1": "length 2 is below 4",
        "IGG-CLI-2": "10485761 bytes is over 10 MiB",
        "IGG-CLI-3": "command code 999",
        "IGG-CLI-4": "2 bytes after it",
        "IGG-CLI-5": "numeric, length not 4",
        "IGG-CLI-6": "the name is empty",
        "IGG-CLI-7": "GET_STREAMS sent before a LOGIN_USER of connection 1",
        "IGG-CLI-8": "carries no message",
        "IGG-CLI-9": "entry 0's key kind is 0",
        "IGG-CLI-10": "polling strategy kind 9",
        "IGG-CLI-11": "asks for 0 messages",
        "IGG-CLI-12": "partition 5 of topic v/t, which was described with 2 partitions",
        "IGG-CLI-13": "after 3 answers of status 1009 (STREAM_ID_NOT_FOUND)",
    }
    for rid, text in reasons.items():
        assert text in requirement(v, rid)["message"], requirement(v, rid)["message"]
    levels = {rid: requirement(v, rid)["verdict"] for rid in expected}
    assert {r for r, lv in levels.items() if lv == "WARN"} == {f"IGG-CLI-{n}" for n in (11, 12, 13)}
    assert v.case("iggy/client/connection/2")["verdict"] == "FAIL"  # only IGG-CLI-2 there
    assert "broke IGG-CLI-2:" in v.case("iggy/client/connection/2")["message"]


def test_a_well_behaved_client_breaks_nothing(tmp_path: Path) -> None:
    headers = wire.header_entry(b"trace", b"abc", key_kind=2, value_kind=2)
    with validating("iggy", tmp_path) as v, RawIggy(v.address) as c:
        assert c.call(wire.PING) == (0, b"")
        assert c.call(wire.LOGIN_USER, wire.login_body())[0] == 0
        assert c.call(wire.CREATE_STREAM, wire.name("w"))[0] == 0
        assert c.call(wire.CREATE_TOPIC, wire.create_topic_body("w", "t", 2))[0] == 0
        assert c.call(wire.GET_TOPIC, wire.ident("w") + wire.ident("t"))[0] == 0
        batch = [wire.message(b"one", headers, message_id=7), wire.message(b"two")]
        assert c.call(wire.SEND_MESSAGES, wire.send_body("w", "t", 1, batch))[0] == 0
        status, polled = c.call(wire.POLL_MESSAGES, wire.poll_body("w", "t", 1, count=10))
        assert status == 0 and struct.unpack_from("<I", polled, 12)[0] == 2
        where = b"\x01" + wire.ident(0) + wire.ident("w") + wire.ident("t") + b"\x01"
        where += struct.pack("<I", 1)
        assert c.call(wire.STORE_CONSUMER_OFFSET, where + struct.pack("<Q", 1))[0] == 0
        assert c.call(wire.GET_CONSUMER_OFFSET, where)[0] == 0
        assert c.call(wire.LOGOUT_USER) == (0, b"")
        assert c.call(wire.PING) == (0, b"")

    assert v.code == 0, v.stdout[-2000:]
    assert v.broken() == set()
    for rid in (*CLIENT_CHECKED, "IGG-CLI-8", "IGG-CLI-9", "IGG-CLI-10", "IGG-CLI-11"):
        assert requirement(v, rid)["verdict"] == "PASS", requirement(v, rid)["message"]
    assert requirement(v, "IGG-CLI-12")["verdict"] == "PASS", "partition 1 of 2 was checked"
    assert v.case("iggy/client/connection/1")["verdict"] == "PASS"
    assert v.faults() == []


def test_doc_clients_are_held_to_the_seed_command_table(tmp_path: Path) -> None:
    with validating("iggy", tmp_path, "--revision", "doc") as v, RawIggy(v.address) as c:
        assert c.call(wire.PING) == (0, b"")
        assert c.call(wire.LOGIN_USER, wire.login_body())[0] == 3  # not in the seed's table
        assert c.call(wire.GET_STREAMS)[0] == 0  # no login in doc: served

    assert v.broken() == {"IGG-CLI-3"}
    assert v.results["revision"] == "doc"
    ids = {c["case_id"] for c in v.results["cases"]}
    assert "iggy/client/IGG-CLI-7" not in ids, "the login rule is classic only"


def test_the_fault_list_names_the_errors_a_real_server_answers() -> None:
    from conformance.protocols.iggy.errors import NAMES
    from conformance.protocols.iggy.validation import IggyValidation

    for revision in ("classic", "doc"):
        validation = IggyValidation(revision)
        assert set(validation.errors) <= set(NAMES.values())
        assert set(validation.transport) == {"slow", "split", "reset"}
        login = struct.pack("<I", wire.LOGIN_USER) + wire.login_body()
        send = struct.pack("<I", wire.SEND_MESSAGES) + wire.send_body("s", "t", 0, [])
        assert validation.error_reply(send, "PARTITION_NOT_FOUND") == struct.pack("<I", 3007)
        assert validation.error_reply(send, "INVALID_OFFSET") is None, "only STORE carries it"
        if revision == "classic":
            assert validation.error_reply(login, "INVALID_CREDENTIALS") == struct.pack("<I", 42)
        else:
            assert "UNAUTHENTICATED" not in validation.errors, "doc has no login"
            assert validation.error_reply(login, "ERROR") is None, "38 is unknown in doc"
