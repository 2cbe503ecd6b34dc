"""The plug-in contract and its generic helpers: the header lists every hook and every hook
is used, framing by direction, frame annotation, revisions, options, the session opener
driver, structural shrinks, and the registry's errors."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pytest

from conformance import plugin as contract
from conformance import protocols
from conformance.annotation import annotate_frame, annotate_payload, shifted
from conformance.fuzz.shrink import shrinks
from conformance.options import Option, option_values, public, serve_args
from conformance.plugin import Annotation, FieldSpan, Opening, SessionRefused, open_session
from conformance.wire.framing import Deframer, LengthPrefixFraming, LineFraming
from tests.toy.plugin import PLUGIN as TOY

CURSUS = protocols.get("cursus")
LINES = replace(CURSUS, framing=LineFraming(limit=100))
"""Cursus's annotator behind a newline framing, as a line protocol would be."""


def names(read: Annotation) -> list[tuple[str, int, int]]:
    return [(s.name, s.start, s.end) for s in read.fields]


def hooks() -> list[str]:
    return [f.name for f in dataclasses.fields(contract.Plugin)]


def test_the_contract_header_lists_every_hook() -> None:
    header = inspect.getdoc(contract) or ""
    missing = [h for h in hooks() if f"``{h}``" not in header]
    assert not missing, f"conformance/plugin.py's header does not list: {missing}"


def test_every_optional_hook_is_used_by_a_registered_protocol() -> None:
    """A hook no protocol sets is not essential: it goes (the toy protocol counts)."""
    plugins = [protocols.get(n) for n in protocols.names()] + [TOY]
    optional = [
        f
        for f in dataclasses.fields(contract.Plugin)
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    ]
    unused = [
        f.name for f in optional if all(getattr(p, f.name) in (None, (), {}) for p in plugins)
    ]
    assert unused == []


def test_a_length_prefix_is_annotated_before_the_payload() -> None:
    read = annotate_frame(CURSUS, b"\x00\x00\x00\x04LIST", "request")
    assert names(read) == [("length", 0, 4), ("command", 4, 8)]
    assert read.summary == "frame: 'LIST'"


def test_a_line_terminator_is_annotated_after_the_payload() -> None:
    read = annotate_frame(LINES, b"CONSUME t 0 5\n", "request")
    assert names(read) == [
        ("command", 0, 7),
        ("topic", 7, 9),
        ("partition", 9, 11),
        ("offset", 11, 13),
        ("terminator", 13, 14),
    ]


def test_bytes_that_are_not_one_whole_frame_are_annotated_as_a_payload() -> None:
    read = annotate_frame(CURSUS, b"LIST", "request")
    assert names(read) == [("command", 0, 4)]
    assert read.summary == "raw 4 bytes"
    cut = b"\x00\x00\x00\x0eCREATE"  # a frame whose tail the wire log did not keep
    assert annotate_frame(CURSUS, cut, "request").fields[0].name == "word0"


def test_a_reply_is_annotated_as_a_reply() -> None:
    spans = annotate_payload(CURSUS, b"OK topic=t", "reply").fields
    assert [s.name for s in spans] == ["word0", "word1"]
    assert annotate_payload(CURSUS, b"LIST", "request").fields[0].name == "command"


def test_an_annotator_that_raises_gives_a_plain_summary() -> None:
    def broken(payload: bytes, direction: str, earlier: object) -> Annotation:
        raise IndexError("the annotator tripped")

    read = annotate_payload(replace(CURSUS, annotate=broken), b"\x01\x02", "reply")
    assert read == Annotation("reply (2 bytes)", [])


class StatusFirstDeframer:
    """Replies ``[u32 LE status][u32 LE length][payload]``, read as ``status + payload``."""

    def __init__(self) -> None:
        self._buf = b""

    error = None

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        out = []
        while len(self._buf) >= 8:
            size = int.from_bytes(self._buf[4:8], "little")
            if len(self._buf) < 8 + size:
                break
            out.append(self._buf[:4] + self._buf[8 : 8 + size])
            self._buf = self._buf[8 + size :]
        return out


REQUESTS = LengthPrefixFraming(limit=100, order="little")


@dataclass(frozen=True)
class StatusFirst:
    """Iggy's shape: requests behind a length, replies with a status before their length."""

    limit: int = 100
    requests: LengthPrefixFraming = REQUESTS

    def frame(self, payload: bytes, direction: str = "request", length: int | None = None) -> bytes:
        if direction == "reply":
            size = len(payload) - 4 if length is None else length
            return payload[:4] + size.to_bytes(4, "little") + payload[4:]
        return self.requests.frame(payload, direction, length)

    def deframer(self, direction: str = "request") -> Deframer:
        if direction == "reply":
            return StatusFirstDeframer()
        return self.requests.deframer(direction)


def status_words(payload: bytes, direction: str, earlier: Sequence[bytes]) -> Annotation:
    """The status first, then the words of the rest (a stand-in for Iggy's annotator)."""
    status = FieldSpan("status", 0, 4, int.from_bytes(payload[:4], "little"))
    words = annotate_payload(CURSUS, payload[4:], "reply").fields
    return Annotation(f"status {status.value}", [status, *shifted(words, 4)])


def test_replies_use_their_own_framing_when_the_protocol_has_one() -> None:
    iggy_like = replace(CURSUS, framing=StatusFirst(), annotate=status_words)
    wire = b"\x03\x00\x00\x00" + b"\x06\x00\x00\x00" + b"OK t=1 x"
    assert iggy_like.framing.deframer("reply").feed(wire[:9]) == []
    assert iggy_like.framing.deframer("reply").feed(wire) == [b"\x03\x00\x00\x00OK t=1"]
    assert iggy_like.framing.frame(b"\x03\x00\x00\x00OK t=1", "reply") == wire[:-2]
    assert iggy_like.framing.frame(b"OK", "request") == b"\x02\x00\x00\x00OK"
    read = annotate_frame(iggy_like, wire[:-2], "reply")
    assert read.summary == "frame: status 3"
    assert names(read) == [("status", 0, 4), ("framing", 4, 8), ("word0", 8, 10), ("word1", 10, 14)]
    assert CURSUS.framing.deframer("reply").feed(b"\x00\x00\x00\x02OK") == [b"OK"]


def test_a_length_override_is_written_as_claimed() -> None:
    framing = LengthPrefixFraming(limit=100, order="little", includes_self=True)
    assert framing.frame(b"ab") == b"\x06\x00\x00\x00ab"
    assert framing.frame(b"ab", length=-1) == b"\xff\xff\xff\xffab"
    assert framing.deframer().feed(framing.frame(b"ab")) == [b"ab"]


def test_an_unknown_revision_is_named_with_the_known_ones() -> None:
    two = replace(CURSUS, revisions=("doc", "small"))
    assert two.check_revision("small") == "small"
    with pytest.raises(ValueError, match="unknown revision 'x' of cursus; known: doc, small"):
        two.check_revision("x")


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
    options = (
        Option("--mode", "h", ("run", "serve"), default="a", embedded_default="b"),
        Option("--password", "h", ("run", "serve"), default="pw", secret=True),
        Option("--only-serve", "h", ("serve",), default=3),
    )
    assert option_values(options, "run", {}) == {"mode": "a", "password": "pw"}
    embedded = option_values(options, "run", {}, embedded=True)
    assert embedded == {"mode": "b", "password": "pw"}
    assert serve_args(options, "run", embedded) == ["--mode", "b", "--password", "pw"]
    assert public(options, embedded) == {"mode": "b"}


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
