"""A mini-Kafka verdict names its evidence, and is true.

Evidence: each run is ``conformance run --protocol minikafka`` against the embedded
reference broker with one spec quirk and only the cases that quirk breaks (each run starts a
broker: keep them few).  Every FAIL names the request it sent and fields its entries hold,
by the annotator's names (``type``, ``success``, ``next_offset``, ``messages count``,
``messages[i].offset``; ``batch_size``, ``offset`` in a request).

Verdict truth: the reference broker passes every case of each revision; a target that stops
serving after bad input, as the real phase-2 server does (FACTS.md 4.3), gets a WARN from
the robustness case that finds it, within one read deadline, never an ERROR; and brokers
the document allows (the reference broker with one behaviour changed, served here in-process
by :class:`conformance.server.Server`) get no FAIL: one that serves one connection at a time,
as the real server does, passes everything.
"""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conformance import protocols
from conformance.engine import Engine
from conformance.errors import ProtocolError
from conformance.protocols.minikafka import codec
from conformance.protocols.minikafka import messages as m
from conformance.protocols.minikafka.handler import (
    MiniKafkaConfig,
    MiniKafkaFrontend,
    MiniKafkaSession,
)
from conformance.server import Outcome, Server
from tests.support import inprocess
from tests.support.cli import conformance
from tests.support.evidence_runs import QuirkRuns, evidence_problems, judged, reports_dir, value

RUNS: dict[str, tuple[str, ...]] = {
    "batch-size-ignored": ("minikafka/consume/3",),
    "next-offset-of-last": ("minikafka/consume/5",),
    "unknown-topic-error": ("minikafka/consume/6", "minikafka/consume/9"),
    "flush-without-success-byte": (
        "minikafka/framing/5",
        "minikafka/flush/1",
        "minikafka/flush/2",
    ),
}
"""Each spec quirk and the cases it makes FAIL."""
TIMEOUT = 2.0

RUNNER = QuirkRuns("minikafka", RUNS, timeout=TIMEOUT)
run, case = RUNNER.run, RUNNER.case
tmp = reports_dir("minikafka-evidence")


def test_every_spec_quirk_is_run() -> None:
    spec = {q.name for q in protocols.get("minikafka").quirks.values() if q.kind == "spec"}
    assert set(RUNS) == spec


def test_a_batch_over_its_size_names_the_batch_size_and_the_count(tmp: Path) -> None:
    c = case("batch-size-ignored", tmp, "minikafka/consume/3")
    assert c["verdict"] == "FAIL" and c["violated"] == "MK-CONS-3"
    assert "5 messages (offsets 0, 1, 2, 3, 4), expected at most 2" in c["message"]
    (request, asked), (reply, fields) = judged(c)
    assert request["dir"] == "send" and asked == ["batch_size"]
    assert value(request, "batch_size") == 2
    assert reply["dir"] == "recv" and fields == ["messages count"]
    assert value(reply, "messages count") == 5


def test_a_next_offset_of_the_last_message_names_both_offsets(tmp: Path) -> None:
    c = case("next-offset-of-last", tmp, "minikafka/consume/5")
    assert c["verdict"] == "FAIL" and c["violated"] == "MK-CONS-5"
    assert "next_offset 2, expected 3 (its last message is at offset 2)" in c["message"]
    (request, _), (reply, fields) = judged(c)
    assert request["summary"].startswith("frame: CONSUME")
    assert fields == ["next_offset", "messages[2].offset"]
    assert value(reply, "next_offset") == 2 and value(reply, "messages[2].offset") == 2


def test_an_unknown_topic_refused_names_the_success_byte_and_the_error(tmp: Path) -> None:
    for case_id in RUNS["unknown-topic-error"]:
        c = case("unknown-topic-error", tmp, case_id)
        assert c["verdict"] == "FAIL" and c["violated"] == "MK-CONS-6", case_id
        assert "answered success 0 with error 'unknown topic" in c["message"]
        (request, _), (reply, fields) = judged(c)
        assert request["summary"].startswith("frame: CONSUME")
        assert fields == ["success", "error"] and value(reply, "success") == 0


