"""Burn-in's selection: the collected tests a change adds or changes, with why, in order."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import pytest
from helpers.git_repo import Repo, base_and_branch

from flakewarden.changes.diff import Diff, changes_since
from flakewarden.changes.selection import (
    CHANGED_TEST,
    IN_CHANGED_CLASS,
    NEW_TEST,
    CollectedItem,
    Selection,
    select_for_burn_in,
    uses_changed_fixture,
)
from flakewarden.runner.process import plugin_dir, plugin_env

CONFTEST = """
import pytest


@pytest.fixture
def db():
    return {"rows": 1}


@pytest.fixture
def user(db):
    return "ann"


@pytest.fixture
def clock():
    return 0
"""

TESTS = """
import pytest


def test_keep():
    assert True


def test_edit():
    assert 1 + 1 == 2


def test_old_name():
    value = 40
    assert value + 2 == 42


@pytest.mark.parametrize("n", [1, 2, 3])
def test_param(n):
    assert n


def test_uses_user(user):
    assert user


def test_uses_clock(clock):
    assert clock == 0


class TestBox:
    size = 3

    def helper(self):
        return self.size

    def test_size(self):
        assert self.helper() == 3

    def test_other(self):
        assert True
"""


def _sub(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    return text


def _collect(root: Path, *, record_fixtures: bool = True) -> list[CollectedItem]:
    """The items of a real ``pytest --collect-only`` with flakewarden's plugin recording."""
    results = root.parent / f"{root.name}-records.jsonl"
    results.unlink(missing_ok=True)
    with plugin_dir() as directory:
        extra = {"FLAKEWARDEN_RECORD_FIXTURES": "1"} if record_fixtures else {}
        # Only the plugin under test: the environment's other plugins slow start-up down.
        env = plugin_env(directory, results, extra={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **extra})
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
            cwd=root, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    (collected,) = [r for r in records if r["kind"] == "collected"]
    fixtures = collected.get("fixtures")
    assert (fixtures is not None) == record_fixtures
    return [
        CollectedItem(
            node_id,
            node_id.split("::", 1)[0],
            fixtures=None if fixtures is None else tuple(fixtures[node_id]),
        )
        for node_id in collected["ids"]
    ]


def _project(tmp_path: Path) -> Repo:
    return base_and_branch(
        tmp_path,
        {"tests/conftest.py": CONFTEST, "tests/test_mod.py": TESTS, "pytest.ini": "[pytest]\n"},
    )


def _select(
    repo: Repo, items: Optional[Sequence[CollectedItem]] = None, **options: object
) -> Selection:
    diff = changes_since(repo.root, "main")
    assert isinstance(diff, Diff), diff
    found = _collect(repo.root) if items is None else items
    return select_for_burn_in(diff, found, **options)  # type: ignore[arg-type]


def _why(selection: Selection) -> dict[str, tuple[str, ...]]:
    return {s.node_id: s.reasons for s in selection.run}


M = "tests/test_mod.py::"


# What pytest collects from the project, as the plugin records it (checked below).
FIXTURES = {
    "test_keep": (),
    "test_edit": (),
    "test_old_name": (),
    "test_param[1]": ("n",),
    "test_param[2]": ("n",),
    "test_param[3]": ("n",),
    "test_uses_user": ("user", "db"),  # ``db`` through ``user``
    "test_uses_clock": ("clock",),
    "TestBox::test_size": (),
    "TestBox::test_other": (),
}
ITEMS = [CollectedItem(M + name, "tests/test_mod.py", None, f) for name, f in FIXTURES.items()]


