"""Iggy's fuzzing part: its pool decodes and covers every command, its mutators lie where
they say, its login modes, its canary, and campaigns against the reference broker: clean
ones find nothing, each fault quirk is found, minimized and replayed."""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance import fuzz
from conformance.fuzz import campaign, harness
from conformance.fuzz.case import FuzzCase, Pool
from conformance.fuzz.mutators import generate
from conformance.fuzz.target import External
from conformance.protocols.iggy import codec
from conformance.protocols.iggy.batch import USER_HEADERS
from conformance.protocols.iggy.errors import IggyError
from conformance.protocols.iggy.fuzz_mutators import SENTINEL
from conformance.protocols.iggy.fuzz_pool import CANARY, FUZZ, GROUP, IDS, pool
from conformance.protocols.iggy.fuzzing import IggyFuzzing
from conformance.protocols.iggy.messages import CODES
from tests.support import broker, fuzz_runs

REVISIONS = ("classic", "doc")
TRIES = 300
U32 = struct.Struct("<I")


def decodes(payload: bytes, revision: str) -> tuple[str, dict[str, Any]] | None:
    try:
        return codec.decode_request(payload, revision)
    except IggyError:
        return None


# ------------------------------------------------------------------ the pool


@pytest.mark.parametrize("revision", REVISIONS)
def test_every_pool_payload_decodes_and_every_command_is_there(revision: str) -> None:
    part = IggyFuzzing({}, revision)
    pool = part.pool(0)
    names = set()
    for payload, (name, body) in zip(pool.payloads, pool.requests, strict=True):
        got = decodes(payload, revision)
        assert got is not None, (name, body)
        assert got[0] == name
        names.add(name)
    assert names == set(codec.tables(revision)[0])


@pytest.mark.parametrize("revision", REVISIONS)
def test_the_pool_sends_every_partitioning_and_polls_every_strategy(revision: str) -> None:
    bodies = [codec.decode_request(p, revision) for p in IggyFuzzing({}, revision).pool(3).payloads]
    sends = [b for n, b in bodies if n == "send_messages"]
    assert {b["partitioning"]["kind"] for b in sends} == {1, 2, 3}
    polls = [b for n, b in bodies if n == "poll_messages"]
    assert {b["strategy"]["kind"] for b in polls} == {1, 2, 3, 4, 5}
    assert {b["consumer"]["kind"] for b in polls} == {1, 2}
    kinds = {b["stream"]["kind"] for n, b in bodies if "stream" in b}
    assert kinds == {1, 2}  # numeric and string identifiers


def test_classic_sends_user_headers_of_every_kind() -> None:
    bodies = [codec.decode_request(p) for p in IggyFuzzing({}).pool(0).payloads]
    blocks = [m["headers"] for n, b in bodies if n == "send_messages" for m in b["messages"]]
    entries = [e for h in blocks if h for e in USER_HEADERS.decode(h, 0)["entries"]]
    assert {e["value_kind"] for e in entries} == set(range(1, 16))
    assert any(not h for h in blocks)  # and messages without headers


@pytest.mark.parametrize("revision", REVISIONS)
def test_the_pool_is_drawn_per_seed_and_aimed_mostly_at_the_fuzz_set_up(revision: str) -> None:
    one, again, other = pool.__wrapped__(revision, 5), pool(revision, 5), pool(revision, 6)
    assert one.payloads == again.payloads  # a pure function of the seed
    assert one.payloads != other.payloads  # drawn: another seed, other values
    first = IDS[revision][0]
    ours = ({"kind": 1, "value": first}, {"kind": 2, "value": FUZZ})
    streams = [b["stream"] for n, b in one.requests if "stream" in b and "delete" not in n]
    aimed = sum(s in ours for s in streams)
    assert 0.7 * len(streams) < aimed < len(streams)  # and some drawn ones
    groups = [
        b["consumer"]["value"] for n, b in one.requests if b.get("consumer", {}).get("kind") == 2
    ]
    assert groups and all(
        g in (first, {"kind": 1, "value": first}, {"kind": 2, "value": GROUP}) for g in groups
    )


