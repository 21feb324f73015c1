"""The run's context in report.json, from a real ``flakewarden run`` in a GitHub-like job."""

from __future__ import annotations

import json
import platform
import subprocess
from pathlib import Path

import pytest
from helpers.project import Project

from flakewarden import __version__, cli
from flakewarden.history.context import collect_context, matrix_name
from flakewarden.reports.report_json import read_report

ACTIONS = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_REPOSITORY": "octo/widgets",
    "GITHUB_WORKFLOW": "CI",
    "GITHUB_RUN_ID": "9001",
    "GITHUB_RUN_ATTEMPT": "2",
    "GITHUB_JOB": "tests",
    "GITHUB_EVENT_NAME": "pull_request",
    "GITHUB_REF": "refs/pull/57/merge",
    "GITHUB_REF_NAME": "57/merge",
    "GITHUB_HEAD_REF": "fix-race",
    "GITHUB_BASE_REF": "main",
    "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
    "RUNNER_OS": "Linux",
    "FLAKEWARDEN_MATRIX": json.dumps({"python": "3.12", "os": "ubuntu-latest"}, indent=2),
}


def test_run_records_its_context_and_it_reads_back(project: Project) -> None:
    project.write("test_a.py", "def test_a():\n    pass\n")
    done = project.run("-q", env=ACTIONS)
    assert done.returncode == 0, done.stderr
    context = done.report["context"]
    assert context == {
        "repository": "octo/widgets",
        "workflow": "CI",
        "run_id": 9001,
        "run_attempt": 2,
        "job": "tests",
        "job_name": "os=ubuntu-latest, python=3.12",
        "event": "pull_request",
        "branch": "fix-race",
        "base_branch": "main",
        "pr_number": 57,
        "commit": ACTIONS["GITHUB_SHA"],
        "started_at": done.report["started_at"],
        "os": "Linux",
        "python": platform.python_version(),
        "flakewarden_version": __version__,
    }
    report = read_report(done.report_dir)
    assert report.context is not None and report.context.pr_number == 57
    assert report.context.is_pull_request

    # A laptop run knows only its time, OS, Python and version; --job-name names it.
    local = project.run("-q", "--job-name", "py312", report_dir="local")
    assert local.returncode == 0, local.stderr
    assert {k: v for k, v in local.report["context"].items() if v not in ("", None)} == {
        "job_name": "py312",
        "started_at": local.report["started_at"],
        "os": platform.system(),
        "python": platform.python_version(),
        "flakewarden_version": __version__,
    }

    # A report written before the context existed still reads.
    data = done.report
    del data["context"]
    old = Path(done.report_dir / "old.json")
    old.write_text(json.dumps(data), encoding="utf-8")
    assert read_report(old).context is None


def test_context_values_are_data_and_bounded() -> None:
    hostile = {
        **ACTIONS,
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_REF": "refs/heads/main",
        "GITHUB_REF_NAME": "main",
        "GITHUB_HEAD_REF": "",
        "GITHUB_RUN_ID": "12abc",
        "GITHUB_RUN_ATTEMPT": "-1",
        "GITHUB_JOB": "j" * 5000,
        "FLAKEWARDEN_MATRIX": "not json",
    }
    context = collect_context(hostile, started_at="t", version="v")
    assert (context.branch, context.pr_number, context.run_id, context.run_attempt) == (
        "main",
        None,
        None,
        None,
    )
    assert len(context.job) == 1000 and context.job_name == ""
    tag = collect_context({**hostile, "GITHUB_REF_TYPE": "tag"}, started_at="t", version="v")
    assert tag.branch == ""
    # Outside GitHub Actions, GitHub's variables are not taken (a laptop may set some).
    laptop = collect_context({"GITHUB_REPOSITORY": "o/r"}, started_at="t", version="v")
    assert laptop.repository == "" and laptop.run_id is None
    assert matrix_name("null") == "" and matrix_name('{"n": 2, "x": [1]}') == "n=2, x=[1]"


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_a_laptop_run_records_git_branch_and_commit_and_is_scored_by_branch(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write("test_a.py", "def test_a():\n    pass\n")
    _git(project.root, "init", "-q", "-b", "feature/cache")
    _git(project.root, "add", "test_a.py")
    _git(project.root, "commit", "-q", "-m", "a test")
    head = _git(project.root, "rev-parse", "HEAD")
    on_branch = project.run("-q", report_dir="on-branch")
    assert on_branch.returncode == 0, on_branch.stderr
    assert (on_branch.report["context"]["branch"], on_branch.report["context"]["commit"]) == (
        "feature/cache",
        head,
    )
    _git(project.root, "checkout", "-q", "--detach")
    detached = project.run("-q", report_dir="detached")
    assert (detached.report["context"]["branch"], detached.report["context"]["commit"]) == (
        "",
        head,
    )
    db = project.root / "h.db"
    assert cli.main(["history", "ingest", "--db", str(db), str(on_branch.report_dir)]) == 0
    assert cli.main(["history", "ingest", "--db", str(db), str(detached.report_dir)]) == 0
    capsys.readouterr()
    assert (
        cli.main(["history", "show", "--db", str(db), "--json", "--branch", "feature/cache"]) == 0
    )
    shown = json.loads(capsys.readouterr().out)
    assert shown["window"]["runs"] == 1
    assert [t["id"] for t in shown["tests"]] == ["test_a.py::test_a"]
