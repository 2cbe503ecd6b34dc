"""The V1 line annotator: a request or reply line read as a summary and its fields with spans.

A request's fields are its envelope sections (``version``, ``correlation_id``,
``command``) and each arg token named after the command's grammar (:mod:`commands`),
with byte spans into the line; an arg token is ``droppable`` (with the space before it),
so the fuzzer's structural minimizer can cut args out whole.  A line that does not parse
is still split where it can be (sections, tokens), named by position.  A reply's fields
are its sections and, for a success, its ``key=value`` pairs.  Nothing here raises on
bytes: text that is not UTF-8 is read with replacement characters for the summary only.
"""

from __future__ import annotations

from collections.abc import Sequence

from conformance.plugin import Annotation, FieldSpan
from conformance.protocols.v1line import codec
from conformance.protocols.v1line.commands import COMMANDS
from conformance.protocols.v1line.errors import V1LineError


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


def _args(line: bytes, section: FieldSpan, command: str) -> list[FieldSpan]:
    spec = COMMANDS.get(command.upper())
    names = spec.arg_names if spec is not None else ()
    fields: list[FieldSpan] = []
    pos, index = section.start, 0
    while pos < section.end:
        if line[pos : pos + 1] == b" ":
            pos += 1
            continue
        end = line.find(b" ", pos, section.end)
        end = section.end if end < 0 else end
        name = names[index] if index < len(names) else f"arg {index + 1}"
        start = pos - 1 if pos > section.start else pos  # with the space before it
        value = line[pos:end].decode("utf-8", "replace")
        fields.append(FieldSpan(name, start, end, value, droppable=True))
        pos, index = end, index + 1
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
    except V1LineError as exc:
        summary = f"unparsed ({exc.code}: {exc.message}) {_summary(text)}"
    return Annotation(summary, fields)


def annotate_reply(line: bytes) -> Annotation:
    text = line.decode("utf-8", "replace")
    head = _sections(line, ("version", "correlation_id", "status"), 3)
    fields = list(head)
    if len(head) == 3:
        status_end = head[2].end
        status, _, rest = str(head[2].value).partition("|")
        fields[2] = FieldSpan("status", head[2].start, head[2].start + len(status.encode()), status)
        if status == "ERR" and rest:
            code, _, _message = rest.partition("|")
            start = fields[2].end + 1
            fields.append(FieldSpan("code", start, start + len(code.encode()), code))
            if _message:
                fields.append(FieldSpan("message", start + len(code.encode()) + 1, status_end))
        elif status == "OK" and rest:
            pos = fields[2].end + 1
            for token in rest.split(" "):
                key, sep, value = token.partition("=")
                size = len(token.encode())
                if sep:
                    fields.append(FieldSpan(key, pos, pos + size, value))
                pos += size + 1
    return Annotation(f"reply {_summary(text)}", fields)


def annotate(payload: bytes, direction: str, earlier: Sequence[bytes]) -> Annotation:
    """A line going in ``direction`` (``earlier`` is not needed: a reply reads alone)."""
    line = payload[:-1] if payload.endswith(b"\n") else payload
    return annotate_request(line) if direction == "request" else annotate_reply(line)