def test_a_flush_reply_without_its_success_byte_names_its_bytes(tmp: Path) -> None:
    c = case("flush-without-success-byte", tmp, "minikafka/framing/5")
    assert c["verdict"] == "FAIL" and c["violated"] == "MK-FRAME-4"
    assert "answered 00000005 06, with no success byte after the type" in c["message"]
    (request, _), (reply, fields) = judged(c)
    assert request["summary"] == "FLUSH" and request["len"] == 5
    assert fields == ["type"] and value(reply, "type") == 6 and reply["len"] == 1
    for case_id in ("minikafka/flush/1", "minikafka/flush/2"):
        c = case("flush-without-success-byte", tmp, case_id)
        assert c["verdict"] == "FAIL" and c["violated"] == "MK-FLUSH-1", case_id
        assert "answered 00000005 06, expected 00000006 0601" in c["message"]


def test_every_failure_of_every_spec_quirk_names_evidence_that_exists(tmp: Path) -> None:
    broken: dict[str, dict[str, Any]] = {}
    for quirk in RUNS:
        for c in run(quirk, tmp)["cases"]:
            if c["verdict"] in ("FAIL", "WARN"):
                broken[f"{quirk}: {c['case_id']}"] = c
    assert len(broken) == sum(len(cases) for cases in RUNS.values()), sorted(broken)
    problems = {k: p for k, c in broken.items() if (p := evidence_problems(c))}
    assert not problems, problems


def test_each_revision_runs_its_own_cases_and_passes_the_reference_broker(tmp: Path) -> None:
    doc_only = {
        "minikafka/framing/7",
        "minikafka/consume/9",
        "minikafka/consume/11",
        "minikafka/errors/2",
        "minikafka/errors/3",
    }
    real_only = {"minikafka/framing/6", "minikafka/consume/8", "minikafka/consume/10",
                 "minikafka/errors/4"}  # fmt: skip
    for revision, own, others in (("doc", doc_only, real_only), ("real", real_only, doc_only)):
        cases = run(revision, tmp, "--revision", revision)["cases"]
        ids = {c["case_id"] for c in cases}
        assert own <= ids and not ids & others, (revision, sorted(ids))
        assert {c["verdict"] for c in cases} == {"PASS"}, [
            (c["case_id"], c["message"]) for c in cases if c["verdict"] != "PASS"
        ]


# ------------------------------------------------------------ brokers served here


class OneAtATime(Server):
    """Serves one connection at a time, as the real server does (FACTS.md 4.1): a second
    connection is accepted but read only once the first has ended."""

    def __init__(self, frontend: Any) -> None:
        super().__init__(frontend)
        self._turn = asyncio.Lock()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)  # a connection waiting its turn is closed by close() too
        try:
            async with self._turn:
                await super()._serve(reader, writer)
        except asyncio.CancelledError:
            writer.close()
        finally:
            self._connections.discard(task)


class Variant(MiniKafkaSession):
    """The reference broker's session with one behaviour changed (:data:`VARIANTS`)."""

    variant = ""

    def handle(self, frame: bytes) -> Outcome:
        if self.variant == "refuse-trailing-bytes":
            real = self.config.revision == "real"
            try:
                codec.decode_request(frame, strict=True, lenient_utf8=real)
            except codec.MiniKafkaError as exc:
                return self._refused(frame, exc)
        return super().handle(frame)

    def _refused(self, frame: bytes, exc: codec.MiniKafkaError) -> Outcome:
        if self.variant == "stops-serving":
            return self.frontend_stops()
        if self.variant == "close-on-malformed":
            return Outcome(close=True)
        if self.variant == "silent-on-malformed":
            return Outcome()  # no reply, the connection kept
        return super()._refused(frame, exc)

    def frontend_stops(self) -> Outcome:
        self.frontend.stopped = True
        return Outcome(stall=True)

    def consume(self, request: codec.Consume) -> codec.Reply:
        if self.variant == "two-per-batch" and request.batch_size > 2:
            request = replace(request, batch_size=2)
        reply = super().consume(request)
        if self.variant == "next-offset-end-of-log" and isinstance(reply, codec.ConsumeOk):
            topic = str(request.topic)
            if not reply.messages:
                end = self.engine.high_watermark(topic, 0) if self.engine.has_topic(topic) else 0
                return codec.ConsumeOk(end)
        return reply


