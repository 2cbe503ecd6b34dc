"""Kafka's record compression codecs, bounded: gzip, snappy, lz4 and zstd.

Sans-IO helpers for :mod:`conformance.protocols.kafka.records`: :func:`compress` and
:func:`decompress` take and give bytes.  The codec numbers are those of the batch
attributes (bits 0-2): 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.

Decompression never produces more than ``limit`` bytes (64 MiB by default): output is
read in bounded steps, or checked against a declared size before it is allocated, so a
compression bomb costs at most the limit.  Every failure is a :class:`ProtocolError`.

* gzip: the standard library's ``zlib`` (gzip container; several members are read).
* snappy: ``cramjam`` raw snappy; decoding also reads the xerial framing that Kafka's
  Java client writes (``\\x82SNAPPY\\x00``, two int32, then int32-length blocks).
* lz4: the frame format with independent blocks, as Kafka wants for magic 1 and 2;
  magic 0 wrote a wrong header checksum, which ``legacy_lz4`` repairs before decoding.
  Bytes after the frame's end mark are ignored, as Kafka's Java reader does.
* zstd: one or more frames.  A truncated frame whose size is not declared decodes to
  the bytes before the cut (the reader cannot tell); the records layer then finds
  records missing.

lz4 and zstd use the ``lz4`` and ``zstandard`` packages when installed: measured on
Python 3.11, they cost 0.3-1.3 us per small call where ``cramjam`` costs 3-10 us (it
builds a fresh context per call), and are as fast or faster on megabytes.  Without them
``cramjam`` does the work (its lz4 with independent blocks), with the same bounds.
"""

from __future__ import annotations

import threading
import zlib
from typing import Any

import cramjam

from conformance.errors import ProtocolError

try:
    import lz4.frame as _lz4
except ImportError:  # pragma: no cover - exercised by forcing the fallback in tests
    _lz4 = None
try:
    import zstandard as _zstd
except ImportError:  # pragma: no cover
    _zstd = None  # type: ignore[assignment]

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
MAX_DECOMPRESSED = 64 << 20
"""Default bound on one batch's decompressed size."""

_XERIAL = b"\x82SNAPPY\x00"
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_STEP = 1 << 20  # bounded streaming reads, one MiB at a time
_local = threading.local()  # zstandard contexts are not to be shared between threads


def backends() -> dict[str, str]:
    """The library each codec runs on, here."""
    lz4, zstd = ("lz4" if _lz4 else "cramjam"), ("zstandard" if _zstd else "cramjam")
    return {"gzip": "zlib", "snappy": "cramjam", "lz4": lz4, "zstd": zstd}


