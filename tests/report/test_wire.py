"""The wire-log helpers every report shares: the decisive frame and the offending fields."""

from __future__ import annotations

from typing import Any

from conformance.plugin import ErrorCodes
from conformance.report import wire

ERRORS = ErrorCodes("error_code", {0: "NONE", 37: "INVALID_PARTITIONS"})


def _entry(direction: str, data: bytes, fields: list[list[Any]] | None = None) -> dict[str, Any]:
    return {"t": 0.1, "conn": 1, "dir": direction, "len": len(data), "hex": data.hex(),
            "summary": direction, "fields": fields or []}  # fmt: skip


def test_the_decisive_frame_is_the_last_received_else_the_last_sent() -> None:
    log = [_entry("send", b"a"), _entry("recv", b"b"), _entry("send", b"c"), _entry("event", b"")]
    assert wire.decisive({"wire_log": log}).data == b"b"  # type: ignore[union-attr]
    assert wire.decisive({"wire_log": log[:1] + log[3:]}).data == b"a"  # type: ignore[union-attr]
    assert wire.decisive({"wire_log": log[3:]}).dir == "event"  # type: ignore[union-attr]
    assert wire.decisive({"wire_log": []}) is None


def test_offending_fields_are_those_the_reason_names() -> None:
    fields = [
        ["responses[0].partitions[0].high_watermark", 0, 8, 4],
        ["responses[0].partitions[0].error_code", 8, 10, 0],
        ["topics[1].error_code", 10, 12, 37],
        ["last_offset", 12, 13, 3],
        ["id", 13, 14, 1],
    ]
    e = wire.entry(_entry("recv", bytes(14), fields), ERRORS)

    def named(message: str) -> set[str]:
        return wire.offending({"message": message}, e, ERRORS)

    assert named("Fetch v0: high watermark 4, expected 3") == {fields[0][0]}
    assert named("last_offset 3, expected 2") == {"last_offset"}
    assert named("0 partitions: NONE (0), expected INVALID_PARTITIONS (37)") == {fields[1][0]}
    assert named("got INVALID_PARTITIONS (37)") == {"topics[1].error_code"}
    assert named("the id was wrong") == {"id"}
    assert named("topics[1] was refused") == set()  # "topics" is no field's last part
    assert named("") == set()


def test_the_protocol_names_its_error_code_fields() -> None:
    fields = [["error_code", 0, 2, 37], ["status", 2, 4, 37], ["error_code", 4, 6, 99]]
    e = wire.entry(_entry("recv", bytes(6), fields), ERRORS)
    assert [f.value for f in e.fields] == ["37 INVALID_PARTITIONS", "37", "99 (unknown code)"]
    plain = wire.entry(_entry("recv", bytes(6), fields))  # a protocol without numeric errors
    assert [f.value for f in plain.fields] == ["37", "37", "99"]
    assert wire.offending({"message": "got INVALID_PARTITIONS (37)"}, plain) == set()
    assert wire.error_codes({"protocol": "kafka"}) is not None
    assert wire.error_codes({"protocol": "cursus"}) is None
    assert wire.error_codes({"protocol": "no-such-protocol"}) is None
