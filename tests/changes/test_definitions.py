"""Which definitions a change touched: parsed with ast, compared with the merge base's."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from helpers.git_repo import base_and_branch

from flakewarden.changes.definitions import (
    FileDefinitions,
    definitions_changed,
    definitions_in,
)
from flakewarden.changes.diff import Diff, Unavailable, changes_since

SOURCE = """
import pytest


@pytest.fixture
def db():
    return {}


@pytest.fixture(name="client", scope="module")
def make_client():
    return object()


@fixture
def bare():
    return 1


def test_plain():
    assert True


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.slow
def test_decorated(n):
    assert n


class TestOuter:
    value = 1

    @pytest.fixture(autouse=True)
    def setup(self):
        pass

    def test_method(self):
        assert self.value

    class TestInner:
        async def test_deep(self):
            def not_a_definition():
                pass
"""


def test_the_definitions_of_a_file() -> None:
    found = {d.qualname: d for d in definitions_in(textwrap.dedent(SOURCE).lstrip())}
    assert list(found) == [
        "db",
        "make_client",
        "bare",
        "test_plain",
        "test_decorated",
        "TestOuter",
        "TestOuter::setup",
        "TestOuter::test_method",
        "TestOuter::TestInner",
        "TestOuter::TestInner::test_deep",
    ]
    fixtures = {name: d.fixture for name, d in found.items() if d.fixture}
    assert fixtures == {
        "db": "db",
        "make_client": "client",
        "bare": "bare",
        "TestOuter::setup": "setup",
    }
    # Lines count from 1, decorators included.
    assert (found["db"].start, found["db"].end) == (4, 6)
    assert (found["test_decorated"].start, found["test_decorated"].end) == (23, 26)
    assert (found["TestOuter"].start, found["TestOuter"].end) == (29, 42)
    assert found["TestOuter::TestInner::test_deep"].parent == "TestOuter::TestInner"
    assert found["test_plain"].parent is None
    assert found["TestOuter"].kind == "class"
    assert found["TestOuter::test_method"].name == "test_method"


def test_the_normalised_form_ignores_name_position_and_comments() -> None:
    one = definitions_in("def test_a(x):\n    return x + 1  # note\n")[0]
    two = definitions_in("\n\n\ndef test_b(x):\n\n    # other\n    return x+1\n")[0]
    three = definitions_in("def test_a(x):\n    return x + 2\n")[0]
    decorated = definitions_in("@mark\ndef test_a(x):\n    return x + 1\n")[0]
    assert one.form == two.form
    assert one.form != three.form
    assert one.form != decorated.form  # the decorators are part of it


def test_a_class_own_part_leaves_its_methods_out() -> None:
    one = definitions_in("class T:\n    a = 1\n    def m(self):\n        return 1\n")[0]
    two = definitions_in("class T:\n    a = 1\n    def m(self):\n        return 2\n")[0]
    three = definitions_in("class T(Base):\n    a = 1\n    def m(self):\n        return 1\n")[0]
    assert one.own == two.own and one.form != two.form
    assert one.own != three.own


BASE = """
import pytest


@pytest.fixture
def shared():
    return 1


def test_keep():
    assert shared


def test_edit():
    assert 1 + 1 == 2


def test_old_name():
    value = 40
    assert value + 2 == 42


class TestBox:
    size = 3

    def test_size(self):
        assert self.size == 3
