"""``flakewarden dashboard``: the site built from a real history, its data, and its errors.

The command runs as a real subprocess on SQLite files written by the real ingest; the
page's data block is read back from the written ``index.html``.
"""

from __future__ import annotations

import html.parser
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from dashboard_builders import (
    BROKEN,
    FLAKY,
    HOSTILE_ID,
    QUARANTINED,
    RUNS,
    SHARED,
    build_history,
)
from helpers.hermetic import clean_env
from helpers.history_reports import as_github_run, report_dirs
from helpers.project import PYTHON

from flakewarden.dashboard.collect import issue_url, weeks
from flakewarden.history.store import HistoryStore
from flakewarden.model.history import HistoryRun, RunContext

__all__ = ["report_dirs"]  # the fixture


class DataBlock(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[tuple[dict[str, str], str]] = []
        self._attrs: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self._attrs = {k: v or "" for k, v in attrs}

    def handle_data(self, data: str) -> None:
        if self._attrs is not None:
            self.blocks.append((self._attrs, data))
            self._attrs = None


def dashboard(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "flakewarden", "dashboard", *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def page_data(site: Path) -> tuple[str, dict[str, Any]]:
    page = (site / "index.html").read_text(encoding="utf-8")
    parser = DataBlock()
    parser.feed(page)
    [(_, text)] = [b for b in parser.blocks if b[0].get("type") == "application/json"]
    assert not re.search(r"[<>&\u2028\u2029]", text)
    return page, json.loads(text)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_history(tmp_path_factory.mktemp("dashboard"))


@pytest.fixture(scope="module")
def site(history: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = history.parent / "site"
    done = dashboard("--db", str(history), "--out", str(out), "--window-runs", "30", cwd=out.parent)
    return done, out


def test_the_site_from_a_history(site: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    done, out = site
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("flakewarden: dashboard: ")
    page, data = page_data(out)
    assert HOSTILE_ID not in page and "<img" not in page
    assert data["counts"]["runs"] == RUNS and data["window"]["runs"] == 30
    tests = {t["i"]: t for t in data["tests"]}
    # Flakiest first: the test that flaked most in the window heads the list.
    assert data["tests"][0]["i"] == FLAKY
    flaky = tests[FLAKY]
    assert flaky["state"] == "flaky" and flaky["flaky"] == flaky["fa"] > 0
    assert 0 <= flaky["lo"] <= flaky["rate"] <= flaky["hi"] <= 1
    assert len(flaky["strip"]) == RUNS and set(flaky["strip"]) <= {"p", "x"}
    assert flaky["strip"].count("x") >= flaky["flaky"]
    assert sum(f for f, _ in flaky["trend"]) == flaky["strip"].count("x")
    assert sum(r for _, r in flaky["trend"]) == RUNS
    assert flaky["issue"].startswith("https://github.com/octo-org/octo-repo/issues?q=")
    broken = tests[BROKEN]
    assert broken["state"] == "broken" and broken["strip"].endswith("ffff")
    assert tests[QUARANTINED]["quarantined"]["runs"] == RUNS - 10
    assert "q" in tests[QUARANTINED]["strip"]
    assert HOSTILE_ID in tests
    # Runs are linked, oldest first.
    assert (
        data["strip_runs"][-1]["url"]
        == f"https://github.com/octo-org/octo-repo/actions/runs/{5000 + RUNS - 1}"
    )


def test_one_cause_is_one_group_over_every_test_it_hits(
    site: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, out = site
    _, data = page_data(out)
    first = data["groups"][0]
    assert first["exception"] == "PoolExhausted"
    assert first["message"] == "no free connection to N:N"
    assert first["frame"] == "tests/conftest.py::connect"
    assert sorted(t for t, _ in first["tests"]) == sorted(SHARED)
    assert first["tests_total"] == 3 and first["failures"] == sum(n for _, n in first["tests"])
    assert "no free connection to 127.0.0.1:" in first["messages"][0]
    assert first["recent"][0][1].startswith("https://github.com/octo-org/octo-repo/actions/runs/")
    keys = [g["key"] for g in data["groups"]]
    assert "AssertionError: assert N == N @ tests/test_math.py:9" in keys
    assert len(keys) == len(set(keys))


def test_from_real_runs(report_dirs: list[Path], tmp_path: Path) -> None:
    """Reports of real ``flakewarden run``s, as GitHub runs on main, ingested by the CLI."""
    copies = [as_github_run(d, tmp_path / f"run-{n}", 900 + n) for n, d in enumerate(report_dirs)]
    db = tmp_path / "h.db"
    done = subprocess.run(
        [PYTHON, "-m", "flakewarden", "history", "ingest", "--db", str(db), *map(str, copies)],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    done = dashboard("--db", str(db), "--out", "site", "--branch", "main", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _, data = page_data(tmp_path / "site")
    keys = {g["key"]: g for g in data["groups"]}
    broken = keys["AssertionError: broken @ test_other.py::test_broken"]
    assert broken["tests"] == [["test_other.py::test_broken", 6]]  # 3 attempts x 2 runs
    flake = keys["AssertionError: flaked @ test_flaky.py::test_flaky"]
    assert flake["tests"] == [["test_flaky.py::test_flaky", 1]]
    # Two of three tests failed a first attempt in each run: the suite fell over, so the
    # window scores neither run (as history show would) while the groups keep the failures.
    assert data["window"]["excluded_runs"] == 2 and data["tests"] == []
    assert [w["fell_over"] for w in data["weeks"]] == [2]


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: None, "no history at"),
        (lambda p: p.write_bytes(b"not sqlite at all, just text" * 10), "not a SQLite file"),
        (lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\xff" * 600), "corrupt"),
    ],
    ids=["missing", "not-sqlite", "corrupt"],
)
def test_a_missing_or_corrupt_database_is_one_line_and_exit_4(
    tmp_path: Path, setup: Any, message: str
) -> None:
    db = tmp_path / "h.db"
    setup(db)
    done = dashboard("--db", str(db), "--out", "site", cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("flakewarden: error: ") and message in line
    assert not (tmp_path / "site").exists()


def test_stress_verdicts_are_shown_and_bad_files_named(history: Path, tmp_path: Path) -> None:
    good = tmp_path / "stress"
    good.mkdir()
    verdict = {
        "schema": 1,
        "test_id": FLAKY,
        "verdict": "race",
        "quarantine_allowed": False,
        "reason": "the switch interval raised the rate",
        "runs": 400,
        "failures": 37,
        "finished_at": "2026-10-01T10:00:00Z",
        "where": {
            "suspects": [
                {"file": "ledger.py", "line": 13, "text": "self.total += cents", "score": 1.0},
                {"file": "<img src=x onerror=alert(1)>.py", "line": 2, "text": "<b>x</b>"},
                {"file": "cart.py", "line": "not a line"},
                {"file": "fourth.py", "line": 4, "text": "not shown"},
            ]
        },
    }
    (good / "verdict.json").write_text(json.dumps(verdict), encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text('{"verdict": "sideways"}', encoding="utf-8")
    done = dashboard(
        "--db", str(history), "--out", "site", "--verdicts", str(good), str(bad), cwd=tmp_path
    )
    assert done.returncode == 1
    assert "not a stress verdict, skipped: " in done.stderr and "bad.json" in done.stderr
    _, data = page_data(tmp_path / "site")
    [shown] = data["verdicts"][FLAKY]
    assert shown["verdict"] == "race" and shown["allowed"] is False and shown["runs"] == 400
    # The first three suspects, as verdict.md leads with: an unreadable one is left out.
    assert shown["where"] == [
        {"at": "ledger.py:13", "text": "self.total += cents"},
        {"at": "<img src=x onerror=alert(1)>.py:2", "text": "<b>x</b>"},
    ]


def test_weeks_count_runs_and_flaky_runs_per_iso_week() -> None:
    def run(at: str, flaky: int, tests: int = 10, first: int = 0) -> HistoryRun:
        return HistoryRun(at, RunContext(started_at=at), tests, first, 0, "x", flaky=flaky)

    found = weeks(
        [
            run("2026-09-07T06:00:00Z", 0),  # a Monday
            run("2026-09-13T23:00:00Z", 2, first=2),  # the Sunday of that week
            run("2026-09-14T00:00:00Z", 1, first=9),  # the next Monday; the suite fell over
        ],
        0.3,
    )
    assert found == [
        {"week": "2026-09-07", "runs": 2, "flaky_runs": 1, "flaky_tests": 2, "fell_over": 0},
        {"week": "2026-09-14", "runs": 1, "flaky_runs": 1, "flaky_tests": 1, "fell_over": 1},
    ]


def test_issue_links_search_the_flake_issue_by_title() -> None:
    url = issue_url("o/r", "t.py::test[a b]")
    assert url.startswith("https://github.com/o/r/issues?q=is%3Aissue%20label%3Aflaky-test")
    assert "%22flake%3A%20t.py%3A%3Atest%5Ba%20b%5D%22" in url
    assert issue_url("", "t") == ""


def test_an_empty_history_gives_a_page_that_says_so(tmp_path: Path) -> None:
    HistoryStore.open(tmp_path / "h.db").close()
    done = dashboard("--db", str(tmp_path / "h.db"), "--out", "site", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _, data = page_data(tmp_path / "site")
    assert data["tests"] == [] and data["groups"] == [] and data["weeks"] == []
