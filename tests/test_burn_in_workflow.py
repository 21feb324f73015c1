"""The reusable burn-in workflow: its job's shape, and its script run with bash on a real change.

The ``Burn in`` step's ``run:`` script is taken from ``.github/workflows/burn-in.yml`` and
executed as the runner would, in a real git repository whose branch adds a test.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import yaml
from helpers.git_repo import Repo
from helpers.interpreter import path_with_python

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "burn-in.yml"


def _job() -> dict[str, Any]:
    document = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    job: dict[str, Any] = document["jobs"]["burn-in"]
    return job


def _run_burn_in(work: Path, base: str) -> tuple[subprocess.CompletedProcess[str], str]:
    step = next(s for s in _job()["steps"] if s.get("name") == "Burn in")
    summary = work.parent / "summary.md"
    summary.write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "FLAKEWARDEN"))}
    env.update(
        {
            # `python` is the interpreter running this suite, which has flakewarden installed
            # (perhaps only there: in a virtualenv).
            "PATH": path_with_python(work.parent / "python-bin", env.get("PATH", "")),
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "BUDGET": "60",
            "BASE": base,
            "TEST_COMMAND": "python -m pytest -p no:cacheprovider",
            "GITHUB_STEP_SUMMARY": str(summary),
        }
    )
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done, summary.read_text(encoding="utf-8")


def _project(root: Path) -> Repo:
    repo = Repo(root)
    repo.write("pytest.ini", "[pytest]\n")
    repo.write("tests/test_old.py", "def test_old():\n    assert True\n")
    repo.commit("base")
    repo.branch("topic")
    return repo


def test_the_job_reads_only_and_fetches_the_base_history() -> None:
    job = _job()
    assert job["permissions"] == {"contents": "read"}
    checkout = next(
        s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout")
    )
    assert checkout["with"] == {"persist-credentials": False, "fetch-depth": 0}
    # Off a pull request (a merge queue's group, a push) every step but the note is skipped.
    guarded = [s for s in job["steps"] if s.get("name") != "Nothing to burn in"]
    assert all("github.event_name == 'pull_request'" in s["if"] for s in guarded)


def test_a_new_test_that_always_fails_fails_the_check_and_the_summary_names_it(
    tmp_path: Path,
) -> None:
    repo = _project(tmp_path / "repo")
    repo.commit(
        "add a broken test", **{"tests/test_new.py": "def test_new():\n    assert 1 == 2\n"}
    )
    done, summary = _run_burn_in(repo.root, "main")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "tests/test_new.py::test_new" in summary
    assert "deterministic" in summary
    assert "tests/test_old.py::test_old" not in summary


def test_a_change_that_touches_no_test_runs_nothing_and_passes(tmp_path: Path) -> None:
    repo = _project(tmp_path / "repo")
    repo.commit("docs", **{"README.md": "A change that touches no test.\n"})
    done, _ = _run_burn_in(repo.root, "main")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stressing" not in done.stdout + done.stderr
    assert not (repo.root / "flakewarden-burn-in" / "tests").exists()
