"""The two Cursus layouts as objects: what a revision's codec is, for code that takes a revision.

``layout("doc")`` is the document's codec (codec.py), ``layout("real")`` the real broker's and
official client's (real_codec.py, FACTS.md).  Each gives the frame limit and the payload
functions both ways; framing itself (``[u32 BE length][payload]``) is the same in both.  The
codecs know nothing of sockets; the front-end, the vectors and the fuzzer pick one by revision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.protocols.cursus import codec, real_codec, real_vectors
from conformance.protocols.cursus.messages import FRAME_LIMIT, Batch
from conformance.protocols.cursus.real_messages import REAL_FRAME_LIMIT


@dataclass(frozen=True)
class Layout:
    revision: str
    frame_limit: int
    decode_request: Callable[[bytes], Any]
    """A payload sent to a broker as that revision's broker reads it; CursusError if refused."""
    encode_request: Callable[[Any], bytes]
    decode_reply: Callable[[bytes], Any]
    encode_reply: Callable[[Any], bytes]
    encode_batch: Callable[[Batch], bytes]
    decode_batch: Callable[[bytes], Batch]
    is_batch: Callable[[bytes], bool]


DOC = Layout(
    "doc",
    FRAME_LIMIT,
    codec.decode_request,
    codec.encode_request,
    codec.decode_reply,
    codec.encode_reply,
    codec.encode_batch,
    codec.decode_batch,
    codec.is_batch,
)

REAL = Layout(
    "real",
    REAL_FRAME_LIMIT,
    real_vectors.decode_request,
    lambda req: real_vectors.encode(req, "request"),
    real_codec.decode_reply,
    real_codec.encode_reply,
    real_codec.encode_batch,
    real_codec.decode_batch,
    real_codec.is_batch,
)

LAYOUTS = {layout.revision: layout for layout in (DOC, REAL)}


def layout(revision: str) -> Layout:
    """The layout of ``revision`` (KeyError naming the known ones otherwise)."""
    try:
        return LAYOUTS[revision]
    except KeyError:
        raise KeyError(
            f"Cursus has no revision {revision!r}; known: {', '.join(LAYOUTS)}"
        ) from None
