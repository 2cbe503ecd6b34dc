"""The wire-log helpers every report shares: evidence as the check named it, compact logs,
hex spans and magic numbers in hex."""

from __future__ import annotations

from typing import Any

from conformance.plugin import ErrorCodes
from conformance.report import wire
from tests.report.evidence_sample import fetch_case, with_evidence

ERRORS = ErrorCodes("error_code", {0: "NONE", 37: "INVALID_PARTITIONS"})


def _entry(direction: str, data: bytes, fields: list[list[Any]] | None = None) -> dict[str, Any]:
    return {
        "t": 0.1,
        "conn": 1,
        "dir": direction,
        "len": len(data),
        "hex": data.hex(),
        "summary": direction,
        "fields": fields or [],
    }


def test_evidence_is_exactly_the_entries_and_fields_the_case_named() -> None:
    failing = with_evidence()["cases"][1]
    found = wire.evidence(failing)
    assert [(e.entry.index, e.entry.dir, e.names) for e in found] == [
        (0, "send", ()),
        (1, "recv", ("reply_code",)),
    ]
    assert [f.name for f in found[1].fields] == ["reply_code"] and found[1].spans == [(0, 1)]
    assert wire.evidence({"wire_log": failing["wire_log"]}) == []  # no evidence named
    bad = {"wire_log": failing["wire_log"], "evidence": [{"entry": 9}, {"entry": True}, "x"]}
    assert wire.evidence(bad) == []


def test_a_judged_name_missing_from_the_cut_field_list_is_kept() -> None:
    log = [_entry("recv", b"\x00\x01", [["a", 0, 1, 0]])]
    (ev,) = wire.evidence({"wire_log": log, "evidence": [{"entry": 0, "fields": ["a", "z[300]"]}]})
    assert [f.name for f in ev.fields] == ["a"] and ev.unlisted == ["z[300]"]
    assert wire.evidence_text({"wire_log": log, "evidence": [{"entry": 0, "fields": ["z"]}]})
    text = wire.evidence_text({"wire_log": log, "evidence": [{"entry": 0, "fields": ["z"]}]})
    assert "  > z (judged; not in the kept field list)" in text
    assert "    . a = 0  [0x00..0x01)" in text


def test_evidence_pairs_a_request_with_its_reply_or_close() -> None:
    log = [_entry("send", b"a"), _entry("recv", b"b"), _entry("send", b"c"), _entry("event", b"")]
    named = {"wire_log": log, "evidence": [{"entry": i} for i in (0, 1, 2, 3, 1)]}
    shape = [[ev.entry.index for ev in pair] for pair in wire.pairs(wire.evidence(named))]
    assert shape == [[0, 1], [2, 3], [1]]


def test_spans_are_hex_lengths_say_bytes_and_magic_is_hex() -> None:
    e = wire.entry(fetch_case(4)["wire_log"][2], ERRORS)
    values = {f.name: (f.value, f.span) for f in e.fields}
    assert values["responses[0].records.batch[0].magic"] == ("0x02", "[0x10..0x11)")
    assert values["responses[0].partitions[0].high_watermark"] == ("4", "[0x08..0x10)")
    assert values["responses[0].partitions[0].error_code"][0] == "0 NONE"
    assert e.header() == "+0.0020s #1 recv 17 bytes recv frame"


def test_a_compact_entry_keeps_its_summary_and_is_not_called_cut() -> None:
    raw = {"t": 0.1, "conn": 1, "dir": "send", "len": 64, "hex": "", "summary": "Fetch v4"}
    compact = {"wire_log": [raw], "wire_compact": True}
    (e,) = wire.entries(compact)
    assert e.compact and not e.cut and e.cut_note == ""
    assert wire.render_text(compact) == "+0.1000s #1 send 64 bytes Fetch v4"
    (old,) = wire.entries({"wire_log": [raw]})  # without the flag no bytes is a cut
    assert old.cut_note == "cut: the log kept 0 of 64 bytes"


def test_render_text_marks_judged_fields_and_can_show_summaries_only() -> None:
    failing = with_evidence()["cases"][1]
    text = wire.render_text(failing)
    assert "  > reply_code = 60  [0x00..0x01)" in text and "    . rest = 'scr>'" in text
    assert wire.render_text(failing, summaries_only=True).splitlines() == [
        "+0.0010s #1 send 6120 bytes oversize frame",
        "+0.0020s #1 recv 5 bytes <script>alert('x')</script>",
        "+0.0030s #1 event closed by target",
    ]


def test_the_protocol_names_its_error_code_fields() -> None:
    fields = [["error_code", 0, 2, 37], ["status", 2, 4, 37], ["error_code", 4, 6, 99]]
    e = wire.entry(_entry("recv", bytes(6), fields), ERRORS)
    assert [f.value for f in e.fields] == ["37 INVALID_PARTITIONS", "37", "99 (unknown code)"]
    plain = wire.entry(_entry("recv", bytes(6), fields))  # a protocol without numeric errors
    assert [f.value for f in plain.fields] == ["37", "37", "99"]
    assert wire.error_codes({"protocol": "kafka"}) is not None
    assert wire.error_codes({"protocol": "cursus"}) is None
    assert wire.error_codes({"protocol": "no-such-protocol"}) is None


def test_a_judged_array_or_struct_stands_for_its_count_or_its_fields() -> None:
    from conformance.report.wire import Field, resolved

    fields = (
        Field("header.correlation_id", 0, 4, "7"),
        Field("responses count", 4, 8, "1"),
        Field("responses[0].topic", 8, 10, "'t'"),
        Field("responses[0].partitions count", 10, 14, "0"),
    )
    assert resolved(("header.correlation_id",), fields) == ("header.correlation_id",)
    assert resolved(("responses",), fields) == ("responses count",)
    assert resolved(("responses[0]",), fields) == (
        "responses[0].topic",
        "responses[0].partitions count",
    )
    assert resolved(("responses[0].partitions",), fields) == ("responses[0].partitions count",)
    assert resolved(("nowhere",), fields) == ("nowhere",)  # named, shown as not in the list
