"""Blame on the states a pull request's clone can be in, and on what coverage cannot see."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from blame_project import BROKEN_DESCRIBE, blame_repo, run_blame
from helpers.git_repo import Repo
from helpers.project import Project


def test_a_deleted_module_makes_the_failures_unknown(tmp_path: Path) -> None:
    repo = blame_repo(tmp_path / "repo")
    repo.write("src/shop/legacy.py", "def old():\n    return 1\n")
    repo.commit("legacy")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--ff-only", "topic")
    repo.git("checkout", "-q", "topic")
    repo.remove("src/shop/legacy.py")
    repo.commit("drop legacy")
    _, tests = run_blame(repo)
    broken = tests["tests/test_broken.py::test_broken"]["change"]
    assert broken["verdict"] == "unknown"
    assert broken["why"].startswith("src/shop/legacy.py was deleted")


def test_a_renamed_module_counts_only_its_changed_lines(tmp_path: Path) -> None:
    repo = blame_repo(tmp_path / "repo")
    repo.move("src/shop/cart.py", "src/shop/basket.py")
    repo.write("src/shop/basket.py", BROKEN_DESCRIBE)
    for test in ("tests/test_cart.py", "tests/test_flaky.py"):
        text = (repo.root / test).read_text(encoding="utf-8")
        repo.write(test, text.replace("shop.cart", "shop.basket"))
    repo.commit("rename cart to basket, and break describe")
    _, tests = run_blame(repo)
    describe = tests["tests/test_cart.py::test_describe"]["change"]
    assert describe == {
        "verdict": "touches",
        "lines": {"src/shop/basket.py": [[9, 9]]},
        "why": "it executed 1 changed line in src/shop/basket.py",
    }
    # total's lines came over unchanged with the rename: no change ran there. test_flaky's
    # own import line changed: the change reached it at import.
    assert tests["tests/test_broken.py::test_broken"]["change"]["verdict"] == "untouched"
    flaky = tests["tests/test_flaky.py::test_flaky"]["change"]
    assert flaky["verdict"] == "unknown"
    assert flaky["why"].startswith("tests/test_flaky.py changed module-level code (line 3)")


def test_a_shallow_clone_says_which_fetch_is_missing_and_goes_on(tmp_path: Path) -> None:
    origin = blame_repo(tmp_path / "origin")
    origin.commit("break describe", **{"src/shop/cart.py": BROKEN_DESCRIBE})
    clone = Repo(tmp_path / "clone", init=False)
    subprocess.run(
        [
            "git",
            "clone",
            "-q",
            "--depth",
            "1",
            "--branch",
            "topic",
            origin.root.as_uri(),
            str(clone.root),
        ],
        check=True,
        env=origin.env(),
        capture_output=True,
    )
    clone.git("fetch", "-q", "--depth", "1", "origin", "main:refs/remotes/origin/main")
    project = Project(clone.root)
    result = project.run("--reruns", "1", "--base", "origin/main", env=clone.env())
    assert result.returncode == 1, result.stdout + result.stderr
    said = result.stdout
    assert "blame: no merge base of 'origin/main' and HEAD: this clone is shallow" in said
    assert "fetch-depth: 0" in said and "going on without it" in said
    report = result.report
    assert report["blame"]["unavailable"].startswith("no merge base")
    assert all("change" not in test for test in report["tests"])
    assert result.outcomes["tests/test_cart.py::test_describe"] == "failed"


def test_a_detached_head_is_compared_with_the_base_it_is_given(tmp_path: Path) -> None:
    repo = blame_repo(tmp_path / "repo")
    repo.commit("break describe", **{"src/shop/cart.py": BROKEN_DESCRIBE})
    repo.git("checkout", "-q", "--detach", "HEAD")
    _, tests = run_blame(repo)
    assert tests["tests/test_cart.py::test_describe"]["change"]["verdict"] == "touches"


def test_a_changed_data_file_the_test_read_is_unknown(tmp_path: Path) -> None:
    repo = blame_repo(tmp_path / "repo")
    repo.write("tests/data/limits.json", '{"limit": 1}\n')
    repo.write(
        "tests/test_data.py",
        """
        import json
        from pathlib import Path


        def test_reads_limits():
            data = json.loads(Path(__file__).with_name("data").joinpath("limits.json").read_text())
            assert data["limit"] == 2
        """,
    )
    repo.commit("limits")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--ff-only", "topic")
    repo.git("checkout", "-q", "topic")
    repo.commit(
        "lower the limit", **{"tests/data/limits.json": '{"limit": 0}\n', "README.md": "x\n"}
    )
    _, tests = run_blame(repo)
    data = tests["tests/test_data.py::test_reads_limits"]["change"]
    assert data["verdict"] == "unknown"
    assert data["why"] == "it read tests/data/limits.json, which the change altered"
    # README.md changed too, but no test opened it.
    assert tests["tests/test_broken.py::test_broken"]["change"]["verdict"] == "untouched"


def test_a_test_that_starts_a_subprocess_is_unknown(tmp_path: Path) -> None:
    repo = blame_repo(tmp_path / "repo")
    repo.write(
        "tests/test_cli.py",
        """
        import subprocess
        import sys


        def test_cli():
            done = subprocess.run([sys.executable, "-c", "import shop.cart"], capture_output=True)
            assert done.returncode == 5
        """,
    )
    repo.commit("cli test")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--ff-only", "topic")
    repo.git("checkout", "-q", "topic")
    repo.commit("break describe", **{"src/shop/cart.py": BROKEN_DESCRIBE})
    _, tests = run_blame(repo)
    cli = tests["tests/test_cli.py::test_cli"]["change"]
    assert cli["verdict"] == "unknown"
    assert cli["why"].startswith(f"it started a subprocess ({sys.executable} -c import shop.cart)")


@pytest.mark.parametrize(
    "how",
    [["--coverage"], ["-n", "2"]],
    ids=["under-the-runs-coverage", "xdist-rerun"],
)
def test_blame_is_measured_under_coverage_and_under_xdist(tmp_path: Path, how: list[str]) -> None:
    repo = blame_repo(tmp_path / "repo")
    repo.commit("break describe", **{"src/shop/cart.py": BROKEN_DESCRIBE})
    project = Project(repo.root)
    flags = how if how == ["--coverage"] else []
    command = [sys.executable, "-m", "pytest", *([] if flags else how)]
    result = project.run("--reruns", "1", "--base", "main", *flags, command=command, env=repo.env())
    assert result.returncode == 1, result.stdout + result.stderr
    describe = result.test("tests/test_cart.py::test_describe")["change"]
    assert describe["verdict"] == "touches" and describe["lines"] == {"src/shop/cart.py": [[9, 9]]}
    flaky = result.test("tests/test_flaky.py::test_flaky")["change"]
    assert flaky["verdict"] == "untouched", flaky
    # Measured on the rerun only, whether the run measures coverage or not.
    plan = json.loads((result.report_dir / "attempts" / "2" / "blame" / "plan.json").read_text())
    assert plan["shared"] is bool(flags)
    assert not (result.report_dir / "attempts" / "1" / "blame").exists()
