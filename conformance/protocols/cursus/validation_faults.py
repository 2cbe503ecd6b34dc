"""The faults ``serve --protocol cursus --validate`` can inject, and what a client should
do after each (SPEC.md, ``client: reactions``), sans-IO but for :func:`rebalance`, which
changes a group through the engine.

* ``NOT_LEADER`` on a batch, CONSUME or STREAM, worded as the revision's broker words it
  (doc: the special reply ``NOT_LEADER``; real: ``ERROR: NOT_LEADER LEADER_IS <host:port>``,
  pkg/controller/consume_handler.go ``checkLeaderOrRedirect``): the client sends it again,
  looks the leader up or reconnects (CUR-CLI-16);
* ``GEN_MISMATCH`` on a member command (doc: the special reply; real: ``ERROR: GEN_MISMATCH
  current=.. requested=.. group=.. member=..``), in doc also ``REBALANCE_REQUIRED`` on
  HEARTBEAT, and the action ``rebalance``: the member joins again (CUR-CLI-17);
* ``slow`` and ``split`` (CUR-CLI-18) and ``reset`` (CUR-CLI-19).  A client that opens a
  connection per command (the official one) goes on after a reply on a new connection, so
  ``reconnected`` counts as going on after a slow or split reply.
"""

from __future__ import annotations

from collections.abc import Mapping

from conformance.engine import DEFAULT_GROUP_POLICY, Engine, EngineError
from conformance.protocols.cursus.real_groups import REAL_GROUPS
from conformance.protocols.cursus.validation_read import BATCH, Request
from conformance.validate.contract import Expectation
from conformance.validate.reactions import RECONNECTED, RESENT, RETRIED, WENT_ON

RESEND = "CUR-CLI-16"
REJOIN = "CUR-CLI-17"
READ_REPLY = "CUR-CLI-18"
AFTER_RESET = "CUR-CLI-19"

REJOINED = "re-joined"
REFRESHED = "refreshed metadata"
LOOKED_UP = "looked up the coordinator"
NEXT_STEPS = {"JOIN_GROUP": REJOINED, "METADATA": REFRESHED, "FIND_COORDINATOR": LOOKED_UP}
GEN_MISMATCH_ON = {
    "doc": ("SYNC_GROUP", "HEARTBEAT", "BATCH_COMMIT"),
    "real": ("SYNC_GROUP", "HEARTBEAT", "COMMIT_OFFSET", "BATCH_COMMIT", "LEAVE_GROUP"),
}
"""The member commands the broker checks a generation on, so that can be answered stale."""
_LEADER_ON = (BATCH, "CONSUME", "STREAM")
_GOING_ON = (WENT_ON, RETRIED, REJOINED, REFRESHED, LOOKED_UP, RECONNECTED)
TRANSPORT: Mapping[str, Expectation] = {
    "slow": Expectation(READ_REPLY, _GOING_ON),
    "split": Expectation(READ_REPLY, _GOING_ON),
    "reset": Expectation(AFTER_RESET, (RECONNECTED,)),
}


def errors(revision: str) -> dict[str, Expectation]:
    found = {
        "NOT_LEADER": Expectation(
            RESEND, (RETRIED, RESENT, RECONNECTED, REFRESHED), kinds=_LEADER_ON
        ),
        "GEN_MISMATCH": Expectation(REJOIN, (REJOINED,), kinds=GEN_MISMATCH_ON[revision]),
    }
    if revision == "doc":
        found["REBALANCE_REQUIRED"] = Expectation(REJOIN, (REJOINED,), kinds=("HEARTBEAT",))
    return found


def actions(revision: str) -> dict[str, Expectation]:
    return {
        "rebalance": Expectation(
            REJOIN,
            (REJOINED,),
            description=(
                "on a member command: another member joins and leaves the request's group "
                "first, raising its generation by 2 (the request is then answered as stale)"
            ),
            kinds=GEN_MISMATCH_ON[revision],
        )
    }


def error_reply(revision: str, req: Request, error: str, leader: str) -> bytes | None:
    """The reply refusing ``req`` with ``error`` as the revision's broker words it."""
    if revision == "doc":
        return error.encode()
    if error == "NOT_LEADER":
        return f"ERROR: NOT_LEADER LEADER_IS {leader or '127.0.0.1:9000'}".encode()
    generation = req.values.get("generation")
    if not isinstance(generation, int):
        return None
    group, member = req.values.get("group", ""), req.values.get("member", "")
    return (
        f"ERROR: GEN_MISMATCH current={generation + 1} requested={generation} "
        f"group={group} member={member}"
    ).encode()


def rebalance(engine: Engine, revision: str, req: Request, stranger: str) -> None:
    """A member ``stranger`` joins ``req``'s group and leaves it: its generation rises by 2."""
    group, topic = req.values.get("group"), req.values.get("topic")
    if group is None:
        return
    policy = REAL_GROUPS if revision == "real" else DEFAULT_GROUP_POLICY
    try:
        info = engine.group_info(str(group))
        on = info.topics[0] if info.topics else str(topic)
        joined = engine.join_group(str(group), on, stranger, policy=policy)
        engine.leave_group(str(group), joined.member_id)
    except EngineError:
        pass
