"""The V1 line replication model against SPEC.md's replication area: the acceptance story in
miniature, each revision's ISR and hw rule, replica id range errors, roles, and Hypothesis
properties (hw never decreases and never passes the leader's last offset; the ISR holds 0)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocols.v1line.codec import encode_payload
from conformance.protocols.v1line.commands import REVISIONS, Revision
from conformance.protocols.v1line.errors import BAD_REQUEST, NOT_LEADER
from conformance.protocols.v1line.replication import (
    DEFAULT_ACK_TIMEOUT_MS,
    DEFAULT_LAG_TIMEOUT_MS,
    PartitionReplication,
    ReplicationConfig,
    ReplicationError,
)

LAG = DEFAULT_LAG_TIMEOUT_MS


def part(revision: Revision = "doc", **options: int) -> PartitionReplication:
    return PartitionReplication("orders", 0, ReplicationConfig(revision=revision, **options))


def test_defaults_are_specs_serve_options() -> None:
    c = ReplicationConfig()
    assert (c.replication_factor, c.min_isr, c.ack_timeout_ms, c.lag_timeout_ms) == (
        3,
        2,
        2000,
        10_000,
    )


# ------------------------------------------------------ the acceptance story


@pytest.mark.parametrize("revision", REVISIONS)
def test_story_acks_all_then_follower_stops_then_role_change(revision: Revision) -> None:
    """V1L-REPL-9, -11, -8, -13/-16, -4, CONS-2: the issue's replication story in miniature."""
    p = part(revision, min_isr=2)
    p.appended(0)  # PRODUCE acks=all at offset 0, t=0
    assert p.acks_all_state(0, started=0, now=0) == "waiting", "ISR [0] is below min ISR 2"
    r1 = p.report(1, 0, now=10)
    r2 = p.report(2, 0, now=20)
    assert r1["isr"] == (0, 1) and r2["isr"] == (0, 1, 2)
    assert r2["hw"] == 0 and r2["under_replicated"] is False
    assert p.acks_all_ready(0, now=20) and p.acks_all_state(0, 0, 20) == "ready"

    # Follower 2 stops; follower 1 keeps up.
    p.appended(1)
    p.report(1, 1, now=1000)
    hw_before = p.hw(1000)
    if revision == "doc":
        assert hw_before == 0, "V1L-REPL-13: offset 1 stays above hw until follower 2 reports it"
    else:
        assert hw_before == 1, "V1L-REPL-16: hw is the leader's last offset"
    assert p.isr(20 + LAG) == ((0, 1, 2) if revision == "doc" else (0, 1))
    t = 20 + LAG + 1
    assert p.isr(t) == (0, 1), "V1L-REPL-11: follower 2 silent past the lag timeout left"
    assert p.hw(t) == 1

    # Follower 1 stops too: ISR shrinks to [0] and acks=all times out (min ISR 2).
    p.appended(2)
    t = 1000 + LAG + 1
    assert p.isr(t) == (0,)
    assert p.under_replicated(t) is True
    assert not p.acks_all_ready(2, now=t)
    assert p.acks_all_state(2, started=t, now=t + DEFAULT_ACK_TIMEOUT_MS - 1) == "waiting"
    assert p.acks_all_state(2, started=t, now=t + DEFAULT_ACK_TIMEOUT_MS) == "timeout"

    # Role change to follower: NOT_LEADER, log and hw unchanged.
    hw = p.hw(t)
    p.set_role("follower")
    with pytest.raises(ReplicationError) as e:
        p.check_produce()
    assert e.value.code == NOT_LEADER
    assert p.role_reply(t) == {"topic": "orders", "partition": 0, "role": "follower", "hw": hw}
    p.set_role("leader")
    p.check_produce()


def test_consumer_limit_never_passes_what_the_isr_acknowledged_doc() -> None:
    """V1L-REPL-13, V1L-CONS-2: hw is the smallest offset the ISR acknowledged."""
    p = part("doc")
    p.appended(4)
    p.report(1, 4, now=0)
    p.report(2, 4, now=0)
    for last in range(5, 10):
        p.appended(last)
        p.report(1, last, now=last)
        assert p.hw(last) == 4, "follower 2 has acknowledged only 4"
    p.report(2, 7, now=10)
    assert p.hw(10) == 7
    p.report(2, 9, now=11)
    assert p.hw(11) == 9


# ------------------------------------------------------------ per revision


def test_before_any_report_isr_is_leader_and_hw_its_last_offset() -> None:
    """V1L-REPL-15."""
    for revision in REVISIONS:
        p = part(revision)
        assert p.isr(0) == (0,) and p.hw(0) == -1
        p.appended(3)
        assert p.isr(0) == (0,) and p.hw(0) == 3


def test_doc_follower_that_never_caught_up_is_not_in_isr() -> None:
    p = part("doc")
    p.appended(5)
    r = p.report(1, 2, now=0)
    assert r["isr"] == (0,) and r["hw"] == 5


def test_doc_lagging_follower_stays_in_isr_until_lag_timeout() -> None:
    p = part("doc")
    p.appended(0)
    p.report(1, 0, now=0)
    p.appended(3)
    p.report(1, 2, now=5)  # behind: its last catch-up is still t=0
    assert p.isr(LAG) == (0, 1) and p.hw(LAG) == 2
    assert p.isr(LAG + 1) == (0,) and p.hw(LAG + 1) == 3


