"""The digest ranked from the history, over real HTTP against the loopback GitHub emulator."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from pathlib import Path

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import emulator_env
from history_builders import ingest, iso, report

from flakewarden.cli import main
from flakewarden.issues.marker import format_marker
from flakewarden.model import AttemptOutcome, AttemptResult, Outcome
from flakewarden.model.causes import cause_id
from flakewarden.model.signatures import signature

NOW = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
OFTEN = "tests/t.py::test_often"  # 10 flaky runs now, 2 the window before: rising
STEADY = "tests/t.py::test_steady"  # 5 and 5
FRESH = "tests/t.py::test_fresh[`|@team <b>]"  # 3 now, none before: new this week
HARD = "tests/t.py::test_hard"  # one hard failure, no flaky run
FILLER = {f"tests/f.py::test_{n}": "p" for n in range(10)}


def _word(test: str, n: int) -> str:
    """Run ``n`` of 100 (1 oldest): runs 1-50 are the previous window, 51-100 this one."""
    if test == OFTEN:
        return "fp" if (n % 5 == 0 if n > 50 else n in (10, 20)) else "p"
    if test == STEADY:
        return "fp" if n % 10 == 0 else "p"
    if test == FRESH:
        return "fp" if n in (96, 98, 100) else "p"
    return "ff" if n == 70 else "p"


def test_digest_ranks_the_window_by_flaky_runs_with_trend_and_new_tests(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    monkeypatch.chdir(tmp_path)
    runs = [
        report(
            n,
            {**FILLER, **{t: _word(t, n) for t in (OFTEN, STEADY, FRESH, HARD)}},
            at=NOW - dt.timedelta(hours=100 - n),
        )
        for n in range(1, 101)
    ]
    db = ingest(tmp_path / "history.db", runs, tmp_path / "runs")
    issue = emulator.add_issue(
        f"flake: {OFTEN}", format_marker({"id": OFTEN, "hits": 3}), ("flaky-test",)
    )
    assert main(["digest", "--history", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"ranked from the flake history {db}" in out
    [digest] = [
        i
        for i in emulator.issues.values()
        if any(lb["name"] == "flake-digest" for lb in i["labels"])
    ]
    body = str(digest["body"])
    assert "from the flake history: last 50 runs on main" in body
    assert "4 tests failed a first attempt; 18 flaky runs in all." in body
    rows = [
        [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip("|"))]
        for line in body.splitlines()
        if re.match(r"\| \d+ \|", line)
    ]
    assert [r[1] for r in rows] == [
        f"`{OFTEN}`",
        f"`{STEADY}`",
        "``tests/t.py::test_fresh[`\\|@\u200bteam <b>]``",
        f"`{HARD}`",
    ]
    assert [r[2:4] for r in rows] == [["10", "0"], ["5", "0"], ["3", "0"], ["0", "1"]]
    assert rows[0][4] == "20.0% (10.0%–33.7%)" and rows[0][5] == "50"
    assert [r[6] for r in rows] == ["↑ from 4.0%", "=", "↑ from 0.0%", "↑ from 0.0%"]
    assert rows[0][-1] == f"#{issue['number']}" and rows[1][-1] == ""
    new = body.split("### New flaky tests this week (1)", 1)[1].split("\n| ", 1)[0]
    assert "test_fresh" in new and "3 flaky runs" in new and OFTEN not in new
    assert "@team" not in body  # no id can mention anyone


def _storm(n: int, hits: dict[str, set[int]], messages: dict[str, str]) -> dict[str, str]:
    return {cause: messages[cause] for cause, runs in hits.items() if n in runs}


def test_digest_from_the_history_gives_each_cause_issue_its_trend_over_the_window(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """20 runs, 10 a window: a pool that hit 1 run before and 4 now (one of them a run that
    fell over) is rising, a refusal that hit 3 before and none now stopped."""
    emulator_env(monkeypatch, emulator)
    monkeypatch.chdir(tmp_path)
    messages = {
        "pool": "RuntimeError: pool exhausted after 30 s",
        "refused": "ConnectionRefusedError: [Errno 111] Connection refused",
    }
    hits = {"pool": {4, 12, 15, 18, 20}, "refused": {2, 5, 9}}
    runs = []
    for n in range(1, 21):
        failing = _storm(n, hits, messages)
        made = report(
            n,
            {**FILLER, **{f"tests/db.py::test_{c}_{k}": "p" for c in hits for k in range(3)}},
            at=NOW - dt.timedelta(hours=30 - n),
            cutoff=n == 15,  # fell over: scored no test, still a run the pool hit
        )
        for test in made.tests:
            cause = test.id.split("::test_")[-1].rsplit("_", 1)[0]
            if cause in failing:
                test.attempts[:0] = [
                    AttemptResult(1, AttemptOutcome.FAILED, 0.01, "call", failing[cause])
                ]
                test.attempts[1] = dataclasses.replace(test.attempts[1], attempt=2)
                test.outcome = Outcome.FLAKY
        runs.append(made)
    db = ingest(tmp_path / "history.db", runs, tmp_path / "runs")
    numbers = {}
    for cause, text in messages.items():
        sig = signature("", text)
        marker = {
            "id": "cause:" + cause_id(sig),
            "cause": sig.key,
            "environment": cause == "refused",
            "hits": len(hits[cause]),
            "tests": [f"tests/db.py::test_{cause}_{k}" for k in range(3)],
            "first": "2026-11-01T00:00:00Z",
            "last": iso(NOW),
        }
        issue = emulator.add_issue(
            "flake cause: " + sig.key, format_marker(marker), ("flaky-test", "flake-cause")
        )
        numbers[cause] = issue["number"]
    assert main(["digest", "--history", str(db), "--window-runs", "10"]) == 0
    body = next(
        str(i["body"])
        for i in emulator.issues.values()
        if any(lb["name"] == "flake-digest" for lb in i["labels"])
    )
    own, outside = body.split("### Causes", 1)[1].split("### The environment", 1)
    assert "| Trend (the history's window) | Issue |" in own
    assert f"| rising: 4 of 10 runs, 1 of 10 before | #{numbers['pool']} |" in own
    assert f"| stopped: 0 of 10 runs, 3 of 10 before | #{numbers['refused']} |" in outside
    # Without the history the table keeps its columns.
    assert main(["digest"]) == 0
    body = next(
        str(i["body"])
        for i in emulator.issues.values()
        if any(lb["name"] == "flake-digest" for lb in i["labels"])
    )
    assert "Trend (the history's window)" not in body and f"#{numbers['pool']} |" in body
