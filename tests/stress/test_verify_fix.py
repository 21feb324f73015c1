"""``flakewarden verify-fix``: a close whose fix holds, one whose fix does not, one the
stress check cannot decide, and one closed as not planned. Real stress runs of a small
project, the issue in the loopback emulator."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import emulator_env
from helpers.project import make_project

from flakewarden.cli import main
from flakewarden.issues.marker import format_marker, read_marker

OK = "test_cache.py::test_fill"
# The test records whether a token reached it: the fix check must never hand one over.
TESTS = """\
import os
from pathlib import Path

HERE = Path(__file__).parent


def test_fill():
    (HERE / "token-seen.txt").write_text(str(bool(os.environ.get("GITHUB_TOKEN"))))
    assert not (HERE / "still-broken").exists()
"""
COMMAND = ["--", sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider"]


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: bool = False) -> Path:
    files = {"test_cache.py": TESTS}
    if broken:
        files["still-broken"] = "the fix did not land"
    project = make_project(tmp_path / "project", files)
    monkeypatch.chdir(project)
    return project


def _closed_flake(emu: GitHubEmulator, reason: str = "completed") -> dict[str, Any]:
    marker = {"id": OK, "hits": 4, "first": "2026-01-01T00:00:00Z", "last": "2026-02-01T00:00:00Z"}
    issue = emu.add_issue(f"flake: {OK}", format_marker(marker), ("flaky-test",), "closed")
    issue["state_reason"] = reason
    return issue


def _verify(*args: str) -> int:
    return main(["verify-fix", *args, "--budget-seconds", "120", *COMMAND])


def test_a_fix_that_holds_under_stress_is_recorded_and_the_issue_stays_closed(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    project = _project(tmp_path, monkeypatch)
    issue = _closed_flake(emulator)
    assert _verify("--issue", str(issue["number"]), "--margin", "50") == 0
    assert (project / "token-seen.txt").read_text() == "False"  # the tests never held it
    assert emulator.issues[issue["number"]]["state"] == "closed"
    (comment,) = emulator.comments[issue["number"]]
    assert comment["body"].startswith("**Fix verified under stress** on commit `0123456789ab`")
    assert "none failed: with 95% confidence its failure rate is below" in comment["body"]
    marker = read_marker(emulator.issues[issue["number"]]["body"])
    assert marker["fix_check"]["result"] == "held" and marker["verified_at"]
    assert marker["fix_check"]["runs"] >= 40 and marker["fix_check"]["failures"] == 0
    assert (project / "flakewarden-fix-check" / "verdict.json").is_file()


def test_a_fix_that_did_not_hold_reopens_the_issue_with_the_evidence(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    _project(tmp_path, monkeypatch, broken=True)
    issue = _closed_flake(emulator)
    assert _verify("--issue", str(issue["number"])) == 1
    after = emulator.issues[issue["number"]]
    assert (after["state"], after["state_reason"]) == ("open", "reopened")
    (comment,) = emulator.comments[issue["number"]]
    assert comment["body"].startswith("**The fix did not hold under stress**")
    assert "verdict deterministic" in comment["body"] and "```text" in comment["body"]
    marker = read_marker(after["body"])
    assert marker["fix_check"]["result"] == "failed" and "verified_at" not in marker
    assert marker["hits"] == 4  # the check is no hit: the flake was not seen in CI


def test_a_check_that_cannot_decide_leaves_the_close_unverified(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    _project(tmp_path, monkeypatch)
    issue = _closed_flake(emulator)
    code = main(["verify-fix", "--issue", str(issue["number"]), "--budget-seconds", "2", *COMMAND])
    assert code == 0
    assert emulator.issues[issue["number"]]["state"] == "closed"
    (comment,) = emulator.comments[issue["number"]]
    assert comment["body"].startswith("**Fix unverified:**")
    marker = read_marker(emulator.issues[issue["number"]]["body"])
    assert marker["fix_check"]["result"] == "unverified" and "verified_at" not in marker


def test_a_close_as_not_planned_is_left_alone(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    project = _project(tmp_path, monkeypatch)
    issue = _closed_flake(emulator, reason="not_planned")
    assert _verify("--issue", str(issue["number"])) == 0
    assert "left alone: it was closed as not planned" in capsys.readouterr().out
    assert not (project / "flakewarden-fix-check").exists()  # nothing ran
    assert emulator.comments[issue["number"]] == []


def test_the_workflow_runs_without_the_token_then_records_with_it(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The two steps of the issues-closed workflow: judge with no token, record with it."""
    emulator_env(monkeypatch, emulator)
    project = _project(tmp_path, monkeypatch, broken=True)
    issue = _closed_flake(emulator)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "closed", "issue": issue}), encoding="utf-8")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    token = emulator.token
    monkeypatch.delenv("GITHUB_TOKEN")
    logged = len(emulator.log)
    assert _verify("--from-event", "--no-github") == 1
    assert len(emulator.log) == logged  # step one asked nothing of GitHub
    assert emulator.issues[issue["number"]]["state"] == "closed"
    monkeypatch.setenv("GITHUB_TOKEN", token)
    verdict = str(project / "flakewarden-fix-check")
    assert main(["verify-fix", "--from-event", "--from-verdict", verdict]) == 1
    assert emulator.issues[issue["number"]]["state"] == "open"


def test_bad_invocations_are_usage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["verify-fix", "--no-github", *COMMAND]) == 4  # no test named
    assert main(["verify-fix", OK, "--issue", "3", "--no-github", *COMMAND]) == 4
    assert main(["verify-fix", OK, "--no-github"]) == 4  # no test command
    monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
    assert main(["verify-fix", "--from-event", "--no-github", *COMMAND]) == 4
