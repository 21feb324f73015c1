"""``flakewarden burn-in`` when there is nothing to stress: real git, real pytest, the real CLI.

A change with no test, a renamed test, a clone without the history to diff: each ends
green and fast, runs no stress, and says why.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from burn_in_project import base_project, burn_in
from helpers.git_repo import Repo


def _nothing_stressed(result_dir: Path) -> None:
    assert not (result_dir / "tests").exists() or not any((result_dir / "tests").iterdir())


def test_a_change_without_python_runs_nothing_and_collects_nothing(tmp_path: Path) -> None:
    repo = base_project(tmp_path / "repo")
    repo.commit("docs", **{"README.md": "# project\n"})
    result = burn_in(repo.root, "--base", "main")
    assert result.returncode == 0, result.output
    assert "touches no Python file" in result.stdout
    assert "nothing to burn in" in result.stdout
    data = result.data
    assert data["schema"] == 1 and data["selection"] is None and data["tests"] == []
    assert data["collection_seconds"] is None
    _nothing_stressed(result.report_dir)


def test_a_change_with_no_tests_selects_nothing_fast_after_collection(tmp_path: Path) -> None:
    repo = base_project(tmp_path / "repo")
    repo.commit("code", **{"src_module.py": "VALUE = 2\n"})
    result = burn_in(repo.root, "--base", "main")
    assert result.returncode == 0, result.output
    assert "no test selected of 12 collected tests" in result.stdout
    data = result.data
    assert data["selection"]["collected"] == 12 and data["selection"]["run"] == []
    assert data["tests"] == [] and data["exit_code"] == 0
    _nothing_stressed(result.report_dir)
    # The whole command, its own start-up and git's diff included, beyond the collection.
    assert result.seconds - data["collection_seconds"] < 2.0, result.seconds


def test_a_renamed_test_selects_nothing(tmp_path: Path) -> None:
    repo = base_project(tmp_path / "repo")
    old = (repo.root / "tests/test_old.py").read_text(encoding="utf-8")
    repo.commit("rename", **{"tests/test_old.py": old.replace("test_old_name", "test_new_name")})
    result = burn_in(repo.root, "--base", "main")
    assert result.returncode == 0, result.output
    assert "no test selected" in result.stdout
    ids = [t["id"] for t in result.data["selection"]["run"]]
    assert ids == [] and "test_new_name" not in result.stdout


def _origin_with_topic(tmp_path: Path) -> Repo:
    repo = base_project(tmp_path / "origin")
    repo.commit("more", **{"tests/test_new.py": "def test_new():\n    assert True\n"})
    return repo


def test_a_shallow_clone_says_what_to_fetch_and_runs_nothing(tmp_path: Path) -> None:
    origin = _origin_with_topic(tmp_path)
    clone = tmp_path / "clone"
    origin.git(
        "clone", "-q", "--depth", "1", "--no-single-branch", "-b", "topic",
        f"file://{origin.root}", str(clone),
    )  # fmt: skip
    result = burn_in(clone, "--base", "origin/main")
    assert result.returncode == 0, result.output
    assert "this clone is shallow" in result.stderr and "git fetch --unshallow" in result.stderr
    assert "nothing run (no diff)" in result.stdout
    data = result.data
    assert "shallow" in data["unavailable"] and data["tests"] == []
    assert not (result.report_dir / "collection").exists()
    _nothing_stressed(result.report_dir)


def test_a_missing_base_says_which_fetch_brings_it(tmp_path: Path) -> None:
    origin = _origin_with_topic(tmp_path)
    clone = tmp_path / "clone"
    origin.git("clone", "-q", "--depth", "1", "-b", "topic", f"file://{origin.root}", str(clone))
    result = burn_in(clone, "--base", "origin/main")
    assert result.returncode == 0, result.output
    assert "git fetch origin main" in result.stderr
    assert "fetch-depth: 0" in result.stderr
    assert result.data["unavailable"] and result.data["tests"] == []


def test_no_base_to_compare_with_is_a_warning_too(tmp_path: Path) -> None:
    repo = base_project(tmp_path / "repo")
    result = burn_in(repo.root)  # no --base, no origin: no default base either
    assert result.returncode == 0, result.output
    assert "no base to compare with" in result.stderr


def test_no_command_and_a_missing_history_are_usage_errors(tmp_path: Path) -> None:
    repo = base_project(tmp_path / "repo")
    done = subprocess.run(
        [sys.executable, "-m", "flakewarden", "burn-in"],
        cwd=repo.root,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 4 and "no test command" in done.stderr
    result = burn_in(repo.root, "--history", str(tmp_path / "absent.db"))
    assert result.returncode == 4 and "--history: no such file" in result.stderr
