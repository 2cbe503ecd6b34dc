"""The durable journal: one append-only file of operations per data directory.

Layout: the 8-byte magic ``BCJRNL01``, then records ``[u32 LE length][u32 LE crc32]
[payload]``, each written by one ``os.write`` call (the file is opened O_APPEND), so an
acknowledged operation is in the page cache when ``write`` returns and survives ``kill -9``;
with ``fsync=True`` every write is also fsynced.  On open the records are replayed in order; a
torn or corrupt tail (short record, bad checksum, zero length) is cut off, and everything
before it stays.  A record whose checksum holds but whose payload this version cannot decode
stops the open with JournalError instead: that file was written by something else.

A lock file (``engine.lock``, flock) keeps two engines off one directory.  ``rewrite``
replaces the journal by a compacted one atomically (write aside, fsync, rename).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from conformance.engine.ops import DecodeError, Op, decode, encode

MAGIC = b"BCJRNL01"
JOURNAL_FILE = "engine.journal"
LOCK_FILE = "engine.lock"
_HEAD = struct.Struct("<II")


class JournalError(OSError):
    """The data directory cannot be used (in use, or holds a file this engine cannot read)."""

    def __init__(self, message: str, err: int = errno.EINVAL) -> None:
        super().__init__(err, message)

    def __str__(self) -> str:
        return str(self.strerror)


def frame(payload: bytes) -> bytes:
    return _HEAD.pack(len(payload), zlib.crc32(payload)) + payload


@dataclass
class ReplayStats:
    operations: int = 0
    truncated_bytes: int = 0


class Journal:
    def __init__(self, data_dir: str, *, fsync: bool = False) -> None:
        self.data_dir = data_dir
        self.path = os.path.join(data_dir, JOURNAL_FILE)
        self.fsync = fsync
        os.makedirs(data_dir, exist_ok=True)
        self._lock = os.open(os.path.join(data_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            raise JournalError(f"{data_dir} is in use by another engine", errno.EBUSY) from None
        self._fd: int | None = None

    # ------------------------------------------------------------------ opening

    def replay(self, apply: Callable[[Op], None]) -> ReplayStats:
        """Apply every intact operation in order, cut off a torn tail, open for appending."""
        try:
            return self._replay(apply)
        except BaseException:
            self.close()
            raise

    def _replay(self, apply: Callable[[Op], None]) -> ReplayStats:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self._fd = fd
        with open(self.path, "rb") as f:
            data = f.read()
        stats = ReplayStats()
        if len(data) < len(MAGIC) and MAGIC.startswith(data):
            os.ftruncate(fd, 0)  # new, or torn while it was being created
            self._write_all(MAGIC)
            self._sync_dir()
            return stats
        if not data.startswith(MAGIC):
            raise JournalError(f"{self.path} is not a journal of this engine (bad magic)")
        pos, end = len(MAGIC), len(data)
        while pos + _HEAD.size <= end:
            length, crc = _HEAD.unpack_from(data, pos)
            start = pos + _HEAD.size
            if length == 0 or start + length > end:
                break
            payload = data[start : start + length]
            if zlib.crc32(payload) != crc:
                break
            try:
                op = decode(payload)
            except DecodeError as exc:
                raise JournalError(
                    f"{self.path}: the record at byte {pos} is intact but unreadable ({exc}); "
                    "was it written by another version?"
                ) from None
            apply(op)
            stats.operations += 1
            pos = start + length
        if pos < end:
            stats.truncated_bytes = end - pos
            os.ftruncate(fd, pos)
            if self.fsync:
                os.fsync(fd)
        return stats

    # ------------------------------------------------------------------ writing

    def write(self, op: Op) -> None:
        self._write_all(frame(encode(op)))
        if self.fsync:
            assert self._fd is not None
            os.fsync(self._fd)

    def sync(self) -> None:
        """Force what was written to disk (a no-op write-wise: ``fsync`` of the journal)."""
        if self._fd is None:
            raise JournalError(f"the journal {self.path} is closed", errno.EBADF)
        os.fsync(self._fd)

    def _write_all(self, data: bytes) -> None:
        if self._fd is None:
            raise JournalError(f"the journal {self.path} is closed", errno.EBADF)
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def rewrite(self, ops: Iterable[Op]) -> None:
        """Replace the journal with one holding exactly ``ops`` (atomically)."""
        tmp = self.path + ".compact"
        with open(tmp, "wb") as f:
            f.write(MAGIC)
            for op in ops:
                f.write(frame(encode(op)))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._sync_dir()
        if self._fd is not None:
            os.close(self._fd)
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND)

    def _sync_dir(self) -> None:
        dir_fd = os.open(self.data_dir, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def size(self) -> int:
        return os.path.getsize(self.path)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock, fcntl.LOCK_UN)
            os.close(self._lock)
            self._lock = -1
