"""Several copies of a ``--target-cmd`` target fuzzed at once (``fuzz --instances N``).

A broker that stops or crashes on a large share of its inputs spends most of a campaign
being restarted and having the case that did it replayed, while the fuzzer waits.  With
N copies, each on its own port, a copy is restarted while the others go on.  Each seed
range (:func:`.campaign.seed_ranges`) is cut into N contiguous parts (:func:`parts`); a
worker thread per copy takes the next part and runs it with :func:`.campaign.run_range`,
which restarts that copy after a CRASH or STOPPED and blames the case that did it.  A part
is a range of its own: its rows' ``task`` is its first index, a canary round trip runs
after its last case too, and an event's window (:func:`.events.events`) never reaches into
another copy's cases.  Which cases a seed makes does not depend on N.

A copy that cannot be brought back ends its worker (its part's remaining cases get no
row, as when a single target is lost); the others finish the parts they hold and take no
more.  The callbacks (``on_rows``, ``on_ended``) are called under one lock, so the
command's saver and progress see one batch at a time, with the copy it came from.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from conformance.fuzz.campaign import Options, Row, run_range, seed_ranges
from conformance.fuzz.case import FuzzProtocol
from conformance.fuzz.target import Target


def parts(start: int, stop: int, count: int) -> list[tuple[int, int]]:
    """``[start, stop)`` cut into at most ``count`` contiguous parts, sizes within one."""
    size, extra = divmod(stop - start, max(count, 1))
    out, at = [], start
    for i in range(max(count, 1)):
        end = at + size + (1 if i < extra else 0)
        if end > at:
            out.append((at, end))
        at = end
    return out


def run_copies(
    proto: FuzzProtocol,
    targets: Sequence[Target],
    seed: int,
    cases: int,
    options: Options,
    on_rows: Callable[[list[Row], Target], None],
    until: float | None,
    on_ended: Callable[[int], None],
) -> list[Row]:
    """Rows of cases ``[0, cases)`` run on ``targets`` at once, sorted by index; see the
    module's text.  A lost copy has its ``lost`` set, as :func:`run_range` does."""
    work = [p for a, b in seed_ranges(cases, options) for p in parts(a, b, len(targets))]
    work.reverse()  # popped from the end: in order
    rows: list[Row] = []
    lock = threading.Lock()
    failed: list[BaseException] = []

    def worker(target: Target) -> None:
        def rows_of(batch: list[Row]) -> None:
            with lock:
                on_rows(batch, target)

        def ended(count: int) -> None:
            with lock:
                on_ended(count)

        try:
            while True:
                with lock:
                    late = until is not None and time.monotonic() >= until
                    if late or not work or failed or any(t.lost for t in targets):
                        return
                    start, stop = work.pop()
                got = run_range(proto, target, seed, start, stop, options, rows_of, until, ended)
                with lock:
                    rows.extend(got)
                if target.lost:
                    return
        except BaseException as exc:  # raised in the caller's thread, below
            with lock:
                failed.append(exc)

    threads = [
        threading.Thread(target=worker, args=(t,), name=f"fuzz-copy-{i}", daemon=True)
        for i, t in enumerate(targets)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    return sorted(rows, key=lambda r: r.index)