def test_real_lagging_follower_leaves_at_once() -> None:
    """V1L-REPL-16: max lag 0, so hw is always the leader's last offset."""
    p = part("real")
    p.appended(0)
    assert p.report(1, 0, now=0)["isr"] == (0, 1)
    p.appended(1)
    assert p.isr(1) == (0,) and p.hw(1) == 1
    assert p.report(1, 1, now=2)["isr"] == (0, 1)
    assert p.isr(2 + LAG) == (0, 1) and p.isr(2 + LAG + 1) == (0,)


def test_under_replicated_is_isr_below_min_isr() -> None:
    """V1L-REPL-12, -16."""
    p = part("doc", replication_factor=3, min_isr=2)
    p.appended(0)
    assert p.under_replicated(0)
    assert p.report(1, 0, now=0)["under_replicated"] is False
    assert p.report(2, 0, now=0)["under_replicated"] is False


def test_min_isr_is_clamped_to_replication_factor() -> None:
    p = part("doc", replication_factor=1, min_isr=5)
    p.appended(0)
    assert p.acks_all_ready(0, now=0) and not p.under_replicated(0)


def test_report_clamps_to_leader_and_never_goes_back_but_echoes() -> None:
    """V1L-REPL-15."""
    p = part("doc")
    p.appended(2)
    r = p.report(1, 9, now=0)
    assert r["acked_offset"] == 9 and p.followers[1].offset == 2
    r = p.report(1, 0, now=1)
    assert r["acked_offset"] == 0 and p.followers[1].offset == 2


def test_fetch_reply_encodes_with_the_codec() -> None:
    p = part("doc")
    p.appended(0)
    payload = encode_payload("REPLICA_FETCH", p.report(1, 0, now=0))
    assert payload == "replica=1 acked_offset=0 hw=0 isr=[0 1] under_replicated=false"
    assert encode_payload("SET_PARTITION_ROLE", p.role_reply(0)) == (
        "topic=orders partition=0 role=leader hw=0"
    )


# ------------------------------------------------------------- errors


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("replica_id", [0, -1, 3, 4, 2**63 - 1])
def test_replica_id_out_of_range_is_bad_request(revision: Revision, replica_id: int) -> None:
    """V1L-REPL-7: 1..replication_factor-1 (3 here)."""
    p = part(revision)
    with pytest.raises(ReplicationError) as e:
        p.report(replica_id, 0, now=0)
    assert (e.value.code, e.value.message) == (BAD_REQUEST, "invalid replica id")


def test_replication_factor_one_has_no_followers() -> None:
    p = part("doc", replication_factor=1, min_isr=1)
    with pytest.raises(ReplicationError):
        p.report(1, 0, now=0)


def test_report_to_follower_partition_per_revision() -> None:
    """V1L-REPL-16: `real` refuses; `doc` records it."""
    real = part("real")
    real.set_role("follower")
    with pytest.raises(ReplicationError) as e:
        real.report(1, -1, now=0)
    assert (e.value.code, e.value.message) == (BAD_REQUEST, "partition is not leader")
    doc = part("doc")
    doc.set_role("follower")
    assert doc.report(1, -1, now=0)["isr"] == (0, 1)


def test_bad_role_and_bad_config() -> None:
    with pytest.raises(ReplicationError):
        part().set_role("observer")
    with pytest.raises(ValueError):
        ReplicationConfig(replication_factor=0)
    p = part()
    p.appended(3)
    with pytest.raises(ValueError):
        p.appended(2)


# ------------------------------------------------------------ properties

op = st.one_of(
    st.tuples(st.just("append"), st.integers(0, 3)),
    st.tuples(st.just("report"), st.integers(-1, 5), st.integers(-2, 12)),
    st.tuples(st.just("tick"), st.integers(0, 2 * LAG)),
    st.tuples(st.just("role"), st.sampled_from(["leader", "follower"])),
)


@given(
    revision=st.sampled_from(REVISIONS),
    rf=st.integers(1, 5),
    min_isr=st.integers(1, 5),
    ops=st.lists(op, max_size=60),
)
def test_invariants(revision: Revision, rf: int, min_isr: int, ops: list[tuple[Any, ...]]) -> None:
    """hw never decreases (V1L-REPL-14), hw <= leader's last offset, the ISR holds 0
    (V1L-REPL-10), under_replicated and acks=all agree with the ISR (V1L-REPL-12, -9)."""
    p = part(revision, replication_factor=rf, min_isr=min_isr)
    now, last_hw = 0, p.hw(0)
    for o in ops:
        if o[0] == "append":
            p.appended(p.leader_last_offset + o[1])
        elif o[0] == "report":
            try:
                p.report(o[1], p.leader_last_offset - o[2] if o[2] >= 0 else o[2], now)
            except ReplicationError as e:
                assert e.code == BAD_REQUEST
                assert not 1 <= o[1] < rf or (revision == "real" and p.role == "follower")
        elif o[0] == "tick":
            now += o[1]
        else:
            p.set_role(o[1])
        hw, isr = p.hw(now), p.isr(now)
        assert hw >= last_hw, f"hw went back from {last_hw} to {hw}"
        assert hw <= p.leader_last_offset
        assert isr[0] == 0 and list(isr) == sorted(set(isr)) and set(isr) <= set(range(rf))
        assert p.under_replicated(now) == (len(isr) < min(min_isr, rf))
        assert p.acks_all_ready(hw, now) == (len(isr) >= min(min_isr, rf))
        if revision == "real":
            assert hw == p.leader_last_offset
        last_hw = hw