@pytest.mark.parametrize("revision", REVISIONS)
def test_no_pool_payload_names_the_canary_and_destroys_by_name_only(revision: str) -> None:
    pool = IggyFuzzing({}, revision).pool(0)
    assert not any(CANARY.encode() in p for p in pool.payloads)
    for name, body in pool.requests:
        if name in ("delete_stream", "delete_topic", "delete_partitions"):
            stream = body["stream"]
            assert stream["kind"] == 2 or stream["value"] > 2**31, (name, body)
        if name == "delete_stream":
            assert body["stream"]["value"] not in ("fuzz", CANARY), body
        if name == "delete_topic":
            assert body["topic"]["value"] not in ("fuzz", "fuzz-scratch"), body
            assert body["topic"]["kind"] == 2 or body["topic"]["value"] > 2**31, body


@pytest.mark.parametrize("revision", REVISIONS)
def test_setup_payloads_decode(revision: str) -> None:
    made = [
        codec.decode_request(p, revision)[0] for p in IggyFuzzing({}, revision).setup_payloads()
    ]
    assert made.count("create_stream") == 2 and made.count("create_topic") == 3


# ------------------------------------------------------------------ mutators


@pytest.mark.parametrize("revision", REVISIONS)
def test_every_mutator_is_deterministic_and_makes_bytes(revision: str) -> None:
    part = IggyFuzzing({}, revision)
    pool = part.pool(0)
    for name, mutate in part.structure_mutators.items():
        for i in range(50):
            one = mutate(random.Random(f"{name}:{i}"), pool)
            assert one == mutate(random.Random(f"{name}:{i}"), pool)
            assert len(one) >= 4, name
            assert SENTINEL.encode() not in one, name


@pytest.mark.parametrize(
    ("mutator", "refused_at_least"),
    [
        ("identifier", 0.4),
        ("partitioning", 0.6),
        ("batch", 0.8),
        ("cut", 0.95),  # doc: a cut between messages still decodes
        ("unknown-code", 1.0),
        ("layer-field", 0.2),
        ("scapy-fuzz", 0.02),
    ],
)
@pytest.mark.parametrize("revision", REVISIONS)
def test_structure_mutators_mostly_make_what_does_not_decode(
    revision: str, mutator: str, refused_at_least: float
) -> None:
    part = IggyFuzzing({}, revision)
    pool = part.pool(0)
    mutate = part.structure_mutators[mutator]
    bad = sum(decodes(mutate(random.Random(f"t{i}"), pool), revision) is None for i in range(TRIES))
    assert bad >= refused_at_least * TRIES


def test_identifier_lies_include_a_string_running_past_the_payload() -> None:
    part = IggyFuzzing({})
    ours = [(p, r) for p, r in zip(*vars(part.pool(0)).values(), strict=True)]
    gets = [(p, r) for p, r in ours if r[0] == "get_stream"]
    pool = Pool([p for p, _ in gets], [r for _, r in gets])
    seen = 0
    for i in range(TRIES):
        payload = part.structure_mutators["identifier"](random.Random(f"id{i}"), pool)
        if U32.unpack_from(payload)[0] == CODES["get_stream"]:
            kind, length = payload[4], payload[5]
            seen += kind == 2 and length > len(payload) - 6
    assert seen > 0


def test_headers_lie_inside_a_block_whose_lengths_are_true() -> None:
    part = IggyFuzzing({})
    pool = part.pool(0)
    for i in range(100):
        got = decodes(part.structure_mutators["headers"](random.Random(f"h{i}"), pool), "classic")
        assert got is not None and got[0] == "send_messages"  # the lie is in the block


@pytest.mark.parametrize("revision", REVISIONS)
def test_layer_mutators_change_one_field_of_the_layer_and_keep_the_code(revision: str) -> None:
    part = IggyFuzzing({}, revision)
    pool_ = part.pool(0)
    valid = set(pool_.payloads)
    for name in ("layer-field", "scapy-fuzz"):
        mutate = part.structure_mutators[name]
        outs = [mutate(random.Random(f"{name}{i}"), pool_) for i in range(200)]
        codes = {U32.unpack_from(o)[0] for o in outs}
        assert codes <= {CODES[n] for n, _ in pool_.requests}  # the request's own code
        destroying = {CODES[n] for n in ("delete_stream", "delete_topic", "delete_partitions")}
        assert codes.isdisjoint(destroying)  # a boundary stream id may be the canary's
        assert sum(o not in valid for o in outs) > 150, name  # mutated, mostly


def test_unknown_codes_are_not_in_the_table() -> None:
    for revision in REVISIONS:
        part = IggyFuzzing({}, revision)
        mutate = part.structure_mutators["unknown-code"]
        table = set(codec.tables(revision)[0])
        for i in range(100):
            code = U32.unpack_from(mutate(random.Random(f"u{i}"), part.pool(0)))[0]
            assert {n for n, c in CODES.items() if c == code}.isdisjoint(table)


# ------------------------------------------------------------------ login modes


def test_login_both_logs_in_about_half_the_cases_by_the_opener_not_their_bytes() -> None:
    proto = fuzz.protocol("iggy", {"login": "both", "password": "pw-s3cr3t"})
    pool = proto.pool(0)
    cases = [generate(proto, pool, 0, i) for i in range(400)]
    assert 150 < sum(c.session for c in cases) < 250
    assert not any(b"pw-s3cr3t" in c.sent for c in cases)
    assert proto.opening(session=False) is None
    assert proto.opening(session=True) is not None  # the plug-in's opener logs in
    assert proto.own_opening() is not None  # set-up, canary and probe log in
    unopened = next(c for c in cases if not c.session)
    assert unopened.as_dict()["session"] is False
    assert FuzzCase.from_dict(unopened.as_dict()) == unopened
    opened = next(c for c in cases if c.session)
    assert "session" not in opened.as_dict()  # older reproducers read as opened
    assert FuzzCase.from_dict(opened.as_dict()) == opened


@pytest.mark.parametrize(("login", "opened"), [("after", True), ("before", False)])
def test_login_after_opens_each_case_and_before_never_logs_in(login: str, opened: bool) -> None:
    proto = fuzz.protocol("iggy", {"login": login})
    assert (proto.opening() is not None) is opened
    assert proto.own_opening() is not None
    pool = proto.pool(0)
    assert all(generate(proto, pool, 0, i).session for i in range(100))


def test_doc_has_no_login() -> None:
    proto = fuzz.protocol("iggy", {"login": "both"}, "doc")
    assert proto.opening() is None and proto.own_opening() is None
    assert "login" not in proto.structure_mutators


# ------------------------------------------------------------------ requirements


def test_requirements_of_findings() -> None:
    proto = fuzz.protocol("iggy", {"login": "before"})

    def case(*payloads: bytes) -> FuzzCase:
        return FuzzCase(0, "t", "structure", (b"".join(proto.frame(p) for p in payloads),))

    ping, unknown = U32.pack(1), U32.pack(999)
    get_stream = U32.pack(CODES["get_stream"]) + b"\x01\x04\0\0\0\0"
    short = U32.pack(CODES["get_stream"]) + b"\x02\xff"
    assert proto.requirement("HANG", case(ping)) == "IGG-SYS-1"
    assert proto.requirement("HANG", case(unknown)) == "IGG-FRAME-7"
    assert proto.requirement("HANG", case(short)) == "IGG-FRAME-8"
    assert proto.requirement("HANG", case(get_stream)) == "IGG-LOGIN-2"  # before login
    below_4 = FuzzCase(0, "t", "frame", (U32.pack(1) + b"\x01",))  # length 1: no code
    assert proto.requirement("HANG", below_4) == "IGG-FRAME-5"
    assert proto.requirement("STOPPED", case(ping, unknown)) == "IGG-FRAME-7"
    assert proto.requirement("CRASH", case(short)) == "IGG-FRAME-8"
    assert proto.requirement("CORRUPTION", case(ping)) == "IGG-POLL-9"
    assert proto.requirement("BAD_REPLY", case(ping)) == "IGG-FRAME-2"
    after = fuzz.protocol("iggy", {"login": "after"})
    assert after.requirement("HANG", case(get_stream)) == "IGG-STREAM-3"
    both = fuzz.protocol("iggy", {"login": "both"})
    assert both.requirement("HANG", case(get_stream)) == "IGG-STREAM-3"  # logged in
    unopened = FuzzCase(0, "t", "structure", case(get_stream).writes, session=False)
    assert both.requirement("HANG", unopened) == "IGG-LOGIN-2"
    assert all(proto.owes_reply(p) for p in (ping, unknown, short, b""))


