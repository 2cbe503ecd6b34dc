"""Run the installed ``conformance`` command in a subprocess, as a user would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def conformance(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m conformance ARGS`` in ``cwd``, its output captured, within ``timeout`` s."""
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )
