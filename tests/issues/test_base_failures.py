"""``flakewarden link-base-failures``: a pull request's failure that fails on the base too is
told on the test's open flake issue, once per run, through the loopback emulator."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

import pytest
from helpers.github_emulator import Fault, GitHubEmulator, LoggedRequest
from helpers.github_fixtures import (
    FakeClock,
    emulator_env,
    issue_comments,
    issue_marker,
    seed_issue,
)

from flakewarden.cli import main
from flakewarden.issues.base_failures import marker_line, run_of
from flakewarden.model import (
    Attempt,
    AttemptOutcome,
    AttemptResult,
    Outcome,
    RunContext,
    RunReport,
    TestResult,
)
from flakewarden.model.blame import BaseCheck, TestChange

BROKEN = "tests/test_cart.py::test_broken"
MERGE_BASE = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
SENTENCE = (
    "Failed on every attempt in [run 4242](https://github.com/octo-org/octo-repo/actions/runs/"
    "4242) for pull request #7, and fails on its merge base `1a2b3c4d5e6f` too: main is broken "
    "here, not the pull request."
)


def failed(
    test_id: str = BROKEN,
    base: Optional[BaseCheck] = None,
    message: str = "AssertionError: assert 3 == 4",
) -> TestResult:
    """A test that failed all three attempts; by default it fails on the base too."""
    attempts = [
        AttemptResult(attempt=n, outcome=AttemptOutcome.FAILED, duration=0.1, message=message)
        for n in (1, 2, 3)
    ]
    test = TestResult(
        id=test_id, file="tests/test_cart.py", line=5, outcome=Outcome.FAILED, attempts=attempts
    )
    test.change = TestChange("untouched")
    test.base = base or BaseCheck("fails", MERGE_BASE, "failed on the base")
    return test


def write(
    directory: Path,
    tests: list[TestResult],
    run_id: Optional[int] = 4242,
    attempt: int = 1,
    pr: Optional[int] = 7,
) -> str:
    """A pull request's report.json, as `flakewarden run --check-base` writes it in a job."""
    context = RunContext(
        repository="octo-org/octo-repo",
        run_id=run_id,
        run_attempt=attempt,
        job="test",
        event="pull_request",
        branch="feature/x",
        base_branch="main",
        pr_number=pr,
        commit="0123456789abcdef0123456789abcdef01234567",
    )
    report = RunReport(
        command=["python", "-m", "pytest"],
        rootdir=str(directory),
        tests=tests,
        attempts=[Attempt(number=1, command=["python", "-m", "pytest"], reason="first run")],
        order=[t.id for t in tests],
        exit_code=1,
        started_at="2024-05-01T12:00:00Z",
        finished_at="2024-05-01T12:01:00Z",
        duration=60.0,
        version="0.1.0",
        context=context,
        uid=os.urandom(16).hex(),
    )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "report.json").write_text(json.dumps(report.to_json()), encoding="utf-8")
    return str(directory)


def link(report_dir: str, *extra: str) -> int:
    return main(["link-base-failures", "--report-dir", report_dir, *extra])


@pytest.fixture
def github(emulator: GitHubEmulator, monkeypatch: pytest.MonkeyPatch) -> GitHubEmulator:
    emulator_env(monkeypatch, emulator)
    monkeypatch.setenv("GITHUB_REF", "refs/pull/7/merge")
    monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
    return emulator


def _ours(emu: GitHubEmulator, number: int) -> list[str]:
    return [body for body in issue_comments(emu, number) if run_of(body) is not None]


