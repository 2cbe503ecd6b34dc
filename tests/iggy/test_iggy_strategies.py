"""Round-trip properties of Iggy's codec over the derived strategies
(:mod:`conformance.protocols.iggy.strategies`): every request and every reply of both
revisions decodes to the body it was encoded from, and SEND_MESSAGES carries every
partitioning kind and every user-header kind."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.protocols.iggy import codec, strategies
from conformance.protocols.iggy.batch import USER_HEADERS
from conformance.protocols.iggy.messages import CODES
from conformance.protocols.iggy.replies import OPTIONAL_REPLIES

FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
COMMANDS = [(n, r) for r in codec.REVISIONS for n in sorted(codec.tables(r)[0])]
REPLIES = [(n, r) for r in codec.REVISIONS for n in sorted(codec.tables(r)[1])]


@pytest.mark.parametrize(("name", "revision"), COMMANDS, ids=[f"{r}-{n}" for n, r in COMMANDS])
@FEW
@given(data=st.data())
def test_a_drawn_request_round_trips(name: str, revision: str, data: st.DataObject) -> None:
    body = data.draw(strategies.request_values(name, revision))
    payload = codec.encode_request(name, body, revision)
    frame = codec.frame_request(CODES[name], payload)[4:]
    assert codec.decode_request(frame, revision) == (name, body)
    assert codec.encode_request(name, codec.decode_request(frame, revision)[1], revision) == (
        payload
    )


@pytest.mark.parametrize(("name", "revision"), REPLIES, ids=[f"{r}-{n}" for n, r in REPLIES])
@FEW
@given(data=st.data())
def test_a_drawn_reply_round_trips(name: str, revision: str, data: st.DataObject) -> None:
    body = data.draw(strategies.reply_values(name, revision))
    payload = codec.encode_reply(name, body, revision)
    if name in OPTIONAL_REPLIES and not payload:
        return  # an empty body encodes as the not-found reply
    assert codec.decode_reply(name, payload, revision) == body


@pytest.mark.parametrize("revision", codec.REVISIONS)
@FEW
@given(data=st.data())
def test_send_messages_with_any_partitioning_and_headers(
    revision: str, data: st.DataObject
) -> None:
    body = data.draw(strategies.send_messages(revision))
    assert body["partitioning"]["kind"] in (1, 2, 3)
    payload = codec.encode_request("send_messages", body, revision)
    assert codec.decode_request_payload("send_messages", payload, revision) == body
    for msg in body["messages"]:
        entries = USER_HEADERS.decode(msg.get("headers", b""), 0)["entries"]
        for entry in entries:
            low, high = strategies.HEADER_SIZES[entry["value_kind"]]
            assert low <= len(entry["value"]) <= high


def test_every_header_kind_and_partitioning_kind_is_drawn() -> None:
    kinds: set[int] = set()
    partitionings: set[int] = set()

    @settings(max_examples=300, deadline=None, database=None)
    @given(
        entries=strategies.header_entries(max_size=8),
        partitioning=strategies.PARTITIONINGS,
    )
    def collect(entries: list[dict[str, Any]], partitioning: dict[str, Any]) -> None:
        kinds.update(e["value_kind"] for e in entries)
        partitionings.add(partitioning["kind"])
        block = strategies.header_block(entries)
        assert USER_HEADERS.decode(block, 0) == {"entries": entries}

    collect()
    assert kinds == set(strategies.HEADER_SIZES)
    assert partitionings == {1, 2, 3}
