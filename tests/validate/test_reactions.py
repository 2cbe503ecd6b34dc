"""What a client did after a fault: judged on what came before another fault, and the
broker's own closes never blamed on the client."""

from __future__ import annotations

from conformance.validate.contract import Seen, Violation
from conformance.validate.faults import Fault
from conformance.validate.ledger import Ledger
from conformance.validate.reactions import react

STEPS = {"Metadata": "refreshed metadata", "JoinGroup": "re-joined"}


def _request(ledger: Ledger, conn: int, kind: str, **seen: object) -> Seen:
    s = Seen(kind, f"{kind} on {conn}", **seen)  # type: ignore[arg-type]
    ledger.request(conn, b"x", s)
    return s


def test_tags_before_another_fault_are_judged_and_later_ones_kept_apart() -> None:
    ledger = Ledger()
    early = ledger.open("early")  # open before the fault: another client's, not followed
    a = ledger.open("a")
    hit = _request(ledger, a, "Produce", target="t/0", identity="seq 0")
    first = ledger.fault(Fault("Produce", "error", "X"), a, 0, b"x", hit)
    _request(ledger, early, "Produce", target="t/0", identity="seq 0")
    _request(ledger, a, "Metadata")
    b = ledger.open("b")  # opened after the fault: followed
    other = _request(ledger, b, "Heartbeat")
    ledger.fault(Fault("Heartbeat", "action", "rebalance"), b, 0, b"x", other)
    _request(ledger, a, "Produce", target="t/0", identity="seq 0")  # its own connection: judged
    _request(ledger, b, "JoinGroup")  # elsewhere, after the other fault: not this fault's
    reaction = react(first, STEPS)
    assert reaction.tags == ("refreshed metadata", "reconnected", "retried", "re-sent the same")
    assert reaction.later == ("re-joined",)
    assert not any(step.startswith("conn 1:") for step in reaction.steps)
    assert reaction.met(("retried",)) and not reaction.met(("re-joined",))


def test_a_reset_is_the_brokers_and_an_illegal_resend_is_named() -> None:
    ledger = Ledger()
    a = ledger.open("a")
    hit = _request(ledger, a, "Fetch")
    fired = ledger.fault(Fault("Fetch", "reset", 0.5), a, 0, b"x", hit)
    ledger.closing(a, "reset by the broker (fault 1)")
    ledger.close(a, [])
    b = ledger.open("b")
    _request(ledger, b, "Fetch", violations=[Violation("X-CLI-1", "bad")])
    reaction = react(fired, STEPS)
    assert "closed the connection" not in reaction.tags
    assert reaction.steps[0] == "conn 1: reset by the broker (fault 1)"
    assert reaction.tags == ("reconnected", "retried", "sent something illegal")
    assert "X-CLI-1" in reaction.steps[-1]


def test_nothing_after_a_fault_is_said() -> None:
    ledger = Ledger()
    a = ledger.open("a")
    fired = ledger.fault(Fault("Fetch", "split", 2), a, 0, b"x", _request(ledger, a, "Fetch"))
    assert react(fired, STEPS).tags == ("sent nothing more",)


def test_a_client_that_was_done_is_inconclusive_but_one_that_never_came_back_is_not() -> None:
    from conformance import protocols
    from conformance.engine import Engine
    from conformance.plugin import ServeConfig
    from conformance.spec import client_requirements
    from conformance.validate.results import fault_cases

    plugin = protocols.get("kafka")
    assert plugin.validation is not None
    config = ServeConfig(revision="apache")
    validation = plugin.validation(plugin.frontend(Engine(), config), config)
    reqs = client_requirements("kafka")

    def alone(effect: str, value: object) -> dict[str, object]:
        """The case of one fault on a client's last request, nothing after it."""
        ledger = Ledger()
        a = ledger.open("a")
        seen = _request(ledger, a, "Fetch")
        ledger.fault(Fault("Fetch", effect, value), a, len(ledger.frames) - 1, b"x", seen)
        if effect == "reset":
            ledger.closing(a, "reset by the broker (fault 1)")
        ledger.stopping = True
        ledger.close(a, [])
        (case,) = fault_cases("kafka", plugin, ledger, validation, reqs)
        return case

    done, gone = alone("split", 2), alone("reset", 0.5)
    assert done["verdict"] == "UNSUPPORTED", done["message"]
    assert str(done["message"]).startswith("inconclusive")
    assert done["unsupported"] is None  # not a way of its own: nothing to judge
    assert gone["verdict"] == "WARN" and gone["violated"] == "KAF-CLI-16"


def test_new_work_of_the_same_kind_is_not_a_retry() -> None:
    ledger = Ledger()
    a = ledger.open("a")
    hit = _request(ledger, a, "Produce", target="t/0", identity="records 1")
    fired = ledger.fault(Fault("Produce", "error", "X"), a, 0, b"x", hit)
    _request(ledger, a, "Produce", target="t/0", identity="records 2")  # other records
    assert react(fired, STEPS).tags == ("went on",)
