"""Exit codes and the usage error, shared by every command.

Exit codes, the same for ``run``, ``serve``, ``fuzz`` and ``replay``: 0 clean; 1 a FAIL,
ERROR or finding; 2 a usage error, an unreachable target, or a broker that failed to
start.  A :class:`UsageError` raised anywhere below the command line is printed by
:mod:`conformance.cli` as one line on stderr, without a traceback, and ends in exit 2.
This module sits below everything so that nothing has to import ``cli.py`` back.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""
