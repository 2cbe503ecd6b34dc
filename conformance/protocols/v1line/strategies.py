"""Hypothesis strategies for V1 line requests and replies, derived from :mod:`commands`.

Every request strategy draws a :class:`~.commands.Request` from the command's declared
fields (``name``, ``int`` with its ``minimum``, ``message``, ``choice``) and option,
so that :func:`.codec.encode` writes it and :func:`.codec.parse_request` reads it back
equal in both revisions.  :func:`request_lines` then writes a drawn request as a line
of one revision: in ``doc`` exactly as :func:`.codec.encode` does; in ``real`` with
what that revision also accepts (V1L-ENV-18, -PROD-10, -REPL-16, -GRP-14): the command,
the option and the role in any case, runs of spaces and tabs between args, whitespace
around sections, a ``|`` inside PRODUCE's value.  A drawn line parses, in its revision,
to the request it was drawn with.

Reply strategies draw a command's success payload from its declared reply fields
(:data:`~.commands.COMMANDS` ``reply``) and error lines of the declared codes; every
drawn reply reads back with :func:`.codec.parse_reply` and :func:`.codec.decode_payload`.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.protocols.v1line import codec
from conformance.protocols.v1line.commands import (
    COMMANDS,
    I64_MAX,
    I64_MIN,
    ArgValue,
    ErrReply,
    Field,
    KeyValue,
    OkReply,
    PayloadValue,
    ReplyField,
    Request,
    Revision,
    commands_of,
)
from conformance.protocols.v1line.errors import ERROR_CODES

NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
I64 = st.integers(I64_MIN, I64_MAX)
U64 = st.integers(0, I64_MAX)


SPACE_CHARACTERS = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85"
"""The characters ``str.isspace`` takes for whitespace outside categories Zs, Zl, Zp."""


def token_chars(exclude: str = "") -> st.SearchStrategy[str]:
    """Characters of a field: any UTF-8 character but ``|`` and whitespace (``real``
    splits on what ``str.split`` calls whitespace), and those in ``exclude``."""
    return st.characters(
        codec="utf-8",
        exclude_categories=("Zs", "Zl", "Zp"),
        exclude_characters="|" + SPACE_CHARACTERS + exclude,
    )


def tokens(max_size: int = 16) -> st.SearchStrategy[str]:
    """Any field the grammar allows: non-empty UTF-8 text without ``|`` or whitespace."""
    return st.text(token_chars(), min_size=1, max_size=max_size)


def names(max_size: int = 16) -> st.SearchStrategy[str]:
    """Plain names (topics, groups, consumers) mostly, any token now and then."""
    return st.text(NAME_CHARS, min_size=1, max_size=max_size) | tokens(max_size)


def keys(max_size: int = 12) -> st.SearchStrategy[str]:
    """A PRODUCE key: a token without ``:`` (the first ``:`` separates), or empty."""
    return st.text(token_chars(":"), max_size=max_size)


def values(max_size: int = 24) -> st.SearchStrategy[str]:
    """A PRODUCE value: any token (``:`` included), or empty."""
    return st.text(token_chars(), max_size=max_size)


def correlation_ids() -> st.SearchStrategy[str]:
    """Decimal ids mostly (as clients send them), any token now and then (V1L-ENV-3)."""
    return st.integers(0, 2**31).map(str) | tokens(12)


def field_values(field: Field) -> st.SearchStrategy[ArgValue]:
    """Every value of ``field`` the codec accepts."""
    if field.kind == "name":
        return names()
    if field.kind == "message":
        return st.builds(KeyValue, keys(), values())
    if field.kind == "choice":
        return st.sampled_from(field.choices)
    return U64 if field.minimum == 0 else I64


def arg_values(command: str, name: str) -> st.SearchStrategy[ArgValue]:
    """The values of ``command``'s argument ``name`` (an option may be absent: None)."""
    spec = COMMANDS[command]
    if spec.option is not None and name == spec.option.key:
        return st.none() | st.sampled_from(spec.option.choices)
    return field_values(next(f for f in spec.fields if f.name == name))


