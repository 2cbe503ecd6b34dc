"""Fault plans: YAML and --fault read alike, every mistake named, counting as documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.validate.faults import FaultPlan, PlanError, load_plan, parse_flag

ERRORS = ("NOT_LEADER_OR_FOLLOWER", "REBALANCE_IN_PROGRESS")
ACTIONS = ("rebalance",)


def test_a_yaml_plan_and_flags_give_the_same_faults(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "faults:\n"
        "  - on: Produce\n    error: NOT_LEADER_OR_FOLLOWER\n    count: 2\n"
        "  - {on: Fetch, slow: 800, after: 3}\n"
        "  - {on: Fetch, split: 5}\n"
        "  - {on: Fetch, reset: 0.5, count: 0}\n"
        "  - {on: Heartbeat, action: rebalance}\n"
    )
    from_yaml = load_plan(plan, ERRORS, ACTIONS)
    flags = [
        "Produce:error=NOT_LEADER_OR_FOLLOWER,count=2",
        "Fetch:slow=800,after=3",
        "Fetch:split=5",
        "Fetch:reset=0.5,count=0",
        "Heartbeat:action=rebalance",
    ]
    from_flags = [parse_flag(f, ERRORS, ACTIONS) for f in flags]
    assert [(f.on, f.effect, f.value, f.after, f.count) for f in from_yaml] == [
        (f.on, f.effect, f.value, f.after, f.count) for f in from_flags
    ]
    assert from_yaml[0].describe() == "Produce: answer NOT_LEADER_OR_FOLLOWER (2)"
    assert from_yaml[1].describe() == "Fetch: hold the reply 800 ms (1 after the first 3)"
    assert from_yaml[3].describe() == "Fetch: reset the connection after 0.5 of the reply (every)"


def test_after_and_count_pick_the_requests_a_fault_fires_on() -> None:
    plan = FaultPlan([parse_flag("Fetch:split=2,after=1,count=2", ERRORS, ACTIONS)])
    fired = [plan.fire("Fetch") is not None for _ in range(5)]
    assert fired == [False, True, True, False, False]
    assert plan.fire("Produce") is None
    every = FaultPlan([parse_flag("Fetch:split=2,count=0", ERRORS, ACTIONS)])
    assert all(every.fire("Fetch") for _ in range(20))


@pytest.mark.parametrize(
    ("flag", "says"),
    [
        ("Produce", "write KIND:KEY=VALUE"),
        ("Produce:error", "is not KEY=VALUE"),
        ("Produce:error=NOPE", "unknown error 'NOPE'; this protocol's: NOT_LEADER_OR_FOLLOWER"),
        ("Produce:action=explode", "unknown action 'explode'; this protocol's: rebalance"),
        ("Produce:slow=-5", "slow (milliseconds) must be from 1 to 600000"),
        ("Produce:split=1", "split (pieces) must be from 2"),
        ("Produce:reset=1.5", "reset (fraction of the reply) must be from 0 to 1"),
        ("Produce:slow=fast", "must be a whole number, not 'fast'"),
        ("Produce:slow=3.7", "must be a whole number, not '3.7'"),
        ("Produce:reset=nan", "must be a number, not 'nan'"),
        ("Produce:slow=5,split=2", "give exactly one of error, slow, split, reset, action"),
        ("Produce:sometimes=1", "unknown key 'sometimes'"),
        ("Produce:split=2,count=-1", "count must be at least 0"),
    ],
)
def test_every_mistake_in_a_flag_is_named(flag: str, says: str) -> None:
    with pytest.raises(PlanError) as caught:
        parse_flag(flag, ERRORS, ACTIONS)
    assert says in str(caught.value)
    assert str(caught.value).startswith(f"--fault {flag}: ")


def test_a_bad_plan_file_is_named_with_the_fault(tmp_path: Path) -> None:
    missing = tmp_path / "none.yaml"
    with pytest.raises(PlanError, match="cannot read fault plan"):
        load_plan(missing, ERRORS, ACTIONS)
    bad = tmp_path / "bad.yaml"
    bad.write_text("faults: [ {on: Produce\n")
    with pytest.raises(PlanError, match="is not YAML"):
        load_plan(bad, ERRORS, ACTIONS)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("faults:\n  - {on: Produce, split: 3}\n  - just words\n")
    with pytest.raises(PlanError, match=r"wrong\.yaml fault 2: a fault is a mapping"):
        load_plan(wrong, ERRORS, ACTIONS)
    bare = tmp_path / "bare.yaml"  # a bare list; YAML 1.1's `on` is true
    bare.write_text("- on: Produce\n  split: 3\n")
    (fault,) = load_plan(bare, ERRORS, ACTIONS)
    assert fault.on == "Produce"


def test_two_faults_on_one_kind_each_fire_in_turn() -> None:
    first = parse_flag("CONSUME:error=NOT_LEADER_OR_FOLLOWER", ERRORS, ACTIONS)
    second = parse_flag("CONSUME:split=3", ERRORS, ACTIONS)
    plan = FaultPlan([first, second])
    hits = [plan.fire("CONSUME") for _ in range(3)]
    assert hits == [first, second, None]
    assert (first.fired, second.fired) == (1, 1)


def test_a_lone_fault_with_after_counts_each_request_once() -> None:
    plan = FaultPlan([parse_flag("SEND:split=2,after=2", ERRORS, ACTIONS)])
    assert [plan.fire("SEND") is not None for _ in range(4)] == [False, False, True, False]


def test_a_fault_written_back_as_a_flag_reads_the_same() -> None:
    for text in ("Produce:error=NOT_LEADER_OR_FOLLOWER,count=2", "Fetch:slow=800,after=3",
                 "Fetch:reset=0.5,count=0", "Heartbeat:action=rebalance"):  # fmt: skip
        fault = parse_flag(text, ERRORS, ACTIONS)
        again = parse_flag(fault.flag(), ERRORS, ACTIONS)
        assert (again.on, again.effect, again.value, again.after, again.count) == (
            fault.on, fault.effect, fault.value, fault.after, fault.count,
        )  # fmt: skip
