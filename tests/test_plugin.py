"""The plug-in object's generic helpers: framing by direction, frame annotation, revisions,
options, the session opener driver, structural shrinks, and the registry's errors."""

from __future__ import annotations

from dataclasses import replace

import pytest

from conformance import protocols
from conformance.errors import ProtocolError
from conformance.plugin import FieldSpan, Opening, Option, SessionRefused, open_session, shrinks
from conformance.wire.framing import LineDeframer

CURSUS = protocols.get("cursus")
LINES = replace(
    CURSUS,
    new_deframer=lambda: LineDeframer(max_line=100),
    frame=lambda payload: payload + b"\n",
)
"""Cursus's annotator behind a newline framing, as a line protocol would be."""


def names(spans: list[FieldSpan]) -> list[tuple[str, int, int]]:
    return [(s.name, s.start, s.end) for s in spans]


def test_a_length_prefix_is_annotated_before_the_payload() -> None:
    spans = CURSUS.annotate_frame(b"\x00\x00\x00\x04LIST", "request")
    assert names(spans) == [("length", 0, 4), ("command", 4, 8)]


def test_a_line_terminator_is_annotated_after_the_payload() -> None:
    spans = LINES.annotate_frame(b"CONSUME t 0 5\n", "request")
    assert names(spans) == [
        ("command", 0, 7),
        ("topic", 7, 9),
        ("partition", 9, 11),
        ("offset", 11, 13),
        ("terminator", 13, 14),
    ]


def test_bytes_that_are_not_one_whole_frame_are_annotated_as_a_payload() -> None:
    assert names(CURSUS.annotate_frame(b"LIST", "request")) == [("command", 0, 4)]
    cut = b"\x00\x00\x00\x0eCREATE"  # a frame whose tail the wire log did not keep
    assert CURSUS.annotate_frame(cut, "request")[0].name == "word0"


def test_a_reply_is_annotated_as_a_reply() -> None:
    spans = CURSUS.annotate_payload(b"OK topic=t", "reply")
    assert [s.name for s in spans] == ["word0", "word1"]
    assert CURSUS.annotate_payload(b"LIST", "request")[0].name == "command"


def test_replies_use_their_own_framing_when_the_protocol_has_one() -> None:
    status_first = replace(
        CURSUS,
        new_reply_deframer=lambda: LineDeframer(max_line=10),
        frame_reply=lambda payload: payload + b"\n",
    )
    assert status_first.framed(b"OK", "reply") == b"OK\n"
    assert status_first.framed(b"OK", "request") == b"\x00\x00\x00\x02OK"
    assert status_first.deframer("reply").feed(b"OK\n") == [b"OK"]
    assert CURSUS.deframer("reply").feed(b"\x00\x00\x00\x02OK") == [b"OK"]


def test_a_revision_gets_its_variant_and_an_unknown_one_is_named() -> None:
    strict = replace(
        CURSUS,
        revisions=("doc", "small"),
        variant=lambda p, rev: replace(p, new_deframer=lambda: LineDeframer(max_line=1)),
    )
    assert strict.at("doc") is strict
    with pytest.raises(ProtocolError):
        strict.at("small").new_deframer().feed(b"toolong")
    with pytest.raises(ValueError, match="unknown revision 'x' of cursus; known: doc, small"):
        strict.at("x")


def test_options_convert_with_messages_that_say_why() -> None:
    count = Option("--count", "h", ("serve",), default=1, type=int, minimum=1)
    assert count.convert("7") == 7
    with pytest.raises(ValueError, match="'x' is not a whole number"):
        count.convert("x")
    with pytest.raises(ValueError, match="must be at least 1, not 0"):
        count.convert("0")
    codec = Option("--codec", "h", ("run",), choices=("gzip", "none"))
    with pytest.raises(ValueError, match="'zip' is not one of gzip, none"):
        codec.convert("zip")


def test_option_values_defaults_and_secrets() -> None:
    plugin = replace(
        CURSUS,
        options=(
            Option("--mode", "h", ("run", "serve"), default="a", embedded_default="b"),
            Option("--password", "h", ("run", "serve"), default="pw", secret=True),
            Option("--only-serve", "h", ("serve",), default=3),
        ),
    )
    assert plugin.option_values("run", {}) == {"mode": "a", "password": "pw"}
    embedded = plugin.option_values("run", {}, embedded=True)
    assert embedded == {"mode": "b", "password": "pw"}
    assert plugin.serve_args("run", embedded) == ["--mode", "b", "--password", "pw"]
    assert plugin.public(embedded) == {"mode": "b"}


def _login(password: str) -> Opening:
    reply = yield b"HELLO " + password.encode()
    if reply != b"OK":
        raise SessionRefused(f"got {reply!r}")
    token = yield b"TOKEN"
    return token


def test_open_session_drives_the_opener_and_returns_its_context() -> None:
    sent: list[bytes] = []
    replies = iter([b"OK", b"t-42"])
    got = open_session(_login("pw"), sent.append, lambda: next(replies))
    assert sent == [b"HELLO pw", b"TOKEN"] and got == b"t-42"
    assert open_session(None, sent.append, lambda: b"") is None
    with pytest.raises(SessionRefused, match="NO"):
        open_session(_login("bad"), sent.append, lambda: b"NO")


def test_shrinks_drop_items_empty_counted_fields_and_cut_droppable_spans() -> None:
    # [count=2][item a][item bb] then [len=3]xyz then a droppable " tail"
    payload = b"\x02a" + b"bb" + b"\x03xyz" + b" tail"
    spans = [
        FieldSpan("count", 0, 1, 2, items=((1, 2), (2, 4))),
        FieldSpan("len", 4, 5, 3, counts=(5, 8)),
        FieldSpan("tail", 8, 13, "tail", droppable=True),
    ]
    assert shrinks(payload, spans) == [
        b"\x01bb\x03xyz tail",  # item a dropped
        b"\x01a\x03xyz tail",  # item bb dropped
        b"\x02abb\x00 tail",  # xyz emptied
        b"\x02abb\x03xyz",  # tail cut
    ]
    assert shrinks(payload, [FieldSpan("bad", 10, 99, 5, counts=(0, 1))]) == []


def test_a_plugin_that_cannot_be_loaded_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(protocols.BUILTIN, "broken", "no_such_module_here:PLUGIN")
    with pytest.raises(
        protocols.UnknownProtocol, match=r"broken.*cannot be loaded.*ModuleNotFound"
    ):
        protocols.get("broken")
    monkeypatch.setitem(protocols.BUILTIN, "liar", "conformance.protocols.cursus.plugin:PLUGIN")
    with pytest.raises(protocols.UnknownProtocol, match="is not the plug-in of protocol 'liar'"):
        protocols.get("liar")