def reframed(payload: bytes, variant: str) -> bytes:
    """A reply payload as the broken broker ``variant`` frames it (:data:`BROKEN`)."""
    kind, success = payload[:1], payload[1:2]
    if variant == "len-excl":  # every length leaves out its own 4 bytes
        return struct.pack(">i", len(payload)) + payload
    if variant == "produce-11" and kind == b"\x04" and success == b"\x01":
        payload += b"\x00"  # an 11-byte PRODUCE reply, its length counting the byte
    elif variant == "consume-trailing" and kind == b"\x02" and success == b"\x01":
        payload += b"\x00\x00"
    elif variant == "success-2" and success == b"\x01":
        payload = kind + b"\x02" + payload[2:]
    elif variant == "produce-type-02" and kind == b"\x04":
        payload = b"\x02" + payload[1:]
    elif variant == "count-plus1" and payload[:2] == b"\x02\x01" and len(payload) > 14:
        (count,) = struct.unpack_from(">i", payload, 10)
        payload = payload[:10] + struct.pack(">i", count + 1) + payload[14:]
    return codec.frame(payload)


class Broken(Variant):
    """The reference broker's session breaking one MUST (or one SHOULD) of SPEC.md
    (:data:`BROKEN`): a reply reframed or rewritten, offsets from 1, a batch reversed, or
    a close after each error reply."""

    def handle(self, frame: bytes) -> Outcome:
        out = super().handle(frame)
        replies = [reframed(r[4:], self.variant) for r in out.replies]
        refused = any(r[5:6] == bytes([m.FAILURE]) for r in out.replies)
        close = out.close or (self.variant == "close-after-error" and refused)
        return replace(out, replies=replies, close=close)

    def produce(self, request: codec.Produce) -> codec.Reply:
        reply = super().produce(request)
        if self.variant == "offset-from-1" and isinstance(reply, codec.ProduceOk):
            return codec.ProduceOk(reply.offset + 1)
        return reply

    def consume(self, request: codec.Consume) -> codec.Reply:
        shifted = self.variant == "offset-from-1"
        if shifted and request.offset >= 1:  # offset n is stored at n - 1
            request = replace(request, offset=request.offset - 1)
        reply = super().consume(request)
        if not isinstance(reply, codec.ConsumeOk):
            return reply
        if shifted:
            moved = tuple(codec.Consumed(c.offset + 1, c.data) for c in reply.messages)
            return codec.ConsumeOk(reply.next_offset + 1, moved)
        if self.variant == "reversed":
            return codec.ConsumeOk(reply.next_offset, tuple(reversed(reply.messages)))
        return reply


class VariantFrontend(MiniKafkaFrontend):
    variant = ""

    def new_session(self, peer: str) -> MiniKafkaSession:
        session = (Broken if self.variant in BROKEN else Variant)(self)
        session.variant = self.variant
        return session

    def framing_error(self, exc: ProtocolError) -> Outcome:
        if self.variant == "stops-serving":
            self.stopped = True
            return Outcome(stall=True)
        return super().framing_error(exc)


@contextmanager
def serving(variant: str, revision: str, one_at_a_time: bool) -> Iterator[str]:
    """The reference broker, with ``variant`` in ``revision``, on a loop of its own; its
    address."""
    config = MiniKafkaConfig(revision="real" if revision == "real" else "doc")
    frontend = VariantFrontend(Engine(), config)
    frontend.variant = variant
    server: Server = OneAtATime(frontend) if one_at_a_time else Server(frontend)
    with inprocess.serving(frontend, server) as address:
        yield address


def run_against(tmp_path: Path, address: str, revision: str, *selected: str) -> dict[str, Any]:
    reports = tmp_path / "reports"
    r = conformance(
        tmp_path, "run", "--protocol", "minikafka", "--revision", revision,
        "--target", address, "--timeout", f"{TIMEOUT:g}", "--reports", str(reports), "-q",
        *selected,
    )  # fmt: skip
    assert (reports / "results.json").exists(), r.stdout + r.stderr
    out: dict[str, Any] = json.loads((reports / "results.json").read_text())
    out["stdout"] = r.stdout
    return out


def verdicts(results: dict[str, Any]) -> dict[str, str]:
    return {c["case_id"]: c["verdict"] for c in results["cases"]}


