"""Loopback ports for the targets the tool starts, and who listens on one.

A port is picked for each start and handed to the user's command, which binds it later
(after its own start-up: a JVM, a broker behind a proxy).  Between the pick and the bind
another process can take the port: a client's connection (connect() takes its local port
from the kernel's ephemeral range) or another tool that picked the same one.  Then the
start-up probe is answered by a stranger, and every case after it talks to the wrong
broker.  Two things keep that from happening:

* :func:`free_port` picks at random *below* the ephemeral range (``ip_local_port_range``),
  where no connection takes its local port, a port that binds and where nothing answers;
* :func:`stranger_listens` tells, where ``/proc`` shows it, that the process listening on
  the port is older than the target just started, so it cannot be one the command started
  (a process the target starts, a container's proxy, is younger and is taken as the
  target's).
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
from pathlib import Path

PORT_FLOOR = 10000
"""Ports below this are left alone (well-known and registered services)."""
PICK_TRIES = 64
_PROC = Path("/proc")
_PICK = random.SystemRandom()
"""Not the ``random`` module's generator: a campaign may seed it, and two campaigns of one
seed would then pick the same ports."""


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range of local ports for connections (Linux's default if unknown)."""
    try:
        low, high = (Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())[:2]
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def _free(port: int) -> bool:
    """Whether ``port`` binds on loopback now and nothing answers on it."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) != 0


def free_port() -> int:
    """A loopback port nothing uses, below the ephemeral range where there is room."""
    low, _ = ephemeral_range()
    if low - PORT_FLOOR >= 1000:
        for _ in range(PICK_TRIES):
            port = _PICK.randrange(PORT_FLOOR, low)
            if _free(port):
                return port
    with socket.socket() as s:  # no room below it: the kernel's pick
        s.bind(("127.0.0.1", 0))
        picked: int = s.getsockname()[1]
        return picked


def _listening_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in (_PROC / "net" / table).read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) > 9 and fields[3] == "0A" and fields[1].endswith(f":{port:04X}"):
                    inodes.add(fields[9])
    return inodes


def _start_ticks(pid: int) -> int | None:
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])  # field 22: start time since boot
    except (OSError, ValueError, IndexError):
        return None


def listener_pids(port: int) -> set[int] | None:
    """The processes with a socket listening on ``port``; None where ``/proc`` cannot tell."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    wanted = {f"socket:[{i}]" for i in inodes}
    pids = set()
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in wanted:
                        pids.add(int(entry.name))
                        break
    return pids or None


def stranger_listens(port: int, pid: int) -> bool:
    """Whether what listens on ``port`` is known to be older than process ``pid`` (so not
    started by it); False when it cannot be told."""
    mine = _start_ticks(pid)
    owners = listener_pids(port)
    if mine is None or not owners:
        return False
    started = [t for t in map(_start_ticks, owners) if t is not None]
    return bool(started) and all(t < mine for t in started)


__all__ = ["ephemeral_range", "free_port", "listener_pids", "stranger_listens"]
