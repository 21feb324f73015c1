"""Shared pieces for the GitHub tests: a checked emulator, clients that never really sleep."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

from flakewarden.github.api import GitHubClient
from flakewarden.issues.marker import format_marker, read_marker
from flakewarden.issues.records import LABEL, title_for
from flakewarden.model import Attempt, AttemptOutcome, AttemptResult, Outcome, RunReport, TestResult

from .github_emulator import GitHubEmulator


class FakeSleep:
    """Records every wait instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


class FakeClock(FakeSleep):
    """A clock that real time moves, and so does every wait it records instead of waiting.

    With it a client's deadline sees exactly the time the job would have spent:
    the real time of the requests plus the waits it planned.
    """

    def __init__(self) -> None:
        super().__init__()
        self._skipped = 0.0

    def __call__(self, seconds: float) -> None:
        super().__call__(seconds)
        self._skipped += seconds

    def now(self) -> float:
        return time.time() + self._skipped


def checked_emulator() -> Iterator[GitHubEmulator]:
    """An emulator whose every exchange must match GitHub's schemas (a fixture body)."""
    with GitHubEmulator() as emu:
        yield emu
    assert emu.schema_errors == []


def make_client(
    emu: GitHubEmulator, sleep: Optional[FakeSleep] = None, **kwargs: Any
) -> GitHubClient:
    kwargs.setdefault("timeout", (2.0, 5.0))
    return GitHubClient(emu.token, api_url=emu.url, sleep=sleep or FakeSleep(), **kwargs)


def _own_failure(test_id: str, message: str) -> str:
    """pytest's traceback of a failure in the test's own body: each test its own cause."""
    name = test_id.rpartition("::")[2] or "test"
    return (
        f"    def {name}():\n>       assert 1 == 2\nE       {message}\n\n"
        "tests/test_x.py:3: AssertionError"
    )


def flaky(
    test_id: str,
    failures: int = 1,
    message: str = "AssertionError: assert 1 == 2",
    longrepr: Optional[str] = None,
) -> TestResult:
    """A test that failed ``failures`` times, then passed."""
    attempts = [
        AttemptResult(
            attempt=n + 1,
            outcome=AttemptOutcome.FAILED,
            duration=0.25,
            phase="call",
            message=message,
            longrepr=longrepr if longrepr is not None else _own_failure(test_id, message),
        )
        for n in range(failures)
    ]
    attempts.append(
        AttemptResult(attempt=failures + 1, outcome=AttemptOutcome.PASSED, duration=0.2)
    )
    return TestResult(
        id=test_id, file="tests/test_x.py", line=3, outcome=Outcome.FLAKY, attempts=attempts
    )


def passed(test_id: str) -> TestResult:
    return TestResult(
        id=test_id,
        file="tests/test_x.py",
        line=10,
        outcome=Outcome.PASSED,
        attempts=[AttemptResult(attempt=1, outcome=AttemptOutcome.PASSED, duration=0.1)],
    )


def write_report(directory: Path, tests: list[TestResult], uid: Optional[str] = None) -> Path:
    """A ``report.json`` of ``tests``, a run of its own as ``flakewarden run`` writes one;
    ``uid`` names the run (``""``: a report older than run ids)."""
    report = RunReport(
        command=["python", "-m", "pytest"],
        rootdir=str(directory),
        tests=tests,
        attempts=[Attempt(number=1, command=["python", "-m", "pytest"], reason="first run")],
        order=[t.id for t in tests],
        exit_code=0,
        started_at="2024-05-01T12:00:00Z",
        finished_at="2024-05-01T12:01:00Z",
        duration=60.0,
        version="0.1.0",
        uid=os.urandom(16).hex() if uid is None else uid,
    )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "report.json").write_text(json.dumps(report.to_json()), encoding="utf-8")
    return directory


ACTIONS_ENV = {
    "GITHUB_REPOSITORY": "octo-org/octo-repo",
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_RUN_ID": "4242",
    "GITHUB_RUN_ATTEMPT": "1",
    "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
    "GITHUB_REF_NAME": "main",
}


def emulator_env(
    monkeypatch: pytest.MonkeyPatch,
    emu: Optional[GitHubEmulator],
    token: Optional[str] = None,
    clock: Optional[FakeClock] = None,
) -> None:
    """A GitHub Actions job's environment pointed at ``emu`` (or at nothing, with ``None``).

    The real client is used, but its pauses are recorded instead of slept (in
    ``clock``, which then also drives the client's deadline, when given).
    """
    for key, value in ACTIONS_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    real = GitHubClient.from_env

    def from_env(token: Optional[str] = None, env: Any = None, **kw: Any) -> GitHubClient:
        timing: dict[str, Any] = {"sleep": FakeSleep()}
        if clock is not None:
            timing = {"sleep": clock, "clock": clock.now}
        return real(token, env, **{**kw, **timing})

    monkeypatch.setattr(GitHubClient, "from_env", from_env)
    if emu is not None:
        monkeypatch.setenv("GITHUB_API_URL", emu.url)
        monkeypatch.setenv("GITHUB_TOKEN", token or emu.token)
    else:
        monkeypatch.delenv("GITHUB_TOKEN", raising=False)
        monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9")


def seed_issue(
    emu: GitHubEmulator,
    marker: dict[str, Any],
    *,
    labels: tuple[str, ...] = (LABEL,),
    assignees: tuple[str, ...] = (),
    notes: str = "",
) -> int:
    """An open flake issue for ``marker["id"]`` with that marker, as flakewarden files it."""
    issue = emu.add_issue(title_for(marker["id"]), format_marker(marker) + "\n" + notes, labels)
    for login in assignees:
        issue["assignees"].append({**issue["user"], "login": login})
    return int(issue["number"])


def issue_marker(emu: GitHubEmulator, number: int) -> dict[str, Any]:
    marker = read_marker(emu.issues[number]["body"])
    assert marker is not None
    return marker


def issue_labels(emu: GitHubEmulator, number: int) -> list[str]:
    return [lb["name"] for lb in emu.issues[number]["labels"]]


def issue_comments(emu: GitHubEmulator, number: int) -> list[str]:
    return [c["body"] for c in emu.comments[number]]
