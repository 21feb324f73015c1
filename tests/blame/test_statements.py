"""Which executed lines count as running a changed line: by the syntax tree."""

from __future__ import annotations

import pytest

from flakewarden.blame.statements import map_lines

SOURCE = b"""import os

LIMIT = 5


@register
def total(items,
          tax=0):
    s = 0
    for i in items:
        s += i
    else:
        pass
    try:
        x = call(1,
                 2)
    except ValueError:
        x = 2
    # a comment
    return s


class Cart:
    size = 3

    def add(self, x):
        self.x = x
"""

BODY = frozenset(range(9, 21))  # total's body: a call of total runs it


@pytest.mark.parametrize(
    ("line", "runs", "at_import"),
    [
        (1, {1}, True),  # an import: at import
        (3, {3}, True),  # a module-level constant
        (6, {6, 7, 8} | BODY, True),  # a decorator runs at import, and so does a call
        (7, {6, 7, 8} | BODY, False),  # the signature: any call of total ran it
        (8, {6, 7, 8} | BODY, False),
        (9, {9}, False),
        (10, {10}, False),  # a loop's header
        (12, {10, 13}, False),  # else: the loop's header and the else block
        (16, {15, 16}, False),  # the second line of a call: the whole statement
        (17, {14, 18}, False),  # except: the try, and the handler's block
        (24, {24}, True),  # a class attribute: at import
        (26, {26, 27}, False),  # a method's signature: its body
        (27, {27}, False),
    ],
)
def test_a_changed_line_maps_to_the_lines_that_run_it(
    line: int, runs: set[int], at_import: bool
) -> None:
    mapped = map_lines(SOURCE, [line])
    assert mapped.runs == {line: frozenset(runs)}
    assert (line in mapped.at_import) is at_import


def test_blank_and_comment_lines_between_statements_are_left_out() -> None:
    mapped = map_lines(SOURCE, [2, 19])
    assert mapped.runs == {} and mapped.at_import == frozenset()


def test_a_blank_line_inside_a_string_is_part_of_its_statement() -> None:
    source = b'TEXT = """a\n\nb"""\n\ndef f():\n    return TEXT\n'
    assert map_lines(source, [2]).runs == {2: frozenset({1, 2, 3})}


def test_a_gap_maps_to_what_runs_next() -> None:
    # Lines taken out after line 9 (s = 0), inside total: the loop runs past the gap.
    mapped = map_lines(SOURCE, [], gaps=[9])
    assert mapped.runs == {10: frozenset({10})}
    assert mapped.at_import == frozenset()
    # A function taken out at module level (after line 3): nothing in a test runs the gap,
    # but it changed what the module defines at import.
    top = map_lines(SOURCE, [], gaps=[4])
    assert 5 in top.at_import


def test_a_file_that_does_not_parse_says_so() -> None:
    mapped = map_lines(b"def broken(:\n", [1])
    assert not mapped.parsed and mapped.runs == {}


def test_ran_gives_the_changed_lines_a_test_executed() -> None:
    mapped = map_lines(SOURCE, [7, 11, 27])
    assert mapped.ran({11}) == {7, 11}  # the loop body, and so the signature
    assert mapped.ran({27}) == {27}
    assert mapped.ran({3, 24}) == frozenset()
