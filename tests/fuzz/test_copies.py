"""``fuzz --instances N``: how a seed range is shared between N copies of the target."""

from __future__ import annotations

import pytest

from conformance.fuzz.copies import parts


@pytest.mark.parametrize(
    ("start", "stop", "count", "want"),
    [
        (0, 10, 3, [(0, 4), (4, 7), (7, 10)]),
        (1000, 1004, 4, [(1000, 1001), (1001, 1002), (1002, 1003), (1003, 1004)]),
        (0, 2, 5, [(0, 1), (1, 2)]),  # never an empty part
        (0, 7, 1, [(0, 7)]),
    ],
)
def test_a_range_is_cut_in_contiguous_parts_within_one_of_each_other(
    start: int, stop: int, count: int, want: list[tuple[int, int]]
) -> None:
    got = parts(start, stop, count)
    assert got == want
    assert [i for a, b in got for i in range(a, b)] == list(range(start, stop))
