"""Campaign rows on disk (Parquet) and the triage of their findings, for local campaigns.

The Spark runner writes the same Parquet layout and triages with Spark SQL
(:mod:`conformance.fuzz.spark`); both produce the same triage rows: one per
(signature, finding, mutator, requirement) with a count and the first case index.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from conformance.fuzz.campaign import Row

if TYPE_CHECKING:
    import pyarrow as pa

PARQUET = "cases.parquet"
CANARY = "(canary)"


_ARROW_TYPES = {
    "int": "int64",
    "float": "float64",
    "str": "string",
    "bytes": "binary",
    "bool": "bool_",
}
"""pyarrow type constructors for the annotations of :class:`Row`'s fields."""


def arrow_schema() -> pa.Schema:
    """The Parquet schema of :class:`Row`: one column per field, in order."""
    import pyarrow as pa

    columns = []
    for f in fields(Row):
        kind = _ARROW_TYPES.get(str(f.type))
        if kind is None:
            raise TypeError(f"Row.{f.name} has type {f.type!r}, which has no Parquet column type")
        columns.append(pa.field(f.name, getattr(pa, kind)(), nullable=False))
    return pa.schema(columns)


def write_parquet(rows: list[Row], folder: Path) -> Path:
    """Write ``rows`` to ``folder/cases.parquet``, replacing it whole (never half-written)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema()
    table = pa.table({n: [getattr(r, n) for r in rows] for n in schema.names}, schema=schema)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / PARQUET
    partial = path.with_name(path.name + ".partial")
    pq.write_table(table, partial)
    if path.is_dir():  # left by a Spark writer
        shutil.rmtree(path)
    os.replace(partial, path)
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