VARIANTS: dict[str, tuple[str, bool, Callable[[dict[str, str]], bool]]] = {
    # the real server's one thread: every case must pass though it is served alone
    "one-at-a-time": ("doc", True, lambda v: set(v.values()) == {"PASS"}),
    "one-at-a-time-real": ("real", True, lambda v: set(v.values()) == {"PASS"}),
    # a close instead of an error reply to a request cut short or not UTF-8 (doc allows
    # it; MK-ERR-2 and -3 are SHOULDs)
    "close-on-malformed": (
        "doc", False, lambda v: v["minikafka/errors/2"] == v["minikafka/errors/3"] == "WARN",
    ),
    # next offset of an empty read: where the log ends (doc leaves it open; MK-CONS-9 MAY)
    "next-offset-end-of-log": (
        "doc", False, lambda v: v["minikafka/consume/9"] == "UNSUPPORTED",
    ),
    # at most 2 messages a CONSUME, fewer than asked (MK-CONS-4 is a SHOULD)
    "two-per-batch": ("doc", False, lambda v: v["minikafka/consume/4"] == "WARN"),
    "two-per-batch-real": ("real", False, lambda v: v["minikafka/consume/4"] == "WARN"),
    # bytes after the last field refused (doc is silent; MK-FRAME-6 is a MAY)
    "refuse-trailing-bytes": (
        "doc", False, lambda v: v["minikafka/framing/7"] == "UNSUPPORTED",
    ),
    # the real server's readings, judged by the document: MK-CONS-11 and MK-ERR-3 are
    # SHOULDs, MK-CONS-9 a MAY
    "real-judged-by-doc": (
        "doc", False,
        lambda v: v["minikafka/consume/11"] == v["minikafka/errors/3"] == "WARN"
        and v["minikafka/consume/9"] == "UNSUPPORTED",
    ),
}  # fmt: skip
"""Each variant: the revision the suite runs in, whether it serves one connection at a
time, and what it must get besides no FAIL and no ERROR."""


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_broker_the_document_allows_fails_no_case(tmp_path: Path, variant: str) -> None:
    revision, one_at_a_time, expected = VARIANTS[variant]
    behaviour = variant.removesuffix("-real")
    broker_revision = "real" if variant == "real-judged-by-doc" else revision
    with serving(behaviour, broker_revision, one_at_a_time) as address:
        results = run_against(tmp_path, address, revision)
    got = verdicts(results)
    wrong = {c["case_id"]: c["message"] for c in results["cases"]
             if c["verdict"] in ("FAIL", "ERROR")}  # fmt: skip
    assert got and not wrong, wrong
    assert expected(got), got


# ------------------------------------------------------- brokers that break one rule

BROKEN: dict[str, dict[str, set[str]]] = {
    # every reply's length leaves out its own 4 bytes
    "len-excl": {"doc": {"MK-FRAME-1"}, "real": {"MK-FRAME-1"}},
    # a PRODUCE reply of 11 bytes, its length counting them
    "produce-11": {"doc": {"MK-PROD-1"}, "real": {"MK-PROD-1"}},
    # a success byte 2 in every success reply (MK-FRAME-4 names the success byte's values)
    "success-2": {"doc": {"MK-FRAME-4"}, "real": {"MK-FRAME-4"}},
    # PRODUCE answered with type byte 0x02, on both paths
    "produce-type-02": {"doc": {"MK-FRAME-4"}, "real": {"MK-FRAME-4"}},
    # two bytes after a CONSUME success reply's messages, inside its frame
    "consume-trailing": {"doc": {"MK-CONS-1"}, "real": {"MK-CONS-1"}},
    # a CONSUME reply with messages counts one more than it holds
    "count-plus1": {"doc": {"MK-CONS-1"}, "real": {"MK-CONS-1"}},
    # offsets from 1, consistently: PRODUCE answers them, CONSUME reads by them
    "offset-from-1": {"doc": {"MK-PROD-2"}, "real": {"MK-PROD-2"}},
    # the messages of a CONSUME in reverse offset order
    "reversed": {"doc": {"MK-CONS-2"}, "real": {"MK-CONS-2"}},
    # a right error reply, then a close (serving on is MK-ERR-2's, a doc SHOULD)
    "close-after-error": {"doc": {"MK-ERR-2"}, "real": set()},
}
"""Each broken broker and, per revision, exactly the requirements its run FAILs or WARNs
(whichever case finds them): one rule broken fails that rule only, with true reasons."""


UNFRAMED = {"len-excl"}
"""Variants whose replies cannot be framed at all (a length that leaves out its own 4 bytes)."""


@pytest.mark.parametrize("revision", ["doc", "real"])
@pytest.mark.parametrize("variant", sorted(BROKEN))
def test_a_broker_that_breaks_one_rule_fails_that_rule_only(
    tmp_path: Path, variant: str, revision: str
) -> None:
    with serving(variant, revision, False) as address:
        results = run_against(tmp_path, address, revision)
    bad = [c for c in results["cases"] if c["verdict"] in ("FAIL", "WARN", "ERROR")]
    # a broker none of whose replies frame fails MK-FRAME-1 once; the cases after it end at
    # once as ERRORs that say it is unusable (the generic reply-framing rule)
    unusable = [c for c in bad if c.get("lost") and "is unusable" in c["message"]]
    assert not unusable or variant in UNFRAMED, [c["case_id"] for c in unusable]
    bad = [c for c in bad if c not in unusable]
    got = {c["violated"] for c in bad}
    assert got == BROKEN[variant][revision], [(c["case_id"], c["message"]) for c in bad]
    problems = {c["case_id"]: p for c in bad if (p := evidence_problems(c))}
    assert not problems, problems