@st.composite
def requests(
    draw: st.DrawFn, command: str | None = None, revision: Revision | None = None
) -> Request:
    """A request of ``command`` (when None, any command ``revision`` has; any command every
    revision has when that is None too: PING is ``doc``'s only)."""
    name = command if command is not None else draw(st.sampled_from(commands_of(revision)))
    args = tuple(draw(arg_values(name, a)) for a in COMMANDS[name].arg_names)
    return Request(draw(correlation_ids()), name, args)


# ------------------------------------------------------------------ as lines


def _any_case(draw: st.DrawFn, text: str) -> str:
    how = draw(st.sampled_from(("same", "lower", "upper", "title", "mixed")))
    if how == "mixed":
        flips = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
        return "".join(c.swapcase() if f else c for c, f in zip(text, flips, strict=True))
    return {"same": text, "lower": text.lower(), "upper": text.upper(), "title": text.title()}[how]


SPACES = st.text(st.sampled_from(" \t"), min_size=1, max_size=3)
PADDING = st.text(st.sampled_from(" \t"), max_size=2)


@st.composite
def written(draw: st.DrawFn, request: Request, revision: Revision) -> tuple[bytes, Request]:
    """``request`` as a line (without its ``\\n``) of ``revision``, and what it parses to:
    ``request`` itself, but for a ``|`` put into PRODUCE's value in ``real``."""
    line = codec.encode(request)[:-1]
    if revision == "doc" or draw(st.booleans()):
        return line, request
    spec = request.spec
    args: list[str] = []
    for name, value in zip(spec.arg_names, request.args, strict=True):
        if value is None:
            continue
        if spec.option is not None and name == spec.option.key:
            args.append(_any_case(draw, f"{name}={value}"))
        elif isinstance(value, KeyValue) and draw(st.integers(0, 3)) == 0:
            args.append(f"{value}|{draw(tokens(4))}")  # real: the fourth section runs on
        elif name == "role":
            args.append(_any_case(draw, str(value)))
        else:
            args.append(str(value))
    sections = [draw(PADDING) + "V1" + draw(PADDING)]
    sections.append(draw(PADDING) + request.correlation_id + draw(PADDING))
    sections.append(draw(PADDING) + _any_case(draw, request.command) + draw(PADDING))
    joined = "".join(draw(SPACES) + a for a in args)
    sections.append(draw(PADDING) + joined.lstrip(" \t") + draw(PADDING))
    out = "|".join(sections).encode()
    return out, codec.parse_request(out, revision="real")


@st.composite
def request_lines(
    draw: st.DrawFn, revision: Revision, command: str | None = None
) -> tuple[bytes, Request]:
    """A line (without its ``\\n``) of ``revision`` and the request it parses to."""
    return draw(written(draw(requests(command, revision)), revision))


# ------------------------------------------------------------------ replies


def _reply_value(f: ReplyField) -> st.SearchStrategy[PayloadValue]:
    if f.kind == "int":
        return I64
    if f.kind == "bool":
        return st.booleans()
    if f.kind == "word":
        return st.text(NAME_CHARS, min_size=1, max_size=12)
    if f.kind == "literal":
        return st.just(f.literal)
    if f.kind == "int_list":
        return st.lists(U64, max_size=4).map(tuple)
    chars = st.characters(codec="utf-8", exclude_characters=", \n|")
    item = st.tuples(U64, st.text(chars, max_size=10))
    return st.lists(item, max_size=4).map(tuple)


@st.composite
def payload_values(draw: st.DrawFn, command: str) -> dict[str, PayloadValue]:
    """The typed values of a success reply of ``command``."""
    return {f.name: draw(_reply_value(f)) for f in COMMANDS[command].reply}


@st.composite
def replies(draw: st.DrawFn, command: str | None = None) -> tuple[bytes, OkReply | ErrReply]:
    """A reply line (with its ``\\n``) to ``command`` and what it reads as."""
    name = command if command is not None else draw(st.sampled_from(list(COMMANDS)))
    corr = draw(correlation_ids())
    if draw(st.integers(0, 3)) == 0:
        chars = st.characters(codec="utf-8", exclude_characters="\n\r")
        err = ErrReply(corr, draw(st.sampled_from(ERROR_CODES)), draw(st.text(chars, max_size=30)))
        return codec.encode_reply(err), err
    line = codec.encode_result(corr, name, draw(payload_values(name)))
    return line, codec.parse_reply(line)
