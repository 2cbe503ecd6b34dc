"""The ledger of a validation stays bounded on a long run, and counts what it no longer keeps."""

from __future__ import annotations

import pytest

from conformance.validate import ledger as ledger_module
from conformance.validate.contract import Seen, Violation
from conformance.validate.faults import Fault
from conformance.validate.ledger import Ledger


def test_a_long_run_keeps_counts_not_every_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_module, "FRAMES_KEPT", 3)
    monkeypatch.setattr(ledger_module, "FRAMES_MAX", 10)
    monkeypatch.setattr(ledger_module, "FOUND_KEPT", 2)
    ledger = Ledger()
    conn = ledger.open("peer")
    indexes = []
    for i in range(20):
        bad = [Violation("X-CLI-1", f"bad {i}")] if i % 5 == 0 else []
        indexes.append(ledger.request(conn, b"req", Seen("K", f"r{i}", ("X-CLI-1",), bad)))
        ledger.reply(conn, b"rep")
    assert ledger.connections[conn].requests == 20
    assert ledger.connections[conn].checked["X-CLI-1"] == 20
    assert ledger.broken["X-CLI-1"] == 4 and len(ledger.violations_of("X-CLI-1")) == 2
    assert len(ledger.frames) <= 10 + 4  # the bound, plus the frames violations name
    assert all(ledger.frames[indexes[i]].data == b"req" for i in (0, 5, 10, 15))
    assert indexes[19] == -1  # past every bound, nothing named it
    fired = ledger.fault(Fault("K", "split", 2), conn, -1, b"late", Seen("K", "late"))
    assert ledger.frames[fired.frame].data == b"late"  # a fault's request is always kept
