"""Kafka transactions: a TxnOffsetCommit checked against the members of its classic group
(SPEC-transactions.md, area "transactions", KAF-TXN-19 and -20).

Each case makes its own topic, group and transactional id, sends AddOffsetsToTxn first
and TxnOffsetCommit v3-4 (the versions that name a member, in transactions V1), and
waits within a bound for the offsets to be committed after EndTxn (see
:mod:`.transaction_group_steps`).
"""

from __future__ import annotations

from conformance.suite.case import case
from conformance.suite.kafka.group_steps import other_generation, settle
from conformance.suite.kafka.steps import create_topic
from conformance.suite.kafka.transaction_group_steps import (
    V1_HIGHEST,
    add_offsets,
    committed_within,
    static_member,
    txn_commit,
)
from conformance.suite.kafka.transaction_steps import begin, end_txn
from conformance.suite.kafka.verify import KafkaClient, expect_code, usable
from conformance.suite.target import CaseContext


@case("kafka/transactions/19", "KAF-TXN-19")
def test_a_txn_offset_commit_naming_a_member_is_checked_against_the_group(
    target: CaseContext,
) -> None:
    """TxnOffsetCommit from a static member: its id at its generation commits; an unknown
    member or instance id, the instance id with another member id, another generation
    are refused.

    KAF-TXN-19: "a TxnOffsetCommit (v3+) that names a member of a classic group (a member
    id, a group instance id or a generation of 0 or more) is checked against the group: a
    member id the group does not have answers UNKNOWN_MEMBER_ID; a group instance id that
    another member id holds answers FENCED_INSTANCE_ID; the member's id with a generation
    other than the group's answers ILLEGAL_GENERATION; the member's id at the group's
    generation answers error 0. A refused commit stores nothing."
    """
    req = "KAF-TXN-19"
    v = usable(target, "TxnOffsetCommit", lowest=3, highest=V1_HIGHEST)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t19")
        group = target.name("t19-group")
        instance = target.name("t19-instance")
        m = static_member(target, k, group, instance)
        p = begin(target, k, "t19", req)
        add_offsets(target, k, p, group, req)
        gen = m.generation
        ok = txn_commit(
            k, p, group, topic, 7, req, version=v, generation=gen, member_id=m.member_id,
            instance=instance,
        )  # fmt: skip
        what = f"TxnOffsetCommit v{v} from the member {m.member_id!r} at generation {gen}"
        expect_code(ok, "error_code", "NONE", req, what)
        nobody, stranger = target.name("t19-nobody"), target.name("t19-stranger")
        refused = (
            ("an unknown member id", "UNKNOWN_MEMBER_ID", nobody, gen, None),
            ("an instance id no member has", "UNKNOWN_MEMBER_ID", m.member_id, gen, stranger),
            ("the instance id of another member id", "FENCED_INSTANCE_ID", nobody, gen, instance),
            (
                f"generation {other_generation(m)} (the group is at {gen})",
                "ILLEGAL_GENERATION",
                m.member_id,
                other_generation(m),
                instance,
            ),
        )
        for why, error, member_id, generation, named in refused:
            got = txn_commit(
                k, p, group, topic, 5, req, version=v, generation=generation,
                member_id=member_id, instance=named,
            )  # fmt: skip
            expect_code(got, "error_code", error, req, f"TxnOffsetCommit v{v} with {why}")
        ended = end_txn(target, k, p, True, req)
        expect_code(ended, "error_code", "NONE", req, "EndTxn (commit)")
        committed_within(target, k, group, topic, 7, req)


@case("kafka/transactions/20", "KAF-TXN-20")
def test_a_txn_offset_commit_naming_no_member_is_taken_while_the_group_has_members(
    target: CaseContext,
) -> None:
    """TxnOffsetCommit with generation -1 and no member id, to a group with a member:
    error 0 (OffsetCommit would answer UNKNOWN_MEMBER_ID), committed with the transaction.

    KAF-TXN-20: "a TxnOffsetCommit that names no member (generation -1, an empty member
    id, no group instance id) is accepted for a classic group that has members, unlike an
    OffsetCommit of that form (UNKNOWN_MEMBER_ID): it answers error 0 and its offset
    becomes the group's committed offset at EndTxn(commit)."
    """
    req = "KAF-TXN-20"
    v = usable(target, "TxnOffsetCommit", lowest=3, highest=V1_HIGHEST)
    with KafkaClient(target) as k:
        topic = create_topic(target, k, "t20")
        group = target.name("t20-group")
        settle(target, k, group)
        p = begin(target, k, "t20", req)
        add_offsets(target, k, p, group, req)
        got = txn_commit(k, p, group, topic, 6, req, version=v)
        what = f"TxnOffsetCommit v{v} naming no member, to a group with a member"
        expect_code(got, "error_code", "NONE", req, what)
        ended = end_txn(target, k, p, True, req)
        expect_code(ended, "error_code", "NONE", req, "EndTxn (commit)")
        committed_within(target, k, group, topic, 6, req)