"""


def _touched(tmp_path: Path, new: str, *, path: str = "test_mod.py") -> FileDefinitions:
    repo = base_and_branch(tmp_path, {"test_mod.py": BASE})
    if path != "test_mod.py":
        repo.move("test_mod.py", path)
    repo.commit("edit", **{path: new})
    diff = changes_since(repo.root, "main")
    assert isinstance(diff, Diff)
    change = diff.file(path)
    assert change is not None
    found = definitions_changed(diff, change)
    assert isinstance(found, FileDefinitions), found
    return found


def _summary(found: FileDefinitions) -> dict[str, str]:
    return {t.definition.qualname: t.touch for t in found.touched}


def _sub(*pairs: tuple[str, str]) -> str:
    text = BASE
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    return text


EDIT = "def test_edit():\n    assert 1 + 1 == 2\n"
ADDED = "\n\ndef test_added():\n    assert True\n"
MOVED = _sub(
    ("def test_keep():\n    assert shared\n\n\n", ""),
    ("class TestBox:", "def test_keep():\n    assert shared\n\n\nclass TestBox:"),
)

CASES = [
    ("a test added", BASE + ADDED, {"test_added": "new"}),
    ("a test's body edited", _sub(("1 + 1 == 2", "1 + 2 == 3")), {"test_edit": "changed"}),
    (
        "a test renamed, its body unchanged",
        _sub(("def test_old_name", "def test_new_name")),
        {"test_new_name": "renamed"},
    ),
    (
        "a test renamed and edited",
        _sub(("def test_old_name", "def test_new_name"), ("value = 40", "value = 41")),
        {"test_new_name": "new"},
    ),
    ("a test moved within the file", MOVED, {}),
    (
        "a test re-indented into a class, unchanged",
        _sub((EDIT, "class TestEdit:\n    def test_edit(self):\n        assert 1 + 1 == 2\n")),
        {"TestEdit": "new", "TestEdit::test_edit": "new"},
    ),
    ("a comment edited in a test", _sub(("value = 40", "value = 40  # less two")), {}),
    ("a fixture edited", _sub(("return 1", "return 2")), {"shared": "changed"}),
    ("a class attribute edited", _sub(("size = 3\n", "size = 4\n")), {"TestBox": "changed"}),
    ("a method edited", _sub(("size == 3", "size >= 3")), {"TestBox::test_size": "changed"}),
    (
        "a class renamed, unchanged",
        _sub(("class TestBox", "class TestCrate")),
        {"TestCrate": "renamed", "TestCrate::test_size": "renamed"},
    ),
]


@pytest.mark.parametrize(("case", "new", "expected"), CASES, ids=[c[0] for c in CASES])
def test_what_a_change_did_to_the_definitions(
    tmp_path: Path, case: str, new: str, expected: dict[str, str]
) -> None:
    assert new != BASE, case
    assert _summary(_touched(tmp_path, new)) == expected


def test_a_rename_remembers_the_old_name(tmp_path: Path) -> None:
    found = _touched(tmp_path, _sub(("def test_old_name", "def test_new_name")))
    touched = found.touch_of("test_new_name")
    assert touched is not None and touched.renamed_from == "test_old_name"
    assert found.removed == ()


def test_a_copy_under_a_new_name_is_new(tmp_path: Path) -> None:
    copy = "\n\ndef test_copy():\n    value = 40\n    assert value + 2 == 42\n"
    found = _touched(tmp_path, BASE + copy)
    assert _summary(found) == {"test_copy": "new"}


def test_a_removed_test_is_listed(tmp_path: Path) -> None:
    found = _touched(tmp_path, _sub((EDIT, "")))
    assert (found.touched, found.removed) == ((), ("test_edit",))


def test_a_renamed_file_is_compared_with_its_old_path(tmp_path: Path) -> None:
    new = _sub(("def test_old_name", "def test_new_name"), ("1 + 1 == 2", "2 + 2 == 4"))
    found = _touched(tmp_path, new, path="tests/test_moved.py")
    assert found.path == "tests/test_moved.py"
    assert _summary(found) == {"test_edit": "changed", "test_new_name": "renamed"}


def test_a_new_side_that_does_not_parse_is_unavailable(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"test_mod.py": BASE})
    repo.commit("break", **{"test_mod.py": BASE + "\ndef test_broken(:\n"})
    diff = changes_since(repo.root, "main")
    assert isinstance(diff, Diff)
    change = diff.file("test_mod.py")
    assert change is not None
    found = definitions_changed(diff, change)
    assert isinstance(found, Unavailable)
    assert found.reason == "test_mod.py does not parse as Python"
