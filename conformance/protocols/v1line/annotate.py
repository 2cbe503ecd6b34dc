"""The V1 line annotator: a request or reply line read as a summary and its fields with spans.

A request's fields are its envelope sections (``version``, ``correlation_id``,
``command``) and each arg token named after the command's grammar (:mod:`commands`),
with byte spans into the line.  Args are split on runs of ASCII whitespace (a tab
separates args in ``real``); an arg token is ``droppable`` with the whitespace before it
(the first arg: after it), so the fuzzer's structural minimizer can cut args out whole
and what is left still starts with a token.  A line that does not parse is still split
where it can be (sections, tokens), named by position.  A reply's fields are its
sections (``version``, ``correlation_id``, ``status``), an error's ``code`` and
``message``, and a success's ``key=value`` pairs named by key (a list value such as
``isr=[0 1]`` runs to its ``]``).  Nothing here raises on bytes: text that is not UTF-8
is read with replacement characters.
"""

from __future__ import annotations

from collections.abc import Sequence

from conformance.plugin import Annotation, FieldSpan
from conformance.protocols.v1line import codec
from conformance.protocols.v1line.commands import COMMANDS, DOC_ONLY
from conformance.protocols.v1line.errors import BadRequest, UnknownCommand, V1LineError


def _summary(text: str, limit: int = 120) -> str:
    shown = text if len(text) <= limit else text[:limit] + "..."
    return shown.replace("\r", "\\r")


def _sections(line: bytes, names: Sequence[str], most: int) -> list[FieldSpan]:
    """``line`` split on ``|`` into at most ``most`` sections named ``names``."""
    fields: list[FieldSpan] = []
    start = 0
    for i in range(most):
        end = line.find(b"|", start) if i < most - 1 else -1
        stop = len(line) if end < 0 else end
        name = names[i] if i < len(names) else f"section {i + 1}"
        fields.append(FieldSpan(name, start, stop, line[start:stop].decode("utf-8", "replace")))
        if end < 0:
            break
        start = end + 1
    return fields


SPACES = b" \t\x0b\x0c\r"
"""ASCII whitespace: what separates args (``doc`` splits on one space, ``real`` on runs
of whitespace; the annotator names tokens either way)."""


def _tokens(line: bytes, start: int, end: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` spans of the whitespace-separated tokens of ``line[start:end]``."""
    spans: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        if line[pos] in SPACES:
            pos += 1
            continue
        stop = pos
        while stop < end and line[stop] not in SPACES:
            stop += 1
        spans.append((pos, stop))
        pos = stop
    return spans


def _args(line: bytes, section: FieldSpan, command: str) -> list[FieldSpan]:
    """Each arg token of the args ``section``, named after ``command``'s grammar (by
    position past it), droppable with the whitespace that separates it: the run before
    it, or for the first, the run after it (so what is left starts with a token)."""
    spec = COMMANDS.get(command.upper())
    names = spec.arg_names if spec is not None else ()
    spans = _tokens(line, section.start, section.end)
    fields: list[FieldSpan] = []
    for index, (a, b) in enumerate(spans):
        name = names[index] if index < len(names) else f"arg {index + 1}"
        if index > 0:
            cut = (spans[index - 1][1], b)
        elif len(spans) > 1:
            cut = (a, spans[1][0])
        else:
            cut = (a, b)
        value = line[a:b].decode("utf-8", "replace")
        fields.append(FieldSpan(name, cut[0], cut[1], value, droppable=True))
    return fields


def annotate_request(line: bytes) -> Annotation:
    text = line.decode("utf-8", "replace")
    sections = _sections(line, ("version", "correlation_id", "command", "args"), 4)
    fields = sections[:3]
    if len(sections) == 4:
        fields += _args(line, sections[3], str(sections[2].value).strip())
    try:
        request = codec.parse_request(line, revision="real")
        summary = f"{request.command} {_summary(text)}"
    except BadRequest as exc:
        if exc.stage == "envelope":
            summary = f"unparsed ({exc.code}: {exc.message}) {_summary(text)}"
        else:  # a well-formed line whose args the reference broker refuses: name it as sent
            command = str(sections[2].value).strip().upper()
            summary = f"{command} {_summary(text)} (reference broker: {exc.message})"
    except UnknownCommand as exc:
        command = exc.command.strip().upper()
        if command in DOC_ONLY:  # (read as real, which has none: it is doc's)
            summary = f"{command} {_summary(text)} (doc only: the real broker has no {command})"
        else:
            summary = f"{exc.code} {_summary(text)}"
    except V1LineError as exc:
        summary = f"{exc.code} {_summary(text)}"
    return Annotation(summary, fields)


def _payload(line: bytes, start: int) -> list[FieldSpan]:
    """The ``key=value`` fields of an OK payload from ``start`` on: a value that opens a
    list (``[0 1 2]``) runs to its ``]``."""
    fields: list[FieldSpan] = []
    spans = _tokens(line, start, len(line))
    i = 0
    while i < len(spans):
        a, b = spans[i]
        key, sep, _ = line[a:b].partition(b"=")
        if sep and line[a + len(key) + 1 : b].startswith(b"["):
            while not line[:b].endswith(b"]") and i + 1 < len(spans):
                i += 1
                b = spans[i][1]
        if sep:
            value = line[a + len(key) + 1 : b].decode("utf-8", "replace")
            fields.append(FieldSpan(key.decode("utf-8", "replace"), a, b, value))
        i += 1
    return fields


def annotate_reply(line: bytes) -> Annotation:
    text = line.decode("utf-8", "replace")
    fields = _sections(line, ("version", "correlation_id", "status"), 3)
    if len(fields) == 3:
        rest = fields[2]
        bar = line.find(b"|", rest.start)
        end = len(line) if bar < 0 else bar
        status = line[rest.start : end].decode("utf-8", "replace")
        fields[2] = FieldSpan("status", rest.start, end, status)
        if status == "ERR" and bar >= 0:
            code_end = line.find(b"|", bar + 1)
            code_end = len(line) if code_end < 0 else code_end
            code = line[bar + 1 : code_end].decode("utf-8", "replace")
            fields.append(FieldSpan("code", bar + 1, code_end, code))
            if code_end < len(line):
                message = line[code_end + 1 :].decode("utf-8", "replace")
                fields.append(FieldSpan("message", code_end + 1, len(line), message))
        elif status == "OK" and bar >= 0:
            fields += _payload(line, bar + 1)
    return Annotation(f"reply {_summary(text)}", fields)


def annotate(payload: bytes, direction: str, earlier: Sequence[bytes]) -> Annotation:
    """A line going in ``direction`` (``earlier`` is not needed: a reply reads alone)."""
    line = payload[:-1] if payload.endswith(b"\n") else payload
    return annotate_request(line) if direction == "request" else annotate_reply(line)