def test_the_plugin_records_each_items_fixture_names(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    assert _collect(repo.root) == ITEMS
    unrecorded = _collect(repo.root, record_fixtures=False)
    assert [i.node_id for i in unrecorded] == [i.node_id for i in ITEMS]
    assert [i.fixtures for i in unrecorded] == [None] * len(ITEMS)


def test_a_conftest_fixture_change_end_to_end(tmp_path: Path) -> None:
    """A real collection, a real diff: the users of the changed fixture, and only them."""
    repo = _project(tmp_path)
    repo.commit("db", **{"tests/conftest.py": _sub(CONFTEST, ('"rows": 1', '"rows": 2'))})
    selection = _select(repo)
    assert _why(selection) == {M + "test_uses_user": (uses_changed_fixture("db"),)}
    assert selection.collected == len(ITEMS)


KEEP = "def test_keep():\n    assert True\n\n\n"
BOX_CHANGED = {M + f"TestBox::{name}": (IN_CHANGED_CLASS,) for name in ("test_size", "test_other")}
CASES = [
    ("a test added", {"tests/test_mod.py": TESTS + "\n\ndef test_added():\n    assert 2\n"},
     {M + "test_added": (NEW_TEST,)}),
    ("a test's body edited", {"tests/test_mod.py": _sub(TESTS, ("1 + 1 == 2", "2 + 2 == 4"))},
     {M + "test_edit": (CHANGED_TEST,)}),
    ("a test renamed, its body unchanged",
     {"tests/test_mod.py": _sub(TESTS, ("def test_old_name", "def test_new_name"))}, {}),
    ("a test moved within the file",
     {"tests/test_mod.py": _sub(TESTS, (KEEP, ""),
                                ("class TestBox", KEEP + "class TestBox"))},
     {}),
    ("only a comment edited",
     {"tests/test_mod.py": _sub(TESTS, ("value = 40", "value = 40  # two short of it"))}, {}),
    ("a parametrized test edited: every case",
     {"tests/test_mod.py": _sub(TESTS, ("assert n\n", "assert n > 0\n"))},
     {M + f"test_param[{n}]": (CHANGED_TEST,) for n in (1, 2, 3)}),
    ("a fixture edited in conftest.py: its users, also through another fixture",
     {"tests/conftest.py": _sub(CONFTEST, ('"rows": 1', '"rows": 2'))},
     {M + "test_uses_user": (uses_changed_fixture("db"),)}),
    ("a class attribute edited: every test of the class",
     {"tests/test_mod.py": _sub(TESTS, ("size = 3", "size = 4"))},
     BOX_CHANGED),
    ("a helper method edited: every test of the class",
     {"tests/test_mod.py": _sub(TESTS, ("return self.size", "return int(self.size)"))},
     BOX_CHANGED),
    ("one method edited: that test only",
     {"tests/test_mod.py": _sub(TESTS, ("self.helper() == 3", "self.helper() >= 3"))},
     {M + "TestBox::test_size": (CHANGED_TEST,)}),
    ("the test file renamed, unchanged", {"tests/test_mod.py": None}, {}),
]  # fmt: skip


@pytest.mark.parametrize(("case", "files", "expected"), CASES, ids=[c[0] for c in CASES])
def test_what_burn_in_selects(
    tmp_path: Path,
    case: str,
    files: dict[str, Optional[str]],
    expected: dict[str, tuple[str, ...]],
) -> None:
    repo = _project(tmp_path)
    items = list(ITEMS)
    if files == {"tests/test_mod.py": None}:
        repo.move("tests/test_mod.py", "tests/test_renamed.py")
        repo.commit(case)
        items = [
            CollectedItem(
                i.node_id.replace("test_mod", "test_renamed"),
                "tests/test_renamed.py",
                None,
                i.fixtures,
            )
            for i in ITEMS
        ]
    else:
        repo.commit(case, **{k: v for k, v in files.items() if v is not None})
    if "renamed, its body" in case:
        items = [
            dataclasses.replace(i, node_id=i.node_id.replace("old_name", "new_name")) for i in items
        ]
    if "added" in case:
        items.append(CollectedItem(M + "test_added", "tests/test_mod.py", None, ()))
    selection = _select(repo, items)
    assert _why(selection) == expected
    assert (selection.not_run, selection.unmapped, selection.notes) == ((), (), ())
    assert selection.collected == len(items)
    assert selection.selected == len(expected)


def test_a_changed_fixture_with_items_lacking_fixture_names(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    repo.commit("clock", **{"tests/conftest.py": _sub(CONFTEST, ("return 0", "return 1"))})
    items = [
        CollectedItem(M + "test_uses_clock", "tests/test_mod.py"),
        CollectedItem(M + "test_keep", "tests/test_mod.py", fixtures=()),
        CollectedItem("other/test_far.py::test_far", "other/test_far.py"),
    ]
    selection = _select(repo, items)
    assert selection.run == ()
    assert [(u.node_id, u.why) for u in selection.unmapped] == [
        (
            M + "test_uses_clock",
            "no fixture names recorded for it: conftest changes cannot be mapped to it "
            "(changed fixtures clock)",
        )
    ]


def test_a_fixture_in_a_test_module_serves_that_module_only(tmp_path: Path) -> None:
    module = (
        "import pytest\n\n\n@pytest.fixture\ndef local():\n    return 1\n\n\n"
        "def test_a(local):\n    assert local\n"
    )
    repo = base_and_branch(
        tmp_path, {"a/test_a.py": module, "b/test_b.py": module.replace("test_a", "test_b")}
    )
    repo.commit("local", **{"a/test_a.py": module.replace("return 1", "return 2")})
    items = [
        CollectedItem("a/test_a.py::test_a", "a/test_a.py", 8, ("local",)),
        CollectedItem("b/test_b.py::test_b", "b/test_b.py", 8, ("local",)),
    ]
    assert _why(_select(repo, items)) == {"a/test_a.py::test_a": (uses_changed_fixture("local"),)}


def test_a_conftest_serves_only_the_tests_under_its_directory(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"a/conftest.py": CONFTEST, "b/conftest.py": CONFTEST})
    repo.commit("db", **{"a/conftest.py": _sub(CONFTEST, ("1}", "2}")), "a/sub/x.txt": "x\n"})
    items = [
        CollectedItem("a/sub/test_x.py::test_x", "a/sub/test_x.py", 0, ("db",)),
        CollectedItem("b/test_y.py::test_y", "b/test_y.py", 0, ("db",)),
        CollectedItem("ab/test_z.py::test_z", "ab/test_z.py", 0, ("db",)),
    ]
    assert _why(_select(repo, items)) == {"a/sub/test_x.py::test_x": (uses_changed_fixture("db"),)}


def test_a_conftest_change_outside_fixtures_is_noted(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    hook = "\n\ndef pytest_collection_modifyitems(items):\n    items.reverse()\n"
    repo.commit("hook", **{"tests/conftest.py": CONFTEST + hook})
    selection = _select(repo, ITEMS)
    assert selection.run == ()
    assert selection.notes == (
        "tests/conftest.py changed outside its fixtures (pytest_collection_modifyitems): "
        "not mapped to tests",
    )


def test_the_order_is_most_recently_changed_first_then_file_and_line(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"a.txt": "a\n"})
    repo.commit(
        "older", **{"test_old.py": "def test_o1():\n    pass\n\n\ndef test_o2():\n    pass\n"}
    )
    repo.commit("newer", **{"test_new.py": "def test_n():\n    pass\n"})
    repo.commit("same time as newer? no: later", **{"test_z.py": "def test_z():\n    pass\n"})
    items = [
        CollectedItem("test_old.py::test_o2", "test_old.py", 4),
        CollectedItem("test_old.py::test_o1", "test_old.py", 0),
        CollectedItem("test_new.py::test_n", "test_new.py", 0),
        CollectedItem("test_z.py::test_z", "test_z.py", 0),
    ]
    selection = _select(repo, items)
    assert [s.node_id for s in selection.run] == [
        "test_z.py::test_z",
        "test_new.py::test_n",
        "test_old.py::test_o1",
        "test_old.py::test_o2",
    ]
    times = [s.changed_at for s in selection.run]
    assert times == sorted(times, reverse=True) and None not in times
    # Without commit times: by file, then line.
    by_file = _select(repo, items, change_time=lambda path: None)
    assert [s.node_id for s in by_file.run] == [
        "test_new.py::test_n",
        "test_old.py::test_o1",
        "test_old.py::test_o2",
        "test_z.py::test_z",
    ]


def test_the_cap_and_the_breadth_guard(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"test_old.py": "def test_old():\n    pass\n"})
    new = "".join(f"def test_{n:02d}():\n    pass\n\n\n" for n in range(12))
    repo.commit("many", **{"test_many.py": new})
    items = [CollectedItem(f"test_many.py::test_{n:02d}", "test_many.py", 4 * n) for n in range(12)]
    items += [CollectedItem(f"test_other.py::test_{n}", "test_other.py", n) for n in range(8)]
    selection = _select(repo, items, cap=5)
    assert [s.node_id for s in selection.run] == [f"test_many.py::test_{n:02d}" for n in range(5)]
    assert [n.node_id for n in selection.not_run] == [
        f"test_many.py::test_{n:02d}" for n in range(5, 12)
    ]
    assert {n.why for n in selection.not_run} == {
        "beyond the cap of 5 tests (the most recently changed run first)"
    }
    assert selection.too_broad and selection.selected == 12 and selection.collected == 20
    assert selection.notes == (
        "12 of 20 collected tests are selected, more than 30%: the change is too broad to "
        "burn in whole; running the 5 most recently changed",
    )
    narrow = _select(
        repo, items + [CollectedItem(f"test_x.py::t{n}", "test_x.py") for n in range(30)]
    )
    assert not narrow.too_broad and narrow.notes == () and len(narrow.run) == 12


