"""What remains of the hand-coded message batches: nothing of the layout.  Classic
SEND_MESSAGES and the POLL_MESSAGES reply are declared whole in :mod:`.messages`
(:data:`~.messages.MESSAGE`, :data:`~.messages.INDEX_ENTRY`,
:data:`~.messages.USER_HEADERS`); this module keeps the names others import: a message's
int fields and the bytes of one message, which the broker and its tests hash for the
checksum (XXH3-64 of bytes 8.., FACTS.md section 4).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.protocols.iggy.messages import (
    MESSAGE,
    REQUESTS,
    USER_HEADERS,
    VERSION,
)

__all__ = ["HEADER_SIZE", "INT_FIELDS", "MESSAGE", "USER_HEADERS", "encode_message"]

HEADER_SIZE = 64
INT_FIELDS = ("checksum", "id", "offset", "timestamp", "origin_timestamp", "reserved")
"""A message's int fields (0 when left out); ``payload`` and ``headers`` are bytes."""
_CTX = REQUESTS["send_messages"].ctx(VERSION)


def encode_message(out: bytearray, msg: Mapping[str, Any]) -> None:
    """One message (:data:`~.messages.MESSAGE`: header with its lengths computed, payload,
    user headers) appended to ``out``."""
    MESSAGE.encode(out, msg, _CTX)
