"""What the protocols' fuzz tests do alike: a short clean campaign, and a fault quirk found.

* :func:`finds_nothing`: cases ``0..n-1`` of a seed against a live reference broker, with
  the canary every 100 cases: no finding, no canary lost, every canary round done;
* :func:`quirk_found`: ``conformance fuzz -q --deadline 0.3 --cases BUDGET --quirk Q``
  (plus the protocol's own flags) must exit 1 naming ``FINDING:REQUIREMENT``; the
  reproducer of that finding and every reproducer's data are returned for the protocol's
  own checks;
* :func:`replays`: that reproducer REPRODUCES on the embedded broker with its quirk and
  does not on a clean broker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from conformance.fuzz import campaign
from conformance.fuzz.case import FuzzProtocol
from conformance.fuzz.target import External
from tests.support import broker
from tests.support.cli import conformance


def finds_nothing(proto: FuzzProtocol, target: External, cases: int, seed: int = 7) -> None:
    campaign.setup(proto, target, 2.0)
    options = campaign.Options(deadline=1.0, canary_every=100, connections=8)
    rows = campaign.run_range(proto, target, seed, 0, cases, options)
    assert len(rows) == cases
    assert [r for r in rows if r.finding or r.canary == "lost"] == []
    assert sum(r.canary == "ok" for r in rows) == cases // 100


def quirk_found(
    tmp_path: Path,
    protocol: str,
    quirk: str,
    signature: str,
    budget: int,
    *flags: str,
    timeout: float = 300,
) -> tuple[Path, dict[str, Any], dict[Path, dict[str, Any]]]:
    """The reproducer saved for ``signature`` (``FINDING:REQUIREMENT``), its data, and the
    data of every reproducer the campaign saved."""
    proc = conformance(
        tmp_path, "fuzz", "-q", "--protocol", protocol, *flags, "--deadline", "0.3",
        "--cases", str(budget), "--quirk", quirk, timeout=timeout,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert signature in proc.stderr, proc.stderr
    paths = sorted((tmp_path / "fuzz" / "findings").glob("*.yaml"))
    found = {p: yaml.safe_load(p.read_text()) for p in paths}
    finding = signature.split(":")[0]
    ours = [(p, f) for p, f in found.items() if f["finding"] == finding]
    assert ours, found
    path, repro = ours[0]
    assert repro["broker_quirks"] == [quirk]
    assert repro["minimized"] is True
    return path, repro, found


def replays(
    tmp_path: Path, path: Path, protocol: str, *flags: str, clean: tuple[str, ...] = ()
) -> None:
    """``path`` REPRODUCES on the embedded broker with its quirk (``flags`` given to
    ``replay``), and does not on a clean broker started with ``clean``."""
    replay = conformance(tmp_path, "replay", str(path), *flags, timeout=120)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "REPRODUCES" in replay.stdout
    good = broker.start(*clean, protocol=protocol)
    try:
        replay = conformance(tmp_path, "replay", str(path), "--target", good.address)
    finally:
        good.stop()
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "does not reproduce" in replay.stdout
