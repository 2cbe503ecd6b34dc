"""Values in reasons are shown as the wire carries them (conformance.suite.shown)."""

from __future__ import annotations

import re

import pytest

from conformance.suite.shown import joined, show, show_all, show_fields


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "null"),
        (True, "true"),
        (0, "0"),
        (-1, "-1"),
        (1.5, "1.5"),
        ("checkpoint-7", "'checkpoint-7'"),
        ("", "''"),
        ("a\nb\x00", "'a\\nb\\x00'"),
        (b"here", "'here'"),
        (b"", "''"),
        ("päyload ✓".encode(), "'päyload ✓'"),
        (b"\x4c\x00\xff", "0x4c00ff"),
        (bytearray(b"\x01"), "0x01"),
        ([1, 2, 3], "1, 2, 3"),
        ([], "none"),
        ((b"a", None), "'a', null"),
    ],
)
def test_a_value_is_shown_as_the_wire_has_it(value: object, expected: str) -> None:
    assert show(value) == expected


def test_nothing_python_writes_gets_through() -> None:
    shown = show_all([None, b"x", b"\x00", "t", [1, 2], (3, 4), b""])
    assert not re.search(r"None|b'|b\"|\[|\]|\(|\)", shown), shown


def test_long_text_and_bytes_are_cut_with_their_size() -> None:
    assert show(b"gzip-0" * 20, 12) == "'gzip-0gzip-0'... (120 bytes)"
    assert show("x" * 30, 4) == "'xxxx'... (30 characters)"
    assert show(b"\x00" * 10, 2) == "0x0000... (10 bytes)"
    assert show(b"short", 12) == "'short'"


def test_lists_are_comma_separated_and_cut_at_most() -> None:
    assert show_all([1, 2, 3, 4], most=2) == "1, 2, ... (4 in all)"
    assert show_all([], empty="no values") == "no values"
    assert joined(["a 1", "b 2"], sep="; ") == "a 1; b 2"
    assert joined([]) == "none"


def test_a_struct_is_shown_by_its_field_names() -> None:
    assert show_fields(key=b"k1", value=None) == "key 'k1' value null"
    assert show_fields(3, value=b"abcdef") == "value 'abc'... (6 bytes)"