# ------------------------------------------------------------------ against the broker


@pytest.fixture(scope="module")
def served() -> Iterator[broker.Broker]:
    b = broker.start(protocol="iggy")
    try:
        yield b
    finally:
        b.stop()


@pytest.mark.parametrize("login", ["after", "before", "both"])
def test_canary_round_trips_in_every_login_mode(served: broker.Broker, login: str) -> None:
    proto = fuzz.protocol("iggy", {"login": login})
    campaign.setup(proto, External(served.host, served.port), 2.0)
    canary = harness.Canary(proto, served.host, served.port, login, 2.0)
    assert canary.check() == ""
    assert canary.check() == ""  # both values read back at the offsets found
    assert len(canary.acked) == 2
    assert harness.serves(proto, served.host, served.port, 2.0)


@pytest.mark.parametrize("login", ["after", "before", "both"])
def test_a_short_campaign_finds_nothing(served: broker.Broker, login: str) -> None:
    proto = fuzz.protocol("iggy", {"login": login})
    _finds_nothing(proto, External(served.host, served.port))


def test_a_short_doc_campaign_finds_nothing() -> None:
    doc = broker.start("--revision", "doc", protocol="iggy")
    try:
        _finds_nothing(fuzz.protocol("iggy", {}, "doc"), External(doc.host, doc.port))
    finally:
        doc.stop()


def _finds_nothing(proto: fuzz.FuzzProtocol, target: External) -> None:
    fuzz_runs.finds_nothing(proto, target, 400)


# ------------------------------------------------------------------ fault quirks

BUDGET = 400
SECRET = "pw-s3cr3t-0451"
"""Cases within which each fault quirk must be found (seed 0 finds both in the first 30)."""


@pytest.mark.parametrize(
    ("quirk", "finding", "requirement", "login"),
    [
        ("crash-on-short-identifier", "CRASH", "IGG-FRAME-8", "after"),
        ("stall-on-unknown-code", "STOPPED", "IGG-FRAME-7", "before"),
        ("crash-on-short-identifier", "CRASH", "IGG-FRAME-8", "both"),
    ],
)
def test_each_fault_quirk_is_found_minimized_and_replayed(
    tmp_path: Path, quirk: str, finding: str, requirement: str, login: str
) -> None:
    flags = ("--login", login, "--password", SECRET)
    signature = f"{finding}:{requirement}"
    path, repro, found = fuzz_runs.quirk_found(
        tmp_path, "iggy", quirk, signature, BUDGET, *flags, timeout=400
    )
    for p in found:  # the session is the opener's: no login, no password in a reproducer
        text = p.read_text()
        assert SECRET not in text and SECRET.encode().hex() not in text, p
        for c in found[p]["cases"]:
            sent = b"".join(bytes.fromhex(w) for w in c["writes"])
            frames = fuzz.protocol("iggy").new_deframer().feed(sent)
            assert not any(U32.unpack_from(f)[0] == CODES["login_user"] for f in frames), p
    assert repro["size"]["writes"] == 1 and repro["size"]["bytes"] <= 64
    fuzz_runs.replays(tmp_path, path, "iggy", "--password", SECRET)