def test_the_open_flake_issue_gets_one_comment_however_often_the_run_reports(
    github: GitHubEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    number = seed_issue(github, {"id": BROKEN, "hits": 3})
    before = issue_marker(github, number)
    report = write(tmp_path / "job", [failed()])
    assert link(report) == 0
    assert f"{BROKEN} fails on the base too: commented on #{number}" in capsys.readouterr().out
    (body,) = _ours(github, number)
    assert SENTENCE in body
    assert "First line: `AssertionError: assert 3 == 4`" in body
    assert "On the base: failed on the base." in body
    # The step again (a retried step), and another job of the same workflow run: its matrix
    # entry or a re-run attempt. One comment still, naming the latest attempt.
    assert link(report) == 0
    assert "the comment is up to date on" in capsys.readouterr().out
    assert link(write(tmp_path / "attempt2", [failed()], attempt=2)) == 0
    assert "updated the comment on" in capsys.readouterr().out
    (body,) = _ours(github, number)
    assert "/actions/runs/4242/attempts/2)" in body
    assert len(github.requests_for("POST", "/comments$")) == 1
    # Not a hit, and no issue opened: the marker is as it was, the only issue is the seeded one.
    assert issue_marker(github, number) == before
    assert list(github.issues) == [number]
    assert github.requests_for("POST", "/issues$") == []
    # The next push is a new run: it gets a comment of its own.
    assert link(write(tmp_path / "push2", [failed()], run_id=4300)) == 0
    assert len(_ours(github, number)) == 2
    assert github.schema_errors == []


def test_two_jobs_of_one_run_commenting_at_once_leave_one_comment(
    github: GitHubEmulator, tmp_path: Path
) -> None:
    number = seed_issue(github, {"id": BROKEN, "hits": 1})

    def rival(request: LoggedRequest) -> None:  # another matrix job posts just before ours
        if request.method == "POST" and not _ours(github, number):
            github.add_comment(number, marker_line("run-4242") + "\nthe other job's text")

    github.before = rival
    assert link(write(tmp_path / "job", [failed()])) == 0
    github.before = None
    (kept,) = _ours(github, number)
    assert SENTENCE in kept  # the older comment stays, holding this run's text
    assert len(github.requests_for("DELETE")) == 1


def test_a_test_without_an_open_issue_gets_none_opened(
    github: GitHubEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    closed = seed_issue(github, {"id": "tests/test_cart.py::test_fixed", "hits": 2})
    github.issues[closed]["state"] = "closed"
    passes = failed("tests/test_cart.py::test_mine", BaseCheck("passes", MERGE_BASE))
    tests = [failed("tests/test_cart.py::test_new"), failed("tests/test_cart.py::test_fixed")]
    assert link(write(tmp_path / "job", [*tests, passes])) == 0
    out = capsys.readouterr().out
    assert out.count("it has no open flake issue, and none is opened") == 2
    assert "test_mine" not in out  # it passes on the base: the pull request broke it
    assert list(github.issues) == [closed] and github.comments[closed] == []
    assert github.requests_for("POST") == []


def test_only_the_base_failures_of_a_pull_request_ask_github_anything(
    github: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seed_issue(github, {"id": BROKEN, "hits": 1})
    broken_by_pr = failed(base=BaseCheck("passes", MERGE_BASE))
    assert link(write(tmp_path / "a", [broken_by_pr])) == 0
    assert "no failed test fails on the base too" in capsys.readouterr().out
    monkeypatch.setenv("GITHUB_REF", "refs/heads/main")
    assert link(write(tmp_path / "b", [failed()], pr=None)) == 0
    assert "not a pull request run" in capsys.readouterr().out
    assert github.log == []
    # The event payload names the pull request when the ref does not.
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 9}}), encoding="utf-8")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    assert link(write(tmp_path / "c", [failed()], pr=None)) == 0
    (body,) = _ours(github, 1)
    assert "for pull request #9," in body


def test_a_comment_someone_copied_the_marker_into_is_never_edited(
    github: GitHubEmulator, tmp_path: Path
) -> None:
    number = seed_issue(github, {"id": BROKEN, "hits": 1})
    copied = github.add_comment(number, marker_line("run-4242") + "\nmy own notes")
    copied["user"] = {**copied["user"], "login": "mallory", "id": 666, "type": "User"}
    assert link(write(tmp_path / "job", [failed()])) == 0
    assert copied["body"] == marker_line("run-4242") + "\nmy own notes"
    bots = [c for c in github.comments[number] if c["user"]["type"] == "Bot"]
    assert len(bots) == 1 and SENTENCE in bots[0]["body"]


def test_test_ids_and_reasons_are_inert(github: GitHubEmulator, tmp_path: Path) -> None:
    hostile = "tests/test_x.py::test_a[@org/team <img src=x onerror=alert(1)>]"
    number = seed_issue(github, {"id": hostile, "hits": 1})
    why = "failed on the base <script>alert(1)</script> @admin ](javascript:x) -->"
    test = failed(hostile, BaseCheck("fails", "not-a-sha <b>", why), "E @admin <!-- x -->")
    assert link(write(tmp_path / "job", [test])) == 0
    (body,) = _ours(github, number)
    assert "<script>" not in body and "<img" not in body and "<b>" not in body
    assert "@admin" not in body and "@org" not in body
    assert "](javascript:" not in body
    assert body.splitlines()[0] == marker_line("run-4242")
    assert "First line: `E @\u200badmin <!-- x -->`" in body  # a code span shows it as text
    assert "merge base too" in body  # a commit that is no commit is left out


def test_github_down_is_one_warning_and_exit_zero(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = FakeClock()
    emulator_env(monkeypatch, emulator, clock=clock)
    monkeypatch.setenv("GITHUB_REF", "refs/pull/7/merge")
    monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
    number = seed_issue(emulator, {"id": BROKEN, "hits": 1})
    emulator.faults.append(Fault(503, times=10_000))
    tests = [failed(), failed("tests/test_cart.py::test_other")]
    assert link(write(tmp_path / "job", tests)) == 0
    out, err = capsys.readouterr()
    warnings = [line for line in (out + err).splitlines() if "warning" in line]
    assert len(warnings) == 1, out + err
    assert "flake issues not told for 2 of 2 tests failing on the base too" in warnings[0]
    assert sum(clock.calls) < 60  # within the default deadline
    assert emulator.comments[number] == []
    # Down for good (no repository, no token): one warning too, still exit 0.
    emulator_env(monkeypatch, None)
    assert link(write(tmp_path / "job2", tests)) == 0
    out, err = capsys.readouterr()
    assert len([line for line in (out + err).splitlines() if "warning" in line]) == 1
