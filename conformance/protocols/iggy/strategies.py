"""Hypothesis strategies for Iggy's requests and replies, per command and revision,
derived from the declarations (:func:`conformance.wire.schema_strategies.values`).

* :func:`request_values` / :func:`reply_values`: bodies that :mod:`.codec` encodes for
  command ``name`` in ``revision`` (the body shape :func:`.codec.decode_request` gives
  back), all drawn from the declarations; a classic message's ``headers`` are drawn from
  :data:`HEADER_BLOCKS` (:data:`OVERRIDES`), so that they hold entries of every kind.
* :data:`PARTITIONINGS`: every partitioning kind (1 balanced, 2 partition id, 3 messages
  key of 1..255 bytes; FACTS.md section 3); :func:`header_entries` and
  :data:`HEADER_BLOCKS`: user headers of every kind of FACTS.md section 4 (codes 1..15,
  each value of its kind's size, keys unique), encoded as the block a message carries.
* :func:`send_messages`: SEND_MESSAGES bodies with any of those, in either revision.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from conformance.protocols.iggy import codec
from conformance.protocols.iggy.messages import USER_HEADERS, VERSION
from conformance.wire.schema_strategies import values

HEADER_SIZES: dict[int, tuple[int, int]] = {
    1: (1, 255),  # raw
    2: (1, 255),  # string (UTF-8)
    3: (1, 1),  # bool
    4: (1, 1),  # int8
    5: (2, 2),  # int16
    6: (4, 4),  # int32
    7: (8, 8),  # int64
    8: (16, 16),  # int128
    9: (1, 1),  # uint8
    10: (2, 2),  # uint16
    11: (4, 4),  # uint32
    12: (8, 8),  # uint64
    13: (16, 16),  # uint128
    14: (4, 4),  # float32
    15: (8, 8),  # float64
}
"""Each header kind code and the sizes its value may have (FACTS.md section 4)."""


def header_value(kind: int) -> SearchStrategy[bytes]:
    """A value of header ``kind``: its size in bytes (UTF-8 text for a string, 0/1 for a
    bool); a long raw or string value is kept short."""
    low, high = HEADER_SIZES[kind]
    if kind == 2:
        text = st.text(st.characters(codec="utf-8"), min_size=1, max_size=16)
        return text.map(lambda t: t.encode()).filter(lambda b: low <= len(b) <= high)
    if kind == 3:
        return st.sampled_from([b"\x00", b"\x01"])
    return st.binary(min_size=low, max_size=min(high, 32))


def _entry(kind: int, key_kind: int) -> SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "key_kind": st.just(key_kind),
            "key": header_value(key_kind),
            "value_kind": st.just(kind),
            "value": header_value(kind),
        }
    )


def header_entries(max_size: int = 4) -> SearchStrategy[list[dict[str, Any]]]:
    """User-header entries of any kinds (keys mostly strings), unique keys."""
    kinds = st.sampled_from(sorted(HEADER_SIZES))
    key_kinds = st.one_of(st.just(2), kinds)
    entry = st.tuples(kinds, key_kinds).flatmap(lambda k: _entry(*k))
    return st.lists(entry, max_size=max_size, unique_by=lambda e: (e["key_kind"], e["key"]))


def header_block(entries: list[dict[str, Any]]) -> bytes:
    """The user-header block of ``entries`` as a message carries it."""
    return USER_HEADERS.encode({"entries": entries}, VERSION)


HEADER_BLOCKS = header_entries().map(header_block)
"""User-header blocks (empty among them: no headers)."""

OVERRIDES = {"messages.headers": HEADER_BLOCKS}
"""What the declarations cannot say: a message's header block holds valid entries."""

PARTITIONINGS = st.one_of(
    st.just({"kind": 1, "value": {}}),
    st.fixed_dictionaries({"kind": st.just(2), "value": st.integers(0, 2**32 - 1)}),
    st.fixed_dictionaries({"kind": st.just(3), "value": st.binary(min_size=1, max_size=255)}),
)
"""Every partitioning kind, each value valid for it."""


def send_messages(revision: str = "classic") -> SearchStrategy[dict[str, Any]]:
    """SEND_MESSAGES bodies in ``revision`` with every partitioning kind (and in classic
    every header kind)."""
    base = request_values("send_messages", revision)
    return st.builds(lambda v, p: {**v, "partitioning": p}, base, PARTITIONINGS)


def request_values(name: str, revision: str = "classic") -> SearchStrategy[dict[str, Any]]:
    """Bodies of command ``name``'s request in ``revision``."""
    return values(codec.tables(revision)[0][name], VERSION, overrides=OVERRIDES)


def reply_values(name: str, revision: str = "classic") -> SearchStrategy[dict[str, Any]]:
    """Bodies of command ``name``'s reply (status 0, not the empty one) in ``revision``."""
    return values(codec.tables(revision)[1][name], VERSION, overrides=OVERRIDES)
