"""What the Cursus and Kafka vector tests read from a golden vector's frame (a u32 BE
length prefix that does not count itself).  The deframer checks every vector goes
through (whole, one byte at a time, with trailing bytes) live in
tests/protocols/test_vectors.py, from each plug-in's framing."""

from __future__ import annotations

from conformance.vectors import Vector


def announced(v: Vector) -> int:
    """The payload length the frame's prefix announces."""
    return int.from_bytes(v.frame[:4], "big")
