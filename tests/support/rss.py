"""Peak resident memory of a running process, read from ``/proc`` while it lives."""

from __future__ import annotations

import threading
import time
from pathlib import Path


def watch_peak(pid: int, done: threading.Event, peak: list[float]) -> None:
    """Until ``done`` is set or the process is gone, keep ``peak[0]`` at its VmHWM in MB."""
    while not done.is_set():
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak[0] = max(peak[0], int(line.split()[1]) / 1024)
        except (OSError, ValueError):
            return
        time.sleep(0.05)