def compress(codec: int, data: bytes, level: int | None = None) -> bytes:
    """``data`` compressed with ``codec`` (1-4); ``level`` None is the codec's default
    (gzip 6 as Kafka's Java client, lz4 0, zstd 3)."""
    if codec == GZIP:
        return zlib.compress(data, -1 if level is None else level, wbits=31)
    if codec == SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == LZ4:
        if _lz4 is not None:
            return bytes(_lz4.compress(data, compression_level=level or 0, block_linked=False))
        c = cramjam.lz4.Compressor(level=level, block_linked=False)
        c.compress(data)
        return bytes(c.finish())
    if codec == ZSTD:
        zlevel = 3 if level is None else level
        if _zstd is None:
            return bytes(cramjam.zstd.compress(data, level=zlevel))
        cache = _local.__dict__.setdefault("zc", {})
        ctx = cache.get(zlevel) or cache.setdefault(zlevel, _zstd.ZstdCompressor(level=zlevel))
        return bytes(ctx.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


def decompress(
    codec: int, data: bytes, *, limit: int = MAX_DECOMPRESSED, legacy_lz4: bool = False
) -> bytes:
    """``data`` decompressed; a ProtocolError if it is corrupt, truncated, or longer
    than ``limit`` bytes once decompressed (refused before that much is allocated)."""
    try:
        if codec == GZIP:
            return _gunzip(data, limit)
        if codec == SNAPPY:
            return _unsnappy(data, limit)
        if codec == LZ4:
            if legacy_lz4:
                data = _fix_lz4_checksum(data)
            return _unlz4(data, limit) if _lz4 is not None else _into(cramjam.lz4, data, limit)
        if codec == ZSTD:
            return _unzstd(data, limit) if _zstd is not None else _into(cramjam.zstd, data, limit)
    except ProtocolError:
        raise
    except Exception as exc:  # each library has its own error types; all mean corrupt
        raise ProtocolError(f"{NAMES[codec]} data does not decompress: {exc}") from exc
    raise ProtocolError(f"unknown compression codec {codec}")


class TooLarge(ProtocolError):
    """Compressed data that decompresses to more than the limit allows."""


def _too_big(codec: str, limit: int) -> ProtocolError:
    return TooLarge(f"{codec} data decompresses to more than {limit} bytes")


def _gunzip(data: bytes, limit: int) -> bytes:
    parts: list[bytes] = []
    total, d = 0, zlib.decompressobj(31)
    while True:  # a step at most per call; a new decompressor per gzip member
        part = d.decompress(data, _STEP)
        parts.append(part)
        total += len(part)
        if total > limit:
            raise _too_big("gzip", limit)
        if d.eof:
            data, d = d.unused_data, zlib.decompressobj(31)
            if not data:
                return parts[0] if len(parts) == 1 else b"".join(parts)
        elif len(part) == _STEP:  # more output may be pending, input or not
            data = d.unconsumed_tail
        else:
            raise ProtocolError("gzip data is truncated")


def _unsnappy(data: bytes, limit: int) -> bytes:
    if data[:8] != _XERIAL:
        return _snappy_block(data, limit)
    if len(data) < 16:
        raise ProtocolError("xerial snappy header is truncated")
    parts: list[bytes] = []
    pos, total = 16, 0
    while pos < len(data):
        size = int.from_bytes(data[pos : pos + 4], "big", signed=True)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise ProtocolError("xerial snappy block is truncated")
        parts.append(_snappy_block(data[pos : pos + size], limit - total))
        total += len(parts[-1])
        pos += size
    return b"".join(parts)


def _snappy_block(data: bytes, limit: int) -> bytes:
    if cramjam.snappy.decompress_raw_len(data) > limit:  # the declared length, first
        raise _too_big("snappy", limit)
    return bytes(cramjam.snappy.decompress_raw(data))


def _unlz4(data: bytes, limit: int) -> bytes:
    assert _lz4 is not None
    if len(data) < 7 or data[:4] != _LZ4_MAGIC or (data[5] >> 4) & 7 < 4:
        raise ProtocolError("not an lz4 frame")
    declared = int.from_bytes(data[6:14], "little") if data[4] & 0x08 else -1
    if declared > limit:  # the library would allocate it at once
        raise _too_big("lz4", limit)
    if (len(data) // 5 + 1) << (8 + 2 * ((data[5] >> 4) & 7)) <= limit >> 1:
        # a block takes 5 bytes or more and gives at most the block size the frame declares
        # (64 KiB-4 MiB): the one-call decoder, 4x faster on small frames, is bounded too
        return bytes(_lz4.decompress(data))
    step = min(max(declared, 1 << 12), limit) + 1 if declared >= 0 else _STEP
    d = _lz4.LZ4FrameDecompressor()
    part = d.decompress(data, max_length=step)
    parts, total = [part], len(part)
    while not d.eof:
        if total > limit:
            raise _too_big("lz4", limit)
        if d.needs_input:
            raise ProtocolError("lz4 frame is truncated")
        part = d.decompress(b"", max_length=step)
        parts.append(part)
        total += len(part)
    if total > limit:
        raise _too_big("lz4", limit)
    return part if len(parts) == 1 else b"".join(parts)


def _unzstd(data: bytes, limit: int) -> bytes:
    assert _zstd is not None
    dctx = _local.__dict__.get("zd") or _local.__dict__.setdefault("zd", _zstd.ZstdDecompressor())
    size = _zstd.frame_content_size(data)
    if size > limit:
        raise _too_big("zstd", limit)
    if size >= 0:  # one frame whose size is declared: decoded into a buffer of that size
        try:
            return bytes(dctx.decompress(data, allow_extra_data=False))
        except _zstd.ZstdError:
            pass  # several frames, or a false size: read it as a stream below
    reader = dctx.stream_reader(data, read_across_frames=True)
    parts: list[bytes] = []
    total = 0
    while part := reader.read(_STEP):
        parts.append(part)
        total += len(part)
        if total > limit:
            raise _too_big("zstd", limit)
    if total < size:  # the reader stops quietly at a truncated frame; the size tells
        raise ProtocolError("zstd frame is truncated")
    return b"".join(parts)


def _into(module: Any, data: bytes, limit: int) -> bytes:
    """cramjam: decompress into buffers of growing size, up to ``limit``."""
    size = min(limit, max(4 * len(data), 1 << 16))
    while True:
        out = bytearray(size + 1)  # one spare byte: a full buffer means "more than size"
        try:
            n = module.decompress_into(data, out)
        except cramjam.DecompressionError as exc:
            if "whole buffer" not in str(exc):
                raise
            n = size + 1
        if n <= size:
            return bytes(memoryview(out)[:n])
        if size >= limit:
            raise _too_big(module.__name__.rsplit(".", 1)[-1], limit)
        size = min(limit, size * 8)


def _fix_lz4_checksum(data: bytes) -> bytes:
    """Kafka's magic-0 lz4 frames carry a wrong header checksum: write the right one."""
    if len(data) < 7 or data[:4] != _LZ4_MAGIC:
        return data  # not an lz4 frame: the decoder says so
    end = 6 + (8 if data[4] & 0x08 else 0) + (4 if data[4] & 0x01 else 0)
    if len(data) <= end:
        return data
    checksum = (_xxh32_short(data[4:end]) >> 8) & 0xFF
    return data[:end] + bytes((checksum,)) + data[end + 1 :]


def _xxh32_short(data: bytes) -> int:
    """xxHash32 (seed 0) of fewer than 16 bytes: the lz4 frame descriptor."""
    p1, p2, p3, p4, p5, mask = 2654435761, 2246822519, 3266489917, 668265263, 374761393, 0xFFFFFFFF
    acc = (p5 + len(data)) & mask
    pos = 0
    while pos + 4 <= len(data):
        acc = (acc + int.from_bytes(data[pos : pos + 4], "little") * p3) & mask
        acc = (((acc << 17) | (acc >> 15)) & mask) * p4 & mask
        pos += 4
    for byte in data[pos:]:
        acc = (acc + byte * p5) & mask
        acc = (((acc << 11) | (acc >> 21)) & mask) * p1 & mask
    acc = ((acc ^ (acc >> 15)) * p2) & mask
    acc = ((acc ^ (acc >> 13)) * p3) & mask
    return acc ^ (acc >> 16)
