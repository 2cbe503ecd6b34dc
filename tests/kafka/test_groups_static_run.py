"""The static-member cases (conformance/suite/kafka/test_groups_static.py) against the
embedded reference broker: they pass, and each of their spec quirks makes exactly its own
case fail (the whole suite under each quirk is tests/protocols/test_quirk_exactness.py).
Also what each quirk rewrites, in process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.protocols.kafka import quirks_generations
from conformance.protocols.kafka.codec import Request
from tests.support.cli import conformance

REQUIREMENTS = ("KAF-GROUP-17", "KAF-GROUP-18")


def _run(tmp_path: Path, *quirks: str) -> tuple[int, dict[str, tuple[str, str | None]]]:
    """The two requirements' cases, revision apache: exit code and verdict per case."""
    args = ["run", "--protocol", "kafka", "--revision", "apache", "--reports", "reports"]
    for q in quirks:
        args += ["--quirk", q]
    proc = conformance(tmp_path, *args, *REQUIREMENTS, timeout=200)
    cases = json.loads((tmp_path / "reports" / "results.json").read_text())["cases"]
    return proc.returncode, {c["case_id"]: (c["verdict"], c["violated"]) for c in cases}


def test_the_static_cases_pass_on_the_reference_broker(tmp_path: Path) -> None:
    code, verdicts = _run(tmp_path)
    assert code == 0, verdicts
    assert {v for v, _ in verdicts.values()} == {"PASS"}
    # JoinGroup v5-v9 for the replacement, one run for the fencing
    assert len([c for c in verdicts if c.startswith("kafka/groups/18@v")]) == 5
    assert "kafka/groups/19" in verdicts


@pytest.mark.parametrize(
    ("quirk", "broken"),
    [
        ("static-member-not-replaced", "KAF-GROUP-17"),
        ("fenced-instance-as-unknown-member", "KAF-GROUP-18"),
    ],
)
def test_each_quirk_fails_exactly_its_case(tmp_path: Path, quirk: str, broken: str) -> None:
    code, verdicts = _run(tmp_path, quirk)
    assert code == 1
    failed = {c: v for c, v in verdicts.items() if v[0] != "PASS"}
    assert failed and {v for v in failed.values()} == {("FAIL", broken)}, verdicts
    other = [c for c, (_, req) in verdicts.items() if req != broken and c not in failed]
    assert other, "the other requirement's case ran and passed"


# -- the rewrites, in process ---------------------------------------------------------------


def _join(member_id: str, instance: str | None, version: int = 5) -> Request:
    body = {"group_id": "g", "member_id": member_id, "group_instance_id": instance}
    return Request(11, version, 1, "cli", body)


def _answer(member_id: str = "i-1-x") -> dict[str, Any]:
    return {"error_code": 0, "generation_id": 1, "member_id": member_id, "leader": member_id}


def test_static_member_not_replaced_refuses_only_a_rejoin_of_an_instance_it_answered() -> None:
    quirk = ("static-member-not-replaced",)
    quirks_generations._ANSWERED.clear()
    assert quirks_generations.after(quirk, _join("", "i-1"), _answer())["error_code"] == 0
    again = quirks_generations.after(quirk, _join("", "i-1"), _answer("i-1-y"))
    assert (again["error_code"], again["member_id"], again["generation_id"]) == (82, "", -1)
    # a known member id, another instance, no instance, or JoinGroup v4: left alone
    for request in (_join("i-1-x", "i-1"), _join("", "i-2"), _join("", None), _join("", "i-1", 4)):
        assert quirks_generations.after(quirk, request, _answer())["error_code"] == 0


def test_fenced_instance_as_unknown_member_rewrites_82_only() -> None:
    quirk = ("fenced-instance-as-unknown-member",)
    for key in (11, 12, 14):
        request = Request(key, 5, 1, "cli", {})
        assert quirks_generations.after(quirk, request, {"error_code": 82})["error_code"] == 25
        assert quirks_generations.after(quirk, request, {"error_code": 22})["error_code"] == 22
    leave = Request(13, 3, 1, "cli", {})
    members = [{"member_id": "a", "error_code": 82}, {"member_id": "b", "error_code": 0}]
    got = quirks_generations.after(quirk, leave, {"error_code": 0, "members": members})
    assert [m["error_code"] for m in got["members"]] == [25, 0]
    commit = Request(8, 7, 1, "cli", {})
    parts = [{"partition_index": 0, "error_code": 82}]
    got = quirks_generations.after(quirk, commit, {"topics": [{"name": "t", "partitions": parts}]})
    assert got["topics"][0]["partitions"][0]["error_code"] == 25
    other = Request(68, 0, 1, "cli", {})  # ConsumerGroupHeartbeat (KIP-848): not this quirk's
    assert quirks_generations.after(quirk, other, {"error_code": 82})["error_code"] == 82
