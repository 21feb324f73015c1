"""What burn-in reads before it stresses: one real collection, the history, the selection."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from burn_in_project import FAST_PYTEST, PYTEST, base_project, burn_in
from helpers.git_repo import Repo
from history.history_builders import ingest, report

from flakewarden.burn_in.collect import collect
from flakewarden.changes import Diff, changes_since, select_for_burn_in
from flakewarden.history.seen import seen_on_branch
from flakewarden.history.store import HistoryStore

MODULE = """
import pytest


def plain():
    pass


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.skipif(False, reason="never")
def test_decorated(n, tmp_path):
    assert n


class TestBox:
    def test_in_class(self, user):
        assert user
"""

CONFTEST = """
import pytest


@pytest.fixture
def user():
    return "ann"
"""


def test_one_collection_records_each_items_file_line_and_fixtures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (project / "tests" / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (project / "tests" / "test_mod.py").write_text(MODULE, encoding="utf-8")
    for name, value in FAST_PYTEST.items():
        monkeypatch.setenv(name, value)
    # Under xdist too: collecting only, its workers stand aside and the items are ours.
    found = collect([*PYTEST, "-p", "xdist.plugin", "-n", "2"], project, tmp_path / "records")
    assert found.errors == () and found.rootdir == project
    by_id = {item.node_id: item for item in found.items}
    first = by_id["tests/test_mod.py::test_decorated[1]"]
    # pytest's item.location: the file relative to the rootdir, the line counted from 0,
    # a decorated function's being its first decorator's.
    assert (first.path, first.line) == ("tests/test_mod.py", 8)
    assert first.fixtures is not None and {"n", "tmp_path"} <= set(first.fixtures)
    boxed = by_id["tests/test_mod.py::TestBox::test_in_class"]
    assert (boxed.path, boxed.line) == ("tests/test_mod.py", 15)
    assert boxed.fixtures is not None and "user" in boxed.fixtures
    record = next(
        json.loads(line)
        for line in (tmp_path / "records" / "results.jsonl").read_text("utf-8").splitlines()
        if json.loads(line)["kind"] == "collected"
    )
    assert record["locations"]["tests/test_mod.py::TestBox::test_in_class"] == [
        "tests/test_mod.py",
        15,
    ]


def test_a_collection_the_command_cannot_start_is_one_usage_line(tmp_path: Path) -> None:
    repo = base_project(tmp_path / "repo")
    repo.commit("new", **{"tests/test_new.py": "def test_new():\n    assert True\n"})
    result = burn_in(repo.root, "--base", "main", command=[sys.executable, "-c", "print(1)"])
    assert result.returncode == 4, result.output
    assert "never started pytest" in result.stderr and len(result.stderr.splitlines()) == 1


def test_selected_by_the_caller_join_the_order_and_the_cap(tmp_path: Path) -> None:
    repo = base_project(tmp_path / "repo")
    repo.commit("new", **{"tests/test_new.py": "def test_new():\n    assert True\n"})
    diff = changes_since(repo.root, "main")
    assert isinstance(diff, Diff)
    items = collect(PYTEST, repo.root, tmp_path / "records").items
    more = "tests/test_more.py::test_more_3"
    also = {more: "never seen on main", "tests/test_new.py::test_new": "never seen on main"}
    selection = select_for_burn_in(diff, items, also=also, cap=1)
    assert [(s.node_id, s.reasons) for s in selection.run] == [
        ("tests/test_new.py::test_new", ("new test", "never seen on main"))
    ]
    assert [n.node_id for n in selection.not_run] == [more]


def test_the_history_tells_the_branchs_tests_apart_from_a_pull_requests(tmp_path: Path) -> None:
    db = ingest(
        tmp_path / "history.db",
        [
            report(1, {"a.py::test_a": "p", "a.py::test_b": "fp"}),
            report(2, {"a.py::test_pr": "p"}, branch="main", event="pull_request", pr_number=4),
            report(3, {"a.py::test_other": "p"}, branch="other"),
        ],
        tmp_path / "reports",
    )
    with HistoryStore.open(db, create=False) as store:
        seen = seen_on_branch(store, "main")
        assert seen.runs == 1 and set(seen.durations) == {"a.py::test_a", "a.py::test_b"}
        assert seen.durations["a.py::test_a"] > 0
        assert seen_on_branch(store, "nowhere") == (0, {})


def test_a_test_the_base_branch_never_ran_is_new_even_with_no_python_change(
    tmp_path: Path,
) -> None:
    # A test generated from a data file: the change adds a line, pytest a new test id.
    repo = Repo(tmp_path / "repo")
    repo.write("pytest.ini", "[pytest]\n")
    repo.write("cases.txt", "1\n2\n")
    repo.write(
        "test_cases.py",
        """
        from pathlib import Path

        import pytest

        CASES = Path(__file__).with_name("cases.txt").read_text().split()


        @pytest.mark.parametrize("case", CASES)
        def test_case(case):
            assert int(case) > 0
        """,
    )
    repo.commit("base")
    repo.branch("topic")
    repo.commit("one more case", **{"cases.txt": "1\n2\n3\n"})
    db = ingest(
        tmp_path / "history.db",
        [report(1, {"test_cases.py::test_case[1]": "p", "test_cases.py::test_case[2]": "p"})],
        tmp_path / "reports",
    )
    result = burn_in(repo.root, "--base", "main", "--history", str(db), "--budget-seconds", "1")
    assert result.returncode == 0, result.output
    data = result.data
    assert data["base_branch"] == "main"
    assert data["selection"]["run"] == [
        {"id": "test_cases.py::test_case[3]", "reasons": ["never seen on main"]}
    ]
    (tested,) = data["tests"]
    assert tested["id"] == "test_cases.py::test_case[3]" and tested["failures"] == 0
    assert (result.report_dir / tested["verdict_dir"] / "verdict.json").is_file()
    assert "test_cases.py::test_case[3] (never seen on main)" in result.stdout
