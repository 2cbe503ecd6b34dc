"""Campaign rows on disk (Parquet) and the triage of their findings, for local campaigns.

The Spark runner writes the same Parquet layout and triages with Spark SQL
(:mod:`conformance.fuzz.spark`); both produce the same triage rows: one per
(signature, finding, mutator, requirement) with a count and the first case index.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from conformance.fuzz.campaign import Row

PARQUET = "cases.parquet"
CANARY = "(canary)"


def write_parquet(rows: list[Row], folder: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("index", pa.int64()),
            ("task", pa.int64()),
            ("mutator", pa.string()),
            ("mode", pa.string()),
            ("sent", pa.binary()),
            ("writes", pa.int64()),
            ("outcome", pa.string()),
            ("replies", pa.int64()),
            ("finding", pa.string()),
            ("requirement", pa.string()),
            ("canary", pa.string()),
            ("leak", pa.bool_()),
            ("latency_ms", pa.float64()),
            ("rss_mb", pa.float64()),
        ]
    )
    assert schema.names == Row.names()
    table = pa.Table.from_pylist([r.as_dict() for r in rows], schema=schema)
    path = folder / PARQUET
    pq.write_table(table, path)
    return path


def triage(
    rows: list[Row], corruption_requirement: str, leak_requirement: str
) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[int]] = {}
    for r in rows:
        found = []
        if r.finding:
            found.append((r.finding, r.requirement))
        if r.canary == "lost":
            found.append(("CORRUPTION", corruption_requirement))
        if r.leak:
            found.append(("LEAK", leak_requirement))
        for finding, req in found:
            # a canary finding is not the fault of the case it ran after: its reproducer
            # names the culprit
            mutator = CANARY if finding in ("CORRUPTION", "LEAK") else r.mutator
            groups.setdefault((finding, mutator, req), []).append(r.index)
    out = [
        {
            "signature": f"{finding}:{req}",
            "finding": finding,
            "mutator": mutator,
            "requirement": req,
            "count": len(idx),
            "first_index": min(idx),
        }
        for (finding, mutator, req), idx in groups.items()
    ]
    return sorted(out, key=lambda d: (d["finding"], -d["count"], d["mutator"]))


def print_triage(triaged: list[dict[str, Any]], saved: dict[str, Path], console: Console) -> None:
    if not triaged:
        console.print("no finding")
        return
    table = Table(title="findings by signature, mutator and requirement")
    for col in ("signature", "mutator", "cases", "first case"):
        table.add_column(col)
    for t in triaged:
        table.add_row(
            str(t["signature"]), str(t["mutator"]), str(t["count"]), str(t["first_index"])
        )
    console.print(table)
    for sig, path in saved.items():
        console.print(f"reproducer for {sig}: {path}")