def test_a_rootdir_below_the_repository_top(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"pkg/tests/test_a.py": "def test_a():\n    pass\n"})
    repo.commit("edit", **{"pkg/tests/test_a.py": "def test_a():\n    assert 1\n"})
    items = [CollectedItem("tests/test_a.py::test_a", "tests/test_a.py", 0)]
    selection = _select(repo, items, rootdir=repo.root / "pkg")
    assert _why(selection) == {"tests/test_a.py::test_a": (CHANGED_TEST,)}
    outside = _select(repo, items, rootdir=tmp_path.parent)
    assert outside.run == () and "outside the repository" in outside.notes[0]


def test_an_inherited_test_is_found_by_its_line(tmp_path: Path) -> None:
    base = (
        "class TestBase:\n    def test_shared(self):\n        assert 1\n\n\n"
        "class TestSub(TestBase):\n    pass\n"
    )
    repo = base_and_branch(tmp_path, {"test_i.py": base})
    repo.commit("edit", **{"test_i.py": base.replace("assert 1", "assert 2")})
    items = [
        CollectedItem("test_i.py::TestBase::test_shared", "test_i.py", 1),
        CollectedItem("test_i.py::TestSub::test_shared", "test_i.py", 1),
    ]
    assert _why(_select(repo, items)) == {item.node_id: (CHANGED_TEST,) for item in items}


def test_a_test_file_that_does_not_parse_is_noted(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"test_b.py": "def test_b():\n    pass\n"})
    repo.commit("break", **{"test_b.py": "def test_b(:\n    pass\n"})
    selection = _select(repo, [CollectedItem("test_b.py::test_b", "test_b.py", 0)])
    assert selection.run == ()
    assert selection.notes == (
        "test_b.py does not parse as Python: its tests and fixtures are not selected",
    )
