"""Kafka record batches: our codec against kafka-python's, encode and decode, same records.

``python -m bench.kafka_records [--quick] [--repeats R]`` (or ``python bench/kafka_records.py``).
For batches of 1, 100 and 10,000 records and each compression (none, gzip, snappy, lz4,
zstd), it times, in one process:

* encode, from the same plain values (10-byte keys, 100-byte text values, one 16-byte
  header, timestamps one ms apart) to the batch's bytes: ours is
  :func:`~conformance.protocols.kafka.records.make_batch` then
  :func:`~conformance.protocols.kafka.records.encode_batch`; kafka-python's is
  ``MemoryRecordsBuilder(magic=2, ...)``: ``append`` per record, ``close``, ``buffer``.
* decode, from those bytes to every record's key, value and headers: ours is
  :func:`~conformance.protocols.kafka.records.decode_batches` (which checks the CRC);
  kafka-python's is ``MemoryRecords``, ``next_batch``, ``validate_crc`` (as its consumer
  does with the default ``check_crcs=True``) and iterating each batch.

Each side encodes at kafka-python's levels (gzip 9, lz4 0, zstd 3).  Before timing it
checks interop: each side decodes the other's bytes to the same records, and the
kafka-python batch is really compressed (it sends a batch uncompressed when compression
does not shrink it).  Times are the best of R repeats (ours and kafka-python's
interleaved, garbage collection paused while timing, as :mod:`timeit` does), per op.
The ratio is kafka-python's time over ours: above 1 ours is faster.  "ours in codec" is
the share of our time spent in the compression call alone (timed apart on the same
bytes).  Exit code 1 if any ratio is below 1.0 (the rows are named), 2 if an interop
check fails.  ``--quick``: 3 repeats of ~20 ms per op instead of 7 of ~100 ms.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script too

from kafka import __version__ as kafka_version
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder
from rich.console import Console
from rich.table import Table

from conformance.protocols.kafka import compression
from conformance.protocols.kafka.records import decode_batches, encode_batch, make_batch

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
SIZES = (1, 100, 10_000)
LEVELS = {"gzip": 9}  # kafka-python's gzip level; its lz4 (0) and zstd (3) are our defaults
BASE_TS = 1_700_000_000_000
WORDS = ["user", "order", "click", "view", "cart", "page", "paid", "ship"]  # it compresses
Rows = list[dict[str, Any]]


def dataset(n: int) -> tuple[list[bytes], list[bytes], list[list[tuple[str, bytes]]], list[int]]:
    rng = random.Random(n)
    keys = [b"key-%06d" % i for i in range(n)]
    values = [" ".join(rng.choice(WORDS) for _ in range(30)).encode()[:100].ljust(100, b".")
              for _ in range(n)]  # fmt: skip
    headers = [[("trace-id", rng.randbytes(8).hex().encode())] for _ in range(n)]
    return keys, values, headers, [BASE_TS + i for i in range(n)]


def ours_encode(data: Any, codec: str) -> bytes:
    keys, values, headers, timestamps = data
    batch = make_batch(values, keys=keys, headers=headers, timestamps=timestamps,
                       compression=codec)  # fmt: skip
    return encode_batch(batch, compression_level=LEVELS.get(codec))


def kp_encode(data: Any, codec: str) -> bytes:
    keys, values, headers, timestamps = data
    builder = MemoryRecordsBuilder(2, CODECS.index(codec), 1 << 30)
    append = builder.append
    for i in range(len(values)):
        append(timestamps[i], keys[i], values[i], headers[i])
    builder.close()
    return builder.buffer()  # type: ignore[no-any-return]


def ours_decode(raw: bytes) -> list[tuple[Any, ...]]:
    return [(r.key, r.value, r.headers) for b in decode_batches(raw) for r in b.records]


def kp_decode(raw: bytes) -> list[tuple[Any, ...]]:
    out = []
    records = MemoryRecords(raw)
    while (batch := records.next_batch()) is not None:
        if not batch.validate_crc():
            raise ValueError("CRC mismatch")
        out += [(r.key, r.value, r.headers) for r in batch]
    return out


def as_plain(raw: bytes, ours: bool) -> list[tuple[Any, ...]]:
    """(offset, timestamp, key, value, headers as pairs) of every record, by either side."""
    if ours:
        return [(b.base_offset + r.offset_delta, b.base_timestamp + r.timestamp_delta, r.key,
                 r.value, [(h.key, h.value) for h in r.headers])
                for b in decode_batches(raw) for r in b.records]  # fmt: skip
    out, records = [], MemoryRecords(bytes(raw))
    while (batch := records.next_batch()) is not None:
        out += [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    return out


def interop(data: Any, codec: str) -> list[str]:
    keys, values, headers, timestamps = data
    want = [(i, timestamps[i], keys[i], values[i], headers[i]) for i in range(len(values))]
    problems = []
    ours, theirs = ours_encode(data, codec), bytes(kp_encode(data, codec))
    for label, raw, ours_reads in (
        ("kafka-python reads ours", ours, False), ("ours reads kafka-python's", theirs, True),
        ("ours reads ours", ours, True), ("kafka-python reads its own", theirs, False),
    ):  # fmt: skip
        if as_plain(raw, ours_reads) != want:
            problems.append(label)
    if codec != "none" and theirs[22] & 0x07 == 0:
        problems.append("kafka-python sent it uncompressed")
    return problems


def best(fn: Callable[[], object], iterations: int) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(iterations):
            fn()
        return (time.perf_counter() - start) / iterations
    finally:
        gc.enable()


def measure(size: int, codec: str, repeats: int, budget: float) -> Rows:
    data, code, level = dataset(size), CODECS.index(codec), LEVELS.get(codec)
    ours_raw, kp_raw = ours_encode(data, codec), bytes(kp_encode(data, codec))
    plain, packed = ours_encode(data, "none")[61:], ours_raw[61:]
    pairs: dict[str, tuple[Callable[[], object], Callable[[], object], Callable[[], object]]] = {
        "encode": (lambda: ours_encode(data, codec), lambda: kp_encode(data, codec),
                   lambda: compression.compress(code, plain, level)),
        "decode": (lambda: ours_decode(ours_raw), lambda: kp_decode(kp_raw),
                   lambda: compression.decompress(code, packed)),
    }  # fmt: skip
    rows = []
    for op, (ours, theirs, codec_only) in pairs.items():
        start = time.perf_counter()
        theirs()
        once = time.perf_counter() - start  # iterations so that a repeat takes ~budget
        iterations = max(1, min(5000, int(budget / max(once, 1e-7))))
        times: dict[str, list[float]] = {"ours": [], "kp": [], "codec": []}
        for _ in range(repeats):
            times["ours"].append(best(ours, iterations))
            times["kp"].append(best(theirs, iterations))
            if code:  # our time in the compression library alone, for the same bytes
                times["codec"].append(best(codec_only, iterations))
        t_ours, t_kp = min(times["ours"]), min(times["kp"])
        share = min(times["codec"]) / t_ours if code else 0.0
        rows.append({"size": size, "codec": codec, "op": op, "ours": t_ours, "kp": t_kp,
                     "ratio": t_kp / t_ours, "share": share,
                     "bytes": (len(ours_raw), len(kp_raw))})  # fmt: skip
    return rows


def fmt_bytes(n: int) -> str:
    return f"{n:,}" if n < 100_000 else f"{n / 1000:,.0f}k"


def fmt_time(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:,.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per op (best kept)")
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 7)
    budget = 0.02 if args.quick else 0.1
    console = Console(highlight=False, width=max(100, shutil.get_terminal_size((120, 24))[0]))
    console.print(
        f"Python {platform.python_version()}, kafka-python {kafka_version}; our codecs: "
        + ", ".join(f"{k} {v}" for k, v in compression.backends().items())
        + f"; load average {os.getloadavg()[0]:.2f}; best of {repeats} repeats"
    )
    failed = []
    for codec in CODECS:
        for size in SIZES:
            problems = interop(dataset(size), codec)
            if problems:
                failed.append(f"{size} records, {codec}: " + "; ".join(problems))
    if failed:
        for line in failed:
            console.print(f"[red]interop FAILED[/red] {line}")
        return 2
    console.print("interop: each side decodes the other's bytes to the same records (all rows)")
    started = time.perf_counter()
    rows: Rows = []
    for size in SIZES:
        for codec in CODECS:
            rows += measure(size, codec, repeats, budget)
    table = Table(title="Kafka RecordBatch v2: time per batch (best of repeats)")
    columns = ("records", "codec", "op", "kafka-python", "ours", "kp/ours", "ours in codec",
               "bytes ours/kp")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column in ("codec", "op") else "right")
    for r in rows:
        color = "green" if r["ratio"] >= 1.0 else "red"
        table.add_row(f"{r['size']:,}", r["codec"], r["op"], fmt_time(r["kp"]),
                      fmt_time(r["ours"]), f"[{color}]{r['ratio']:.2f}x[/{color}]",
                      f"{r['share']:.0%}" if r["share"] else "-",
                      "/".join(fmt_bytes(n) for n in r["bytes"]))  # fmt: skip
    console.print(table)
    console.print(
        "ours in codec: the share of our time spent in the compression library alone (the"
        " same call on the same bytes); gzip is level 9 on both sides, kafka-python's level"
    )
    slower = []
    for r in rows:
        name = f"{r['size']:>6,} records {r['codec']:<6} {r['op']}"
        if r["ratio"] >= 1.0:
            console.print(f"{name}: ours {r['ratio']:.2f}x as fast as kafka-python")
        else:
            console.print(
                f"{name}: [red]ours SLOWER[/red], {1 / r['ratio']:.2f}x kafka-python's time"
            )
            slower.append(" ".join(name.split()))
    console.print(f"timed in {time.perf_counter() - started:.1f} s; load average "
                  f"{os.getloadavg()[0]:.2f}")  # fmt: skip
    if slower:
        console.print(f"[red]ours is slower in {len(slower)} rows:[/red] " + "; ".join(slower))
        return 1
    console.print("[green]ours is at least as fast as kafka-python in every row[/green]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
