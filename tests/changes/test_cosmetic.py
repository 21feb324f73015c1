"""Blame's option: hunks of Python files that change only white space or comments are left out."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.git_repo import base_and_branch

from flakewarden.changes.diff import Diff, changes_since

BASE = '''
import os


def helper(value):
    """Double it.

    Indented text inside the docstring.
    """
    total = max(value * 2, 0)  # doubled
    if total > 10:
        total -= 1
        return total
    return total


class Box:
    size = 3

    def grow(self):
        return self.size + 1
'''


def _lines(tmp_path: Path, new: str, *, ignore: bool) -> tuple[int, ...]:
    repo = base_and_branch(tmp_path, {"mod.py": BASE})
    repo.commit("edit", **{"mod.py": new})
    diff = changes_since(repo.root, "main", ignore_cosmetic=ignore)
    assert isinstance(diff, Diff)
    change = diff.file("mod.py")
    assert change is not None
    return tuple(sorted(change.lines()))


def _sub(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new)


BLOCK = "        total -= 1\n        return total"
COSMETIC = [
    ("a comment reworded", _sub("# doubled", "# twice the value")),
    ("a comment line added", _sub("    if total", "    # check the bound\n    if total")),
    ("a comment taken out", _sub("  # doubled", "")),
    ("blank lines added", _sub("\n\nclass Box", "\n\n\n\nclass Box")),
    ("trailing white space", _sub("size = 3", "size = 3   ")),
    ("spaces inside a line", _sub("value * 2", "value*2")),
    (
        "a call's arguments wrapped",
        _sub("(value * 2, 0)", "(\n        value * 2,\n        0\n    )"),
    ),
    (
        "a block re-indented by another width",
        _sub(BLOCK, BLOCK.replace("        ", "            ")),
    ),
    ("a blank line taken out", _sub("import os\n\n", "import os\n")),
]

REAL = [
    ("a value changed", _sub("value * 2", "value * 3")),
    ("a statement moved out of its block", _sub(BLOCK, "        total -= 1\n    return total")),
    ("a docstring line re-indented", _sub("    Indented text", "        Indented text")),
    ("a docstring reworded", _sub("Double it.", "Twice it.")),
    ("a statement added", _sub("    size = 3", "    size = 3\n    depth = 1")),
    ("parentheses added", _sub("max(value * 2, 0)", "max((value * 2), 0)")),
    ("a comment turned into code", _sub("  # doubled", "; total += 1")),
]


@pytest.mark.parametrize(("case", "new"), COSMETIC, ids=[c for c, _ in COSMETIC])
def test_cosmetic_changes_are_left_out_for_blame_only(tmp_path: Path, case: str, new: str) -> None:
    assert new != BASE, case
    assert _lines(tmp_path / "kept", new, ignore=False) != ()
    assert _lines(tmp_path / "ignored", new, ignore=True) == ()


@pytest.mark.parametrize(("case", "new"), REAL, ids=[c for c, _ in REAL])
def test_real_changes_are_kept(tmp_path: Path, case: str, new: str) -> None:
    assert new != BASE, case
    kept = _lines(tmp_path / "kept", new, ignore=False)
    assert kept != ()
    assert _lines(tmp_path / "ignored", new, ignore=True) == kept


def test_only_the_cosmetic_hunks_of_a_file_are_left_out(tmp_path: Path) -> None:
    new = BASE.replace("# doubled", "# twice").replace("size = 3", "size = 4")
    repo = base_and_branch(tmp_path, {"mod.py": BASE, "notes.txt": "# a\n"})
    repo.commit("edit", **{"mod.py": new, "notes.txt": "# b\n"})
    diff = changes_since(repo.root, "main", ignore_cosmetic=True)
    assert isinstance(diff, Diff)
    change, text = diff.file("mod.py"), diff.file("notes.txt")
    assert change is not None and text is not None
    size_line = new.lstrip("\n").splitlines().index("    size = 4") + 1
    assert change.lines() == frozenset({size_line})
    assert change.cosmetic_hunks == 1
    assert text.lines() == frozenset({1})  # not Python: every hunk counts


def test_a_file_that_does_not_tokenize_keeps_every_hunk(tmp_path: Path) -> None:
    broken = 'x = """never closed\n# a comment\n'
    repo = base_and_branch(tmp_path, {"bad.py": broken})
    repo.commit("edit", **{"bad.py": broken.replace("a comment", "another")})
    diff = changes_since(repo.root, "main", ignore_cosmetic=True)
    assert isinstance(diff, Diff)
    change = diff.file("bad.py")
    assert change is not None
    assert change.lines() == frozenset({2})


def test_a_new_python_file_of_comments_only_is_cosmetic(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"a.py": "x = 1\n"})
    repo.commit("add", **{"notes.py": "# nothing to run\n\n# at all\n", "code.py": "y = 2\n"})
    diff = changes_since(repo.root, "main", ignore_cosmetic=True)
    assert isinstance(diff, Diff)
    notes, code = diff.file("notes.py"), diff.file("code.py")
    assert notes is not None and code is not None
    assert (notes.status, notes.ranges) == ("added", ())
    assert code.lines() == frozenset({1})