# ------------------------------------------------------- a target that stops serving


@pytest.mark.parametrize("number", [1, 2, 3])
def test_a_target_that_stops_serving_is_warned_within_one_deadline(
    tmp_path: Path, number: int
) -> None:
    case_id = f"minikafka/robustness/{number}"
    with serving("stops-serving", "real", True) as address:
        results = run_against(tmp_path, address, "real", case_id)
    (c,) = results["cases"]
    assert c["verdict"] == "WARN" and c["violated"] == f"MK-ROBUST-{number}", c["message"]
    assert "then a FLUSH on a new connection: no reply within 2s" in c["message"]
    assert c["duration_s"] < TIMEOUT + 1.5, c["duration_s"]  # one deadline and the grace
    frames = judged(c)
    bad, flush, deadline = (entry for entry, _ in frames)
    assert bad["dir"] == "send" and flush["dir"] == "send" and deadline["dir"] == "event"
    assert bad["conn"] != flush["conn"] == deadline["conn"]
    assert "deadline" in deadline["summary"] and not evidence_problems(c)
    assert results["exit_code"] == 0


def test_a_server_that_stops_as_the_real_one_passes_with_a_warning(tmp_path: Path) -> None:
    """Verdict truth: the real server stops serving after the first robustness input and
    breaks only SHOULDs; its run exits 0, the later robustness cases not checked."""
    with serving("stops-serving", "real", True) as address:
        results = run_against(tmp_path, address, "real")
    got = verdicts(results)
    assert got.pop("minikafka/robustness/1") == "WARN"
    assert got.pop("minikafka/robustness/2") == got.pop("minikafka/robustness/3") == "UNSUPPORTED"
    assert set(got.values()) == {"PASS"}, got
    assert results["exit_code"] == 0
    later = [c for c in results["cases"] if c["case_id"] == "minikafka/robustness/2"]
    assert "not checked: the target stopped serving after" in later[0]["message"]
    robust = [c for c in results["cases"] if c["case_id"].startswith("minikafka/robustness/")]
    assert sum(c["duration_s"] for c in robust) < TIMEOUT + 1.5
    assert "MK-ROBUST-1" in results["stdout"]


def test_a_request_cut_short_that_stops_the_target_is_warned_as_robustness_is(
    tmp_path: Path,
) -> None:
    """One behaviour, one verdict rule: the doc case for a request cut short (MK-ERR-2,
    a SHOULD) against a server that stops serving on it, as the real one does, is a WARN
    decided on the silence, like MK-ROBUST-3 for the same bytes, never an ERROR."""
    (tmp_path / "alone").mkdir()
    (tmp_path / "whole").mkdir()
    with serving("stops-serving", "real", True) as address:
        alone = run_against(tmp_path / "alone", address, "doc", "minikafka/errors/2")
    (c,) = alone["cases"]
    assert c["verdict"] == "WARN" and c["violated"] == "MK-ERR-2", c["message"]
    assert "the target stopped serving" in c["message"]
    assert alone["exit_code"] == 0
    with serving("stops-serving", "real", True) as address:
        whole = run_against(tmp_path / "whole", address, "doc")
    wrong = {c["case_id"]: c["message"] for c in whole["cases"]
             if c["verdict"] in ("FAIL", "ERROR")}  # fmt: skip
    assert not wrong and whole["exit_code"] == 0, wrong


def test_a_target_silent_on_a_cut_request_but_serving_warns_the_error_path(
    tmp_path: Path,
) -> None:
    """A target that answers nothing to a request cut short but still serves new
    connections breaks MK-ERR-2 (WARN, decided on the silence), and only it."""
    with serving("silent-on-malformed", "doc", False) as address:
        results = run_against(tmp_path, address, "doc", "minikafka/errors/2")
    (c,) = results["cases"]
    assert c["verdict"] == "WARN" and c["violated"] == "MK-ERR-2", c["message"]
    assert "no reply on its connection" in c["message"] and not evidence_problems(c)
