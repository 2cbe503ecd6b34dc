"""The mini-Kafka fuzzing part: its pool decodes in its revision and covers every request
type, its mutators make what decodes or is refused with MiniKafkaError (nothing else),
no case names the canary, its requirements and may_close, its canary, and campaigns
against the reference broker: clean ones find nothing, each fault quirk is found,
minimized and replayed."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from conformance import fuzz
from conformance.engine import Engine
from conformance.errors import ProtocolError
from conformance.fuzz import campaign, harness
from conformance.fuzz.case import FuzzCase, Pool
from conformance.fuzz.mutators import generate
from conformance.fuzz.target import External
from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.protocols.minikafka.fuzz_mutators import READ_TOPIC, SINK_TOPIC, UNKNOWN_TYPES
from conformance.protocols.minikafka.fuzzing import CANARY, PINNED, MiniKafkaFuzzing, pool
from conformance.protocols.minikafka.handler import MiniKafkaFrontend, MiniKafkaSession
from conformance.server import Outcome
from tests.support import broker, fuzz_runs, inprocess
from tests.support.cli import conformance

REVISIONS = ("doc", "real")
TRIES = 200


def decoded(payload: bytes, revision: str) -> codec.Request | None:
    """What a broker of ``revision`` reads; None if it refuses it (MiniKafkaError only:
    any other exception fails the test)."""
    try:
        return codec.decode_request(payload, strict=False, lenient_utf8=revision == "real")
    except codec.MiniKafkaError:
        return None


def reads_sink(request: codec.Request | None) -> bool:
    """A CONSUME of the sink at an offset it may have (below 2^32)."""
    return (
        isinstance(request, codec.Consume)
        and request.topic == SINK_TOPIC
        and 0 <= request.offset < 2**32
    )


# ------------------------------------------------------------------ the pool


@pytest.mark.parametrize("revision", REVISIONS)
def test_every_pool_payload_decodes_strictly_and_every_type_is_there(revision: str) -> None:
    one = MiniKafkaFuzzing({}, revision).pool(0)
    assert len(one.payloads) == len(one.requests) >= 40
    for payload, request in zip(one.payloads, one.requests, strict=True):
        assert codec.decode_request(payload, strict=True) == request
    assert {r.type for r in one.requests} == set(m.REPLY_TYPE)


@pytest.mark.parametrize("revision", REVISIONS)
def test_the_pool_is_drawn_per_seed_and_aimed_mostly_at_the_fuzz_set_up(revision: str) -> None:
    one, again, other = pool.__wrapped__(revision, 5), pool(revision, 5), pool(revision, 6)
    assert one.payloads == again.payloads  # a pure function of the seed
    assert one.payloads != other.payloads
    topics = [r.topic for r in one.requests if isinstance(r, codec.Consume | codec.Produce)]
    aimed = sum(t in (READ_TOPIC, SINK_TOPIC) for t in topics)
    assert PINNED - 0.2 < aimed / len(topics) < 1  # and some drawn ones


@pytest.mark.parametrize("revision", REVISIONS)
def test_no_pool_payload_names_the_canary_and_no_consume_reads_what_the_pool_writes(
    revision: str,
) -> None:
    one = MiniKafkaFuzzing({}, revision).pool(0)
    assert not any(CANARY.encode() in p for p in one.payloads)
    produced = {r.topic for r in one.requests if isinstance(r, codec.Produce)}
    consumed = {r.topic for r in one.requests if isinstance(r, codec.Consume)}
    assert SINK_TOPIC in produced and READ_TOPIC in consumed
    assert not produced & consumed  # no CONSUME reply grows with the campaign


def test_setup_payloads_write_the_read_topic_and_the_sink() -> None:
    made = [codec.decode_request(p) for p in MiniKafkaFuzzing({}).setup_payloads()]
    assert all(isinstance(r, codec.Produce) for r in made)
    assert {r.topic for r in made if isinstance(r, codec.Produce)} == {READ_TOPIC, SINK_TOPIC}


# ------------------------------------------------------------------ mutators


@pytest.mark.parametrize("revision", REVISIONS)
def test_every_mutator_is_deterministic_and_decodes_or_raises_minikafka_error(
    revision: str,
) -> None:
    proto = fuzz.protocol("minikafka", {}, revision)
    one = proto.pool(0)
    for name, mutate in proto.structure_mutators.items():
        refused = 0
        for i in range(TRIES):
            got = mutate(random.Random(f"{name}:{i}"), one)
            assert got == mutate(random.Random(f"{name}:{i}"), one), name
            request = decoded(got, revision)
            refused += request is None
            assert not reads_sink(request), (name, got)
        if name in ("cut", "topic-length", "data-length", "scapy-fuzz"):
            assert refused > TRIES // 2, name  # they lie, mostly where the broker sees it
        if name in ("offset", "batch-size", "trailing"):
            assert refused == 0, name  # the request still decodes: it is answered


def test_structure_mutators_lie_where_they_say() -> None:
    part = MiniKafkaFuzzing({})
    one = part.pool(0)
    consume = codec.Consume(READ_TOPIC, 1, 5)
    produce = codec.Produce(SINK_TOPIC, b"data")
    two = Pool([codec.encode_request(r) for r in (consume, produce)], [consume, produce])
    mutate = part.structure_mutators
    offsets = [decoded(mutate["offset"](random.Random(f"o{i}"), one), "doc") for i in range(TRIES)]
    assert any(isinstance(r, codec.Consume) and r.offset < 0 for r in offsets)
    batches = [
        decoded(mutate["batch-size"](random.Random(f"b{i}"), one), "doc") for i in range(TRIES)
    ]
    sizes = {r.batch_size for r in batches if isinstance(r, codec.Consume)}
    assert min(sizes) < 0 and 2**31 - 1 in sizes  # negative and huge
    types = {mutate["type-byte"](random.Random(f"t{i}"), two)[0] for i in range(TRIES)}
    assert set(UNKNOWN_TYPES) <= types
    for i in range(TRIES):
        got = mutate["bad-utf8"](random.Random(f"u{i}"), two)
        assert decoded(got, "real") is not None  # real reads U+FFFD
        cut = mutate["cut"](random.Random(f"c{i}"), two)
        assert cut == b"" or any(p.startswith(cut) and p != cut for p in two.payloads)
        trailing = mutate["trailing"](random.Random(f"r{i}"), two)
        assert trailing[:-1].startswith(two.payloads[0]) or trailing.startswith(two.payloads[1])


@pytest.mark.parametrize("revision", REVISIONS)
def test_no_case_names_the_canary_or_reads_the_sink_and_every_mutator_is_drawn(
    revision: str,
) -> None:
    proto = fuzz.protocol("minikafka", {}, revision)
    one = proto.pool(0)
    cases = [generate(proto, one, 0, i) for i in range(3000)]
    assert {c.mutator for c in cases} >= {*proto.structure_mutators, *proto.frame_mutators}
    for c in cases:
        assert not any(CANARY.encode() in w for w in (*c.writes, *c.abandon)), c
        try:
            frames = proto.new_deframer().feed(c.sent)
        except ProtocolError:
            continue
        assert not any(reads_sink(decoded(f, revision)) for f in frames), c


def test_small_length_and_mixed_burst_frames() -> None:
    proto = fuzz.protocol("minikafka")
    one = proto.pool(0)
    lengths = set()
    for i in range(TRIES):
        (data,), _ = proto.frame_mutators["small-length"](random.Random(f"s{i}"), proto, one)
        lengths.add(int.from_bytes(data[:4], "big"))
        (data,), _ = proto.frame_mutators["mixed-burst"](random.Random(f"m{i}"), proto, one)
        assert harness.expectation(proto, data).owed >= 1
    assert lengths == set(range(7))


# ------------------------------------------------------------------ oracle and requirements


def _case(*payloads: bytes) -> FuzzCase:
    return FuzzCase(0, "t", "structure", (b"".join(codec.frame(p) for p in payloads),))


FLUSH = codec.encode_request(codec.Flush())
CONSUME = codec.encode_request(codec.Consume("t", 0, 1))
NEGATIVE = codec.encode_request(codec.Consume("t", 0, -1))
PRODUCE = codec.encode_request(codec.Produce("t", b"v"))
BAD_TOPIC = codec.encode_request(codec.Produce(b"\xff", b"v"))


def test_may_close_only_after_a_frame_no_must_asks_to_answer() -> None:
    doc, real = MiniKafkaFuzzing({}, "doc"), MiniKafkaFuzzing({}, "real")
    for part in (doc, real):
        assert not part.may_close(_case(FLUSH, CONSUME, PRODUCE, NEGATIVE).sent)
        assert part.may_close(_case(FLUSH, b"").sent)  # length 4: no type byte
        assert part.may_close(_case(b"\x99" + FLUSH, FLUSH).sent)  # unknown type
        assert part.may_close(_case(PRODUCE[:-1], FLUSH).sent)  # cut short
        assert part.may_close(codec.frame(FLUSH, length=3))  # no frame at all
    assert doc.may_close(_case(BAD_TOPIC).sent) and not real.may_close(_case(BAD_TOPIC).sent)
    padded = CONSUME + bytes(7)  # the real client's padding
    assert doc.may_close(_case(padded).sent) and not real.may_close(_case(padded).sent)


def test_requirements_of_findings() -> None:
    doc = fuzz.protocol("minikafka")
    real = fuzz.protocol("minikafka", {}, "real")
    hang = {
        FLUSH: ("MK-FLUSH-1", "MK-FLUSH-1"),
        CONSUME: ("MK-CONS-1", "MK-CONS-1"),
        PRODUCE: ("MK-PROD-1", "MK-PROD-1"),
        NEGATIVE: ("MK-CONS-11", "MK-CONS-10"),
        b"": ("MK-ROBUST-2", "MK-ROBUST-2"),
        b"\x02" + FLUSH: ("MK-ROBUST-1", "MK-ROBUST-1"),
        PRODUCE[:-1]: ("MK-ERR-2", "MK-ROBUST-3"),
        BAD_TOPIC: ("MK-ERR-3", "MK-PROD-1"),
        CONSUME + b"\x00": ("MK-FRAME-6", "MK-FRAME-5"),
    }
    for payload, (in_doc, in_real) in hang.items():
        assert doc.requirement("HANG", _case(payload)) == in_doc, payload
        assert real.requirement("HANG", _case(payload)) == in_real, payload
    assert doc.requirement("HANG", _case(FLUSH, CONSUME), answered=1) == "MK-CONS-1"
    assert doc.requirement("CRASH", _case(FLUSH, NEGATIVE, b"\x99")) == "MK-CONS-11"
    assert real.requirement("CRASH", _case(FLUSH, NEGATIVE)) == "MK-CONS-10"
    assert doc.requirement("STOPPED", _case(FLUSH, b"\x99", NEGATIVE)) == "MK-ROBUST-1"
    assert doc.requirement("STOPPED", _case(b"")) == "MK-ROBUST-2"
    assert doc.requirement("STOPPED", _case(PRODUCE[:3])) == "MK-ROBUST-3"
    # the first frame it could not handle, not a later one: a cut PRODUCE before a bad type
    assert real.requirement("STOPPED", _case(PRODUCE[:-1], b"\x07")) == "MK-ROBUST-3"
    # a frame answered before it went down is not the culprit
    assert doc.requirement("CRASH", _case(b"\x07", NEGATIVE), answered=1) == "MK-CONS-11"
    assert doc.requirement("CRASH", _case(b"\x07", NEGATIVE)) == "MK-ROBUST-1"
    assert doc.requirement("CRASH", _case(FLUSH)) == "MK-FRAME-3"
    assert doc.requirement("CORRUPTION", _case(FLUSH)) == "MK-CONS-2"
    assert doc.requirement("BAD_REPLY", _case(FLUSH)) == "MK-FRAME-1"
    partial = FuzzCase(0, "t", "frame", (codec.frame(FLUSH)[:3],))
    assert doc.requirement("HANG", partial) == "MK-FRAME-2"
    assert doc.requirement("CRASH", FuzzCase(0, "t", "frame", (b"\x00\x00\x00\x02",))) == (
        "MK-ROBUST-2"
    )


# ------------------------------------------------------------------ against the broker


@pytest.fixture(scope="module", params=REVISIONS)
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, broker.Broker]]:
    revision: str = request.param
    b = broker.start("--revision", revision, protocol="minikafka")
    try:
        yield revision, b
    finally:
        b.stop()


def test_canary_round_trips(served: tuple[str, broker.Broker]) -> None:
    revision, b = served
    proto = fuzz.protocol("minikafka", {}, revision)
    campaign.setup(proto, External(b.host, b.port), 2.0)
    canary = harness.Canary(proto, b.host, b.port, "\x00\xff tag", 2.0)
    assert canary.check() == ""
    assert canary.check() == ""  # both values read back at the offsets acked
    assert len(canary.acked) == 2
    assert harness.serves(proto, b.host, b.port, 2.0)


def test_the_canary_values_are_read_by_offset() -> None:
    part = MiniKafkaFuzzing({})
    part.canary_consume(5)
    reply = codec.encode_reply(
        codec.ConsumeOk(
            8, (codec.Consumed(5, b"a"), codec.Consumed(7, b"c"), codec.Consumed(2**40, b"x"))
        )
    )
    assert part.canary_values(reply) == [b"a", b"", b"c"]
    assert part.canary_acked(codec.encode_reply(codec.ProduceOk(3))) == 3
    assert part.canary_acked(codec.encode_reply(codec.failure_for(m.PRODUCE_REQUEST, "no"))) is None


def test_a_short_campaign_finds_nothing(served: tuple[str, broker.Broker]) -> None:
    revision, b = served
    fuzz_runs.finds_nothing(fuzz.protocol("minikafka", {}, revision), External(b.host, b.port), 600)


# ------------------------------------------------------------------ fault quirks

BUDGET = 40
"""Cases within which each fault quirk must be found (seed 0 finds the crash at case 6
and the stop at case 12; a STOPPED costs a broker restart and the probe's rounds each
time, at the 0.3 s deadline about 7 cases a second)."""


@pytest.mark.parametrize(
    ("quirk", "finding", "requirement"),
    [
        ("crash-on-negative-batch", "CRASH", "MK-CONS-11"),
        ("stop-on-unknown-type", "STOPPED", "MK-ROBUST-1"),
    ],
)
def test_each_fault_quirk_is_found_minimized_and_replayed(
    tmp_path: Path, quirk: str, finding: str, requirement: str
) -> None:
    signature = f"{finding}:{requirement}"
    path, repro, _ = fuzz_runs.quirk_found(tmp_path, "minikafka", quirk, signature, BUDGET)
    assert repro["signature"] == signature
    assert repro["size"]["writes"] == 1 and repro["size"]["bytes"] <= 32
    (case,) = repro["cases"]
    (payload,) = codec.new_deframer().feed(bytes.fromhex(case["writes"][0]))
    if finding == "CRASH":  # the CONSUME with a negative batch size, alone
        request = codec.decode_request(payload, strict=False)
        assert isinstance(request, codec.Consume) and request.batch_size < 0
    else:
        assert payload[:1] and payload[0] not in m.REPLY_TYPE
    fuzz_runs.replays(tmp_path, path, "minikafka")


# ------------------------------------------------ a finding filed by its minimized bytes


class _HangsOnEmptyData(MiniKafkaSession):
    """Stops answering its connection at a PRODUCE of empty data (only that connection)."""

    def handle(self, frame: bytes) -> Outcome:
        try:
            request = codec.decode_request(frame, strict=False)
        except codec.MiniKafkaError:
            request = None
        if isinstance(request, codec.Produce) and not request.data:
            return Outcome(stall=True)
        return super().handle(frame)


class _HangingFrontend(MiniKafkaFrontend):
    def new_session(self, peer: str) -> MiniKafkaSession:
        return _HangsOnEmptyData(self)


def test_a_finding_is_filed_by_what_its_minimized_case_breaks(tmp_path: Path) -> None:
    """One fault (no reply to a PRODUCE of empty data) is first seen in cases that also hold
    other suspects (trailing bytes, an unknown type byte), so its first signatures name their
    requirements; once minimized, each is one plain PRODUCE: one finding, HANG:MK-PROD-1, one
    reproducer, which replays."""
    with inprocess.serving(_HangingFrontend(Engine())) as address:
        proc = conformance(
            tmp_path, "fuzz", "--protocol", "minikafka", "--target", address,
            "--cases", "250", "--deadline", "0.5", "-q", timeout=600,
        )  # fmt: skip
        said = proc.stdout + proc.stderr
        assert proc.returncode == 1, said
        found = sorted(p.name for p in (tmp_path / "fuzz" / "findings").glob("*.yaml"))
        assert len(found) == 1 and found[0].startswith("hang-MK-PROD-1-"), (found, said)
        # seed 0 sees it first as HANG:MK-FRAME-6 (a case with trailing bytes) too
        assert "HANG:MK-FRAME-6 minimized to a case that breaks MK-PROD-1" in said, said
        assert "HANG:MK-FRAME-6 is the same finding as HANG:MK-PROD-1" in said, said
        data = yaml.safe_load((tmp_path / "fuzz" / "findings" / found[0]).read_text())
        assert data["requirement"] == "MK-PROD-1" and data["minimized"], data
        replay = conformance(
            tmp_path, "replay", str(tmp_path / "fuzz" / "findings" / found[0]),
            "--target", address, timeout=120,
        )  # fmt: skip
        assert replay.returncode == 1 and "REPRODUCES" in replay.stdout, replay.stdout
