"""A storm files one cause issue: real runs, `flakewarden issues`, the GitHub emulator."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.cause_projects import reset, storm_project
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import (
    emulator_env,
    issue_labels,
    issue_marker,
    make_client,
    seed_issue,
)
from helpers.hermetic import clean_env
from helpers.project import Project

from flakewarden.cli import main
from flakewarden.issues.digest import ranking as digest
from flakewarden.issues.hit_ledger import Checkpoint
from flakewarden.issues.records import LABEL

STORM = "ConnectionRefusedError: [Errno N] Connection refused: could not connect to N:N"
CAUSE_TITLE = f"flake cause: {STORM} @ tests/conftest.py::query"
LONER = "tests/test_loner.py::test_alone"


def _issues(report_dir: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``flakewarden issues`` on ``report_dir``; what it printed."""
    assert main(["issues", "--report-dir", str(report_dir)]) == 0
    return capsys.readouterr().out


def _by_title(emulator: GitHubEmulator) -> dict[str, dict[str, Any]]:
    return {i["title"]: i for i in emulator.open_issues(LABEL)}


def _green_storm(project: Project, report_dir: str) -> Path:
    result = project.run("-q", report_dir=report_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.report["totals"]["flaky"] == 31
    return result.report_dir


def test_thirty_and_one_files_two_issues_and_counts_a_second_night_exactly(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    project = storm_project(tmp_path / "p", storm=30, modules=3)
    first = _green_storm(project, "night-1")
    out = _issues(first, capsys)
    issues = _by_title(emulator)
    assert sorted(issues) == sorted([CAUSE_TITLE, f"flake: {LONER}"]), out
    cause = issues[CAUSE_TITLE]
    assert sorted(issue_labels(emulator, cause["number"])) == ["flake-cause", "flaky-test"]
    marker = issue_marker(emulator, cause["number"])
    assert marker["hits"] == 1 and marker["environment"] is True
    assert len(marker["tests"]) == 30 and LONER not in marker["tests"]
    assert "30 tests failed with" in cause["body"] and "the environment" in cause["body"]
    assert issue_marker(emulator, issues[f"flake: {LONER}"]["number"])["hits"] == 1

    reset(project.root)
    second = _green_storm(project, "night-2")
    _issues(second, capsys)
    _issues(second, capsys)  # the same report published twice counts once
    issues = _by_title(emulator)
    assert sorted(issues) == sorted([CAUSE_TITLE, f"flake: {LONER}"])
    assert len(emulator.issues) == 2
    assert issue_marker(emulator, cause["number"])["hits"] == 2
    assert issue_marker(emulator, issues[f"flake: {LONER}"]["number"])["hits"] == 2


def test_a_test_issue_filed_before_is_linked_from_the_cause_and_left_alone(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    project = storm_project(tmp_path / "p", storm=4, modules=1)
    victim = "tests/test_db_0.py::test_query_2"
    ledger = Checkpoint(None, 0).to_json()
    own = seed_issue(
        emulator,
        {
            "id": victim,
            "hits": 1,
            "first": "2024-05-01T12:00:00Z",
            "origin": "r1",
            "ledger": ledger,
        },
    )
    _issues(_green_storm_of(project, 5), capsys)
    assert emulator.issues[own]["state"] == "open"
    assert issue_marker(emulator, own)["hits"] == 1  # not opened, not counted for a storm
    cause = next(i for i in emulator.open_issues("flake-cause"))
    assert f"(its own issue: #{own})" in cause["body"]
    assert len(emulator.open_issues(LABEL)) == 3  # the old one, the cause, the loner


def _green_storm_of(project: Project, flaky: int) -> Path:
    result = project.run("-q")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.report["totals"]["flaky"] == flaky
    return result.report_dir


def test_a_storm_across_three_shards_is_one_cause_filed_alike_from_shards_or_merge(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    project = storm_project(tmp_path / "p", storm=15, modules=3)
    shards = []
    for k in (1, 2, 3):
        shard = project.run("--shard", f"{k}/3", "-q", report_dir=f"shard-{k}")
        assert shard.returncode == 0, shard.stdout + shard.stderr
        assert len([c for c in shard.report["causes"] if len(c["tests"]) >= 3]) == 1
        shards.append(shard.report_dir)
    merged = subprocess.run(
        [sys.executable, "-m", "flakewarden", "merge", *map(str, shards), "--report-dir", "merged"],
        cwd=project.root,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    _issues(project.root / "merged", capsys)
    [cause] = emulator.open_issues("flake-cause")
    marker = issue_marker(emulator, cause["number"])
    assert marker["hits"] == 3 and len(marker["tests"]) == 15  # a hit per shard's run
    for shard in shards:  # each shard's job files too: the same runs, counted once
        _issues(shard, capsys)
    assert [i["number"] for i in emulator.open_issues("flake-cause")] == [cause["number"]]
    assert issue_marker(emulator, cause["number"])["hits"] == 3
    assert len(emulator.open_issues(LABEL)) == 2


def test_the_digest_ranks_causes_apart_and_says_which_stopped(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    project = storm_project(tmp_path / "p", storm=4, modules=2)
    _issues(_green_storm_of(project, 5), capsys)  # an outage's cause issue and the loner's
    ledger = Checkpoint(None, 0).to_json()
    race = {
        "id": "cause:c0123456789ab",
        "cause": "RuntimeError: pool exhausted @ tests/conftest.py::pool",
        "environment": False,
        "hits": 3,
        "first": "2024-05-01T00:00:00Z",
        "last": "2024-05-02T00:00:00Z",  # long ago: it stopped
        "tests": [
            "tests/a.py::t1",
            "tests/a.py::t2",
            "tests/a.py::t3",
            "tests/a.py::t4",
            "tests/a.py::t5",
        ],
        "ledger": ledger,
    }
    old = seed_issue(emulator, race, labels=(LABEL, "flake-cause"))
    now = dt.datetime.now(dt.timezone.utc)
    digest.build_digest(make_client(emulator, write_interval=0), "octo-org/octo-repo", now)
    [body] = [
        str(i["body"])
        for i in emulator.issues.values()
        if any(lb["name"] == "flake-digest" for lb in i["labels"])
    ]
    causes_at, environment_at = body.index("### Causes"), body.index("### The environment")
    own = body[causes_at:environment_at]
    # "@" is kept from mentioning anyone (a zero-width space), a date's "-" escaped.
    assert "`RuntimeError: pool exhausted @\u200b tests/conftest.py::pool` | 5 | 3 |" in own
    assert f"| stopped: not seen since 2024-05-02 | #{old} |" in own
    outside = body[environment_at:]
    assert (
        "Causes of the environment's, not of the tests: 1 of the 5 hits recorded (20%;" in outside
    )
    assert "| 4 | 1 | active: last seen " in outside and "ConnectionRefusedError" in outside
    table = body[body.index("| # | Test |") :]
    assert f"`{LONER}`" in table and "cause:" not in table


def test_an_outage_of_two_tests_is_filed_under_its_cause_not_on_their_own_issues(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    project = storm_project(tmp_path / "p", storm=2, modules=1)
    _issues(_green_storm_of(project, 3), capsys)
    [cause] = emulator.open_issues("flake-cause")
    assert issue_marker(emulator, cause["number"])["tests"] == [
        "tests/test_db_0.py::test_query_0",
        "tests/test_db_0.py::test_query_1",
    ]
    assert sorted(i["title"] for i in emulator.open_issues(LABEL)) == [
        CAUSE_TITLE,
        f"flake: {LONER}",
    ]
