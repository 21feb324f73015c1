"""``flakewarden run --base``: every test whose first attempt failed says whether it ran the
change, on a real git repository and real pytest processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from blame_project import BROKEN_TOTAL, HARMLESS, blame_repo, run_blame
from helpers.project import Project


def test_a_broken_change_touches_and_a_flake_elsewhere_is_untouched(tmp_path: Path) -> None:
    repo = blame_repo(tmp_path / "repo")
    repo.commit("break total", **{"src/shop/cart.py": BROKEN_TOTAL})
    project, tests = run_blame(repo)

    total = tests["tests/test_cart.py::test_total"]
    assert total["outcome"] == "failed"
    assert total["change"]["verdict"] == "touches"
    assert total["change"]["lines"] == {"src/shop/cart.py": [[5, 5]]}

    flaky = tests["tests/test_flaky.py::test_flaky"]
    assert flaky["outcome"] == "flaky"
    assert flaky["change"]["verdict"] == "untouched", flaky["change"]
    assert "none of the 1 changed line" in flaky["change"]["why"]

    broken = tests["tests/test_broken.py::test_broken"]
    assert broken["change"]["verdict"] == "untouched"
    # A test that passed has nothing to blame.
    assert "change" not in tests["tests/test_cart.py::test_describe"]

    report = (project.root / "report" / "report.json").read_text(encoding="utf-8")
    assert '"merge_base"' in report and '"changed_lines": 1' in report


def test_a_changed_conftest_makes_its_folders_failures_unknown(tmp_path: Path) -> None:
    repo = blame_repo(tmp_path / "repo")
    conftest = (repo.root / "tests/sub/conftest.py").read_text(encoding="utf-8")
    hooked = conftest + "\n\ndef pytest_report_header(config):\n    return 'limits'\n"
    repo.commit("a header", **{"tests/sub/conftest.py": hooked})
    _, tests = run_blame(repo)
    limit = tests["tests/sub/test_limit.py::test_limit"]["change"]
    assert limit["verdict"] == "unknown"
    assert limit["why"] == "tests/sub/conftest.py changed, and it changes how the tests run"
    # A test outside the conftest's folder is not reached by it.
    assert tests["tests/test_broken.py::test_broken"]["change"]["verdict"] == "untouched"


def test_a_changed_fixture_that_the_test_ran_touches(tmp_path: Path) -> None:
    repo = blame_repo(tmp_path / "repo")
    conftest = (repo.root / "tests/sub/conftest.py").read_text(encoding="utf-8")
    repo.commit("raise the limit", **{"tests/sub/conftest.py": conftest.replace("3", "4")})
    _, tests = run_blame(repo)
    limit = tests["tests/sub/test_limit.py::test_limit"]["change"]
    assert limit["verdict"] == "touches"
    assert limit["lines"] == {"tests/sub/conftest.py": [[6, 6]]}


def test_a_module_level_change_is_unknown_for_a_test_that_imports_it(tmp_path: Path) -> None:
    repo = blame_repo(tmp_path / "repo")
    changed = BROKEN_TOTAL.replace("TAX = 0", "TAX = 1").replace(" + TAX + 1", " + TAX")
    repo.commit("tax", **{"src/shop/cart.py": changed})
    _, tests = run_blame(repo)
    # test_total calls total(), which reads TAX: it did not run line 1, yet the change
    # reached it through the import.
    total = tests["tests/test_cart.py::test_total"]
    assert total["change"]["verdict"] == "unknown"
    assert total["change"]["why"] == (
        "src/shop/cart.py changed module-level code (line 1), which runs at import, "
        "and the test uses that module"
    )
    flaky = tests["tests/test_flaky.py::test_flaky"]
    assert flaky["change"]["verdict"] == "unknown"  # its module holds shop.cart
    # test_broken's module refers to nothing of it, and it ran none of it.
    assert tests["tests/test_broken.py::test_broken"]["change"]["verdict"] == "untouched"


def test_failures_broken_on_the_base_can_be_kept_out_of_the_gate(tmp_path: Path) -> None:
    repo = blame_repo(tmp_path / "repo")
    repo.commit("tidy describe", **{"src/shop/cart.py": HARMLESS})
    project = Project(repo.root)
    gate = ("--check-base", "--untouched-failures", "ignore-in-gate")
    result = project.run("--reruns", "1", "--base", "main", *gate, env=repo.env())
    # test_broken and test_limit fail on main too, and ran none of the change: they do not
    # block this branch; they stay failed, and say why.
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes["tests/test_broken.py::test_broken"] == "failed"
    broken = result.test("tests/test_broken.py::test_broken")
    assert broken["change"]["verdict"] == "untouched"
    assert broken["base"]["verdict"] == "fails"
    assert broken["base"]["commit"] == repo.git("rev-parse", "main")
    blame = result.report["blame"]
    assert blame["ignored"] == [
        "tests/sub/test_limit.py::test_limit",
        "tests/test_broken.py::test_broken",
    ]
    assert (
        "BLAME: tests/test_broken.py::test_broken (ran none of this pull request's changes; "
        "fails on the base too; not blocking the merge)"
    ) in result.stdout
    # The default policy reports the same facts and fails the run.
    again = project.run(
        "--reruns", "1", "--base", "main", "--check-base", env=repo.env(), report_dir="again"
    )
    assert again.returncode == 1
    assert again.report["blame"]["ignored"] == []
    assert again.test("tests/test_broken.py::test_broken")["base"]["verdict"] == "fails"


def test_a_failure_the_change_caused_passes_on_the_base_and_blocks(tmp_path: Path) -> None:
    repo = blame_repo(tmp_path / "repo")
    repo.commit("break total", **{"src/shop/cart.py": BROKEN_TOTAL})
    project = Project(repo.root)
    result = project.run(
        "--reruns",
        "1",
        "--base",
        "main",
        "--check-base",
        "--untouched-failures",
        "ignore-in-gate",
        env=repo.env(),
    )
    assert result.returncode == 1
    total = result.test("tests/test_cart.py::test_total")
    assert total["change"]["verdict"] == "touches"
    # Only failures that ran none of the change go to the base.
    assert "base" not in total
    assert "tests/test_cart.py::test_total" not in result.report["blame"]["ignored"]


def test_shards_merge_their_blame_and_the_gate_forgives_the_same(tmp_path: Path) -> None:
    repo = blame_repo(tmp_path / "repo")
    repo.commit("tidy describe", **{"src/shop/cart.py": HARMLESS})
    project = Project(repo.root)
    gate = ("--base", "main", "--check-base", "--untouched-failures", "ignore-in-gate")
    for k in (1, 2):
        shard = project.run(
            "--reruns", "1", *gate, "--shard", f"{k}/2", env=repo.env(), report_dir=f"shard-{k}"
        )
        assert shard.returncode == 0, shard.stdout + shard.stderr
    merge = ["merge", "--expect", "2", "--report-dir", "merged", "shard-1", "shard-2"]
    merged = subprocess.run(
        [sys.executable, "-m", "flakewarden", *merge],
        cwd=repo.root,
        env=repo.env(),
        capture_output=True,
        text=True,
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    report = json.loads((repo.root / "merged" / "report.json").read_text(encoding="utf-8"))
    assert report["blame"]["ignored"] == [
        "tests/sub/test_limit.py::test_limit",
        "tests/test_broken.py::test_broken",
    ]
    assert {t["id"]: t["base"]["verdict"] for t in report["tests"] if "base" in t} == {
        "tests/sub/test_limit.py::test_limit": "fails",
        "tests/test_broken.py::test_broken": "fails",
    }
