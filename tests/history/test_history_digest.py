"""The digest ranked from the history, over real HTTP against the loopback GitHub emulator."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import emulator_env
from history_builders import ingest, report

from flakewarden.cli import main
from flakewarden.issues.marker import format_marker

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
