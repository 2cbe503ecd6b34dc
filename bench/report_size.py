"""Report sizes: what a run writes, with passing cases' wire logs compact and with ``--wire-full``.

``python -m bench.report_size [--protocol kafka] [--revision apache] [--quirk NAME ...]``
runs ``conformance run`` twice against the embedded broker, in the same way, once by
default (passing and UNSUPPORTED cases keep one line per frame) and once with
``--wire-full`` (every case keeps its bytes and fields), and prints the bytes of each
report file of both runs and the ratio default/full.  Quirks make some cases fail, whose
evidence both runs keep whole.  The default quirks give a run with failures in several
areas.  Each run's reports go to a temporary folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script too

from rich.console import Console
from rich.table import Table

QUIRKS = ["latest-offset-off-by-one", "high-watermark-off-by-one", "close-on-malformed-batch"]


def sizes(folder: Path) -> dict[str, int]:
    """Bytes per report file; a folder (allure-results) counts all its files."""
    out: dict[str, int] = {}
    for item in sorted(folder.iterdir()):
        if item.is_dir():
            out[item.name + "/"] = sum(f.stat().st_size for f in item.rglob("*") if f.is_file())
        elif item.name != "broker.log":
            out[item.name] = item.stat().st_size
    out["total"] = sum(out.values())
    return out


def run(protocol: str, revision: str, quirks: list[str], reports: Path, full: bool) -> str:
    cmd = [sys.executable, "-m", "conformance", "run", "--protocol", protocol, "--revision",
           revision, "--reports", str(reports), "-q"]  # fmt: skip
    for q in quirks:
        cmd += ["--quirk", q]
    if full:
        cmd.append("--wire-full")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if done.returncode not in (0, 1):
        sys.exit(f"conformance run failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", default="kafka")
    ap.add_argument("--revision", default="apache")
    ap.add_argument("--quirk", action="append", help=f"default: {', '.join(QUIRKS)}")
    args = ap.parse_args()
    quirks = args.quirk if args.quirk is not None else QUIRKS
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        compact_line = run(args.protocol, args.revision, quirks, Path(tmp) / "compact", False)
        full_line = run(args.protocol, args.revision, quirks, Path(tmp) / "full", True)
        compact, full = sizes(Path(tmp) / "compact"), sizes(Path(tmp) / "full")
    console.print(f"default:     {compact_line}", highlight=False)
    console.print(f"--wire-full: {full_line}", highlight=False)
    table = Table(title=f"report sizes, {args.protocol} {args.revision}, quirks {quirks}")
    for col in ("file", "default (bytes)", "--wire-full (bytes)", "default / full"):
        table.add_column(col, justify="left" if col == "file" else "right")
    for name in [*(n for n in full if n != "total"), "total"]:
        a, b = compact.get(name, 0), full.get(name, 0)
        table.add_row(name, f"{a:,}", f"{b:,}", f"{a / b:.2f}" if b else "-")
    console.print(table)


if __name__ == "__main__":
    main()
