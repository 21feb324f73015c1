"""Every retry is evidence: ``flakewarden.retry`` inside a test, under ``flakewarden run``, is
recorded for that test and attempt and shown as ``passed (retried inside: ...)``; with
``retry.count_as_flaky`` such a test is filed like a flake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import emulator_env
from helpers.project import PYTEST, Project, Result

from flakewarden.cli import main
from flakewarden.issues.marker import read_marker
from flakewarden.model import RunReport
from flakewarden.reports.annotations import NOTICE, plan_annotations

SUITE = """
import threading
from pathlib import Path

import pytest

from flakewarden.retry import retry


def failing_first(name, times, error):
    count = Path(__file__).with_name(name + ".count")

    def call():
        runs = int(count.read_text()) + 1 if count.exists() else 1
        count.write_text(str(runs))
        if runs <= times:
            raise error(f"{name} failed call {runs}")
        return runs

    return call


fetch = failing_first("price", 2, TimeoutError)


@retry(on=TimeoutError, attempts=4, initial_delay=0.01, jitter=0)
def fetch_price():
    return fetch()


def test_price():
    assert fetch_price() == 3


def test_in_a_thread():
    login = retry(on=ConnectionError, attempts=3, initial_delay=0.01)(
        failing_first("login", 1, ConnectionResetError)
    )
    done = []
    worker = threading.Thread(target=lambda: done.append(login()))
    worker.start()
    worker.join()
    assert done == [2]


@pytest.fixture
def database():
    connect = retry(on=OSError, attempts=2, initial_delay=0.01)(
        failing_first("connect", 1, ConnectionRefusedError)
    )
    return connect()


def test_with_a_fixture(database):
    assert database == 2


def test_never_retried():
    assert fetch_price.__wrapped__.__name__ == "fetch_price"


def test_exhausted():
    give_up = retry(on=TimeoutError, attempts=2, initial_delay=0.01)(
        failing_first("exhausted", 9, TimeoutError)
    )
    give_up()
"""

TID = "tests/test_retries.py::test_"


def _run(project: Project, *args: str, command: list[str] | None = None) -> Result:
    project.write("tests/test_retries.py", SUITE)
    return project.run(*args, "--reruns", "1", command=command)


def test_retries_inside_a_test_are_recorded_for_its_attempt(project: Project) -> None:
    result = _run(project)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.outcomes == {
        f"{TID}price": "passed",
        f"{TID}in_a_thread": "passed",
        f"{TID}with_a_fixture": "passed",
        f"{TID}never_retried": "passed",
        f"{TID}exhausted": "failed",
    }
    price = result.test(f"{TID}price")
    assert price["retried_inside"] == "2 x TimeoutError in fetch_price"
    assert price["attempts"][0]["retries"] == [
        {
            "function": "fetch_price",
            "exception": "builtins.TimeoutError",
            "message": f"price failed call {n}",
            "attempt": n,
            "attempts": 4,
            "delay": delay,
        }
        for n, delay in ((1, 0.01), (2, 0.02))
    ]
    thread = result.test(f"{TID}in_a_thread")["attempts"][0]["retries"]
    assert [(r["function"], r["exception"]) for r in thread] == [
        ("failing_first.<locals>.call", "builtins.ConnectionResetError")
    ]
    # A retry in a fixture's setup belongs to the test it set up.
    fixture = result.test(f"{TID}with_a_fixture")
    assert fixture["retried_inside"] == (
        "1 x ConnectionRefusedError in failing_first.<locals>.call"
    )
    assert "retries" not in result.test(f"{TID}never_retried")["attempts"][0]
    # Exhausted: each attempt (a fresh process) holds its own retry, then fails.
    exhausted = result.test(f"{TID}exhausted")
    assert [len(a["retries"]) for a in exhausted["attempts"]] == [1, 1]
    assert [a["raised"][0]["message"] for a in exhausted["attempts"]] == [
        "exhausted failed call 2",
        "exhausted failed call 4",
    ]

    summary = (result.report_dir / "summary.md").read_text(encoding="utf-8")
    assert "## flakewarden: failed (1 failed, 3 retried inside)" in summary
    assert (
        "| passed (retried inside: 2 x TimeoutError in fetch\\_price) "
        "| tests/test\\_retries.py:\\:test\\_price | 0 of 1 failed "
        "| TimeoutError: price failed call 1 | tests/test\\_retries.py:30 |"
    ) in summary
    assert (
        "RETRIED-INSIDE: tests/test_retries.py::test_price "
        "(passed (retried inside: 2 x TimeoutError in fetch_price))"
    ) in result.stdout.splitlines()

    report = RunReport.from_json(result.report)
    notices = [a for a in plan_annotations(report).annotations if a.kind == NOTICE]
    assert [a.title for a in notices] == [
        f"Retried inside the test: {TID}{name}"
        for name in ("price", "in_a_thread", "with_a_fixture")
    ]
    assert notices[0].message.splitlines() == [
        "passed (retried inside: 2 x TimeoutError in fetch_price)",
        "fetch_price: builtins.TimeoutError on attempt 1 of 4: price failed call 1",
        "fetch_price: builtins.TimeoutError on attempt 2 of 4: price failed call 2",
    ]


def test_retries_cross_from_xdist_workers(project: Project) -> None:
    result = _run(project, command=[*PYTEST, "-n", "2"])
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.test(f"{TID}price")["retried_inside"] == "2 x TimeoutError in fetch_price"
    assert result.test(f"{TID}in_a_thread")["outcome"] == "passed"
    assert len(result.test(f"{TID}in_a_thread")["attempts"][0]["retries"]) == 1
    assert "retried_inside" not in result.test(f"{TID}never_retried")


def _file_issues(project: Project, config: str) -> int:
    project.write(".github/flakewarden.yml", config)
    return main(["issues", "--report-dir", str(project.root / "report")])


def _flake_issues(emulator: GitHubEmulator) -> list[dict[str, Any]]:
    return sorted(emulator.issues.values(), key=lambda issue: issue["number"])


def test_retried_tests_are_filed_as_flakes_only_when_configured(
    project: Project, emulator: GitHubEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run(project)
    assert result.returncode == 1
    (project.root / ".git").mkdir()
    monkeypatch.chdir(project.root)
    emulator_env(monkeypatch, emulator)
    assert _file_issues(project, "retry:\n  count_as_flaky: false\n") == 0
    assert _flake_issues(emulator) == []
    assert _file_issues(project, "retry:\n  count_as_flaky: true\n") == 0
    issues = _flake_issues(emulator)
    assert [i["title"] for i in issues] == [
        f"flake: {TID}{name}" for name in ("price", "in_a_thread", "with_a_fixture")
    ]
    body = issues[0]["body"]
    assert read_marker(body)["hits"] == 1
    assert (
        "It passed only after retries inside the test (2 x TimeoutError in fetch\\_price)" in body
    )
    assert "| 1 | `fetch_price` | `builtins.TimeoutError` | 1 of 4 | 0.010 s |" in body
    # The same run published again counts no second hit.
    assert _file_issues(project, "retry:\n  count_as_flaky: true\n") == 0
    assert [read_marker(i["body"])["hits"] for i in _flake_issues(emulator)] == [1, 1, 1]


def test_a_config_that_is_not_a_boolean_is_refused(project: Project) -> None:
    project.write(".github/flakewarden.yml", "retry:\n  count_as_flaky: yes please\n")
    (project.root / ".git").mkdir()
    result = _run(project)
    assert result.returncode == 4
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .endswith("retry.count_as_flaky: expected true or false, got 'yes please'")
    )
    assert not Path(project.root / "report" / "report.json").exists()
