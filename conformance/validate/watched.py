"""The checking front-end's deframer: the protocol's own, watched.

It hands out the frames the protocol's deframer finds and remembers, for each, the bytes
the client really sent for it (:meth:`WatchedDeframer.sent`): a request whose length field
lies shows in the report with that length, not with the one a frame made again from its
payload would have.  Only the few bytes a framing adds around a payload are kept (the first
:data:`HEAD` bytes of a frame still arriving), never a second copy of a large frame.

It also keeps the last bytes fed (``tail``), which a framing violation shows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from conformance.errors import ProtocolError
from conformance.wire.framing import Deframer, Framing, LineDeframer

HEAD = 64
"""Bytes kept of the start of a frame still arriving (its length prefix is in them)."""
KEPT = 256
"""Frames whose sent bytes wait for the session to ask (frames of a read not yet handled)."""

Reader = Callable[[int, int], "bytes | None"]
"""Bytes ``[a, b)`` of what a read completed, or None when they were not kept."""


class WatchedDeframer:
    def __init__(self, inner: Deframer, framing: Framing) -> None:
        self.inner = inner
        self.framing = framing
        self.tail = b""
        """The last bytes fed (what a framing violation shows)."""
        self._head = b""
        """The first :data:`HEAD` bytes of the frame still arriving."""
        self._held = 0
        """Bytes of the frame still arriving (its length prefix included: the protocol's
        deframer may count only what follows it)."""
        self._sent: deque[tuple[bytes, bytes | None]] = deque(maxlen=KEPT)

    @property
    def error(self) -> ProtocolError | None:
        return self.inner.error

    @property
    def buffered(self) -> int:
        return self.inner.buffered

    def feed(self, data: bytes) -> list[bytes]:
        self.tail = (self.tail + data)[-256:]
        held, head = self._held, self._head
        frames = self.inner.feed(data)
        region = held + len(data)  # the bytes of the frames found, then of the next one
        sizes = getattr(self.inner, "sizes", None)  # what each frame took on the wire
        whole = isinstance(sizes, list) and len(sizes) == len(frames)
        rest = region - sum(sizes) if whole and sizes is not None else 0

        def cut(a: int, b: int) -> bytes | None:
            """Bytes [a, b) of the region, if kept: the held part from ``head``."""
            if a >= held:
                return data[a - held : b - held]
            if b > held:
                first = cut(a, held)
                return None if first is None else first + data[: b - held]
            return head[a:b] if b <= len(head) else None

        start = 0
        for i, payload in enumerate(frames):
            size = sizes[i] if whole and sizes is not None else 0
            self._sent.append(
                (payload, self._as_sent(payload, start, size, cut) if whole else None)
            )
            start += size
        self._held = rest if whole else self.inner.buffered
        if not whole:
            self._head = b""
        elif not frames:  # the same frame goes on arriving: its head grows up to HEAD
            self._head = (head + data)[:HEAD] if len(head) < HEAD else head
        else:  # a new frame began inside ``data``
            self._head = data[len(data) - rest :][:HEAD]
        return frames

    def _as_sent(self, payload: bytes, start: int, size: int, cut: Reader) -> bytes | None:
        """What the client sent for ``payload``: a line and its terminator, or a length
        field (after the ``lead`` bytes handed out at the payload's front) and the rest."""
        extra = size - len(payload)
        if isinstance(self.inner, LineDeframer):
            after = cut(start + len(payload), start + size)
            return None if after is None else payload + after
        lead = getattr(self.inner, "lead", 0)
        field = cut(start + lead, start + lead + extra)
        return None if field is None else payload[:lead] + field + payload[lead:]

    def sent(self, payload: bytes) -> bytes:
        """The bytes the client sent for ``payload``, the next frame handed out (the frame
        made again from it when they are not known)."""
        while self._sent:
            got, raw = self._sent.popleft()
            if got is payload or got == payload:
                return raw if raw is not None else self.framing.frame(payload, "request")
        return self.framing.frame(payload, "request")
