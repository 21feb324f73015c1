"""Fail-open within a deadline: an outage costs `flakewarden issues` a bounded time.

Each test drives the real command and the real client against the loopback
emulator with a fault. Waits are recorded instead of slept by a clock that
real time moves too, so the deadline is checked by what the client did
(requests sent, waits planned), never by timing the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.github_emulator import (
    UNRESOLVABLE_URL,
    Fault,
    GitHubEmulator,
    closed_port_url,
    secondary_rate_limit,
)
from helpers.github_fixtures import FakeClock, emulator_env, flaky, write_report

from flakewarden.cli import main
from flakewarden.errors import GitHubError
from flakewarden.quarantine.quarantined import fetch_quarantined_set

REPO = "octo-org/octo-repo"


@pytest.fixture
def clock(emulator: GitHubEmulator, monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """A job pointed at the emulator whose client's waits are recorded on this clock."""
    clock = FakeClock()
    emulator_env(monkeypatch, emulator, clock=clock)
    return clock


def _report(tmp_path: Path, count: int) -> str:
    tests = [flaky(f"tests/test_a.py::test_{n}") for n in range(count)]
    return str(write_report(tmp_path / "rep", tests))


def _issues(report: str, *extra: str) -> int:
    return main(["issues", "--report-dir", report, *extra])


def _one_warning(err: str) -> str:
    lines = [line for line in err.splitlines() if "warning" in line]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("flakes", [1, 6])
def test_5xx_outage_stays_within_the_deadline_and_checks_the_label_once(
    emulator: GitHubEmulator,
    clock: FakeClock,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flakes: int,
) -> None:
    emulator.faults.append(Fault(503, times=10_000))
    assert _issues(_report(tmp_path, flakes)) == 0
    out, err = capsys.readouterr()
    assert out.count("FLAKY-TEST-DETECTED") == flakes
    assert f"not updated for {flakes} of {flakes} flaky tests" in _one_warning(err)
    assert sum(clock.calls) < 60  # every wait planned fits the default deadline
    # The label is checked once, not once per flaky test, and with one try: the search
    # before it used up the retries, and a confirmed outage is not probed again.
    assert len(emulator.requests_for("GET", "/labels/")) == 1


def test_label_check_that_fails_is_not_repeated_per_test(
    emulator: GitHubEmulator,
    clock: FakeClock,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator.faults.append(Fault(500, path="/labels", times=10_000))
    assert _issues(_report(tmp_path, 3)) == 0
    _, err = capsys.readouterr()
    assert len(emulator.requests_for("GET", "/labels/")) == 5  # one check: 1 try + 4 retries
    assert len(emulator.open_issues("flaky-test")) == 3  # GitHub creates a label an issue names
    assert "label" in _one_warning(err)


@pytest.mark.parametrize("flakes", [1, 6])
def test_retry_after_longer_than_the_deadline_is_not_waited_for(
    emulator: GitHubEmulator,
    clock: FakeClock,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flakes: int,
) -> None:
    emulator.faults.append(secondary_rate_limit(retry_after=900, times=10_000))
    assert _issues(_report(tmp_path, flakes)) == 0
    _, err = capsys.readouterr()
    assert clock.calls == []  # no 900 s wait is started
    assert len(emulator.log) == 1  # and nothing more is asked once the deadline cannot be met
    assert "deadline" in _one_warning(err)


def test_hung_api_costs_one_request_within_the_deadline(
    emulator: GitHubEmulator,
    clock: FakeClock,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator.faults.append(Fault(hang=True, times=10_000))
    assert _issues(_report(tmp_path, 6), "--deadline", "1.5") == 0
    _, err = capsys.readouterr()
    assert len(emulator.log) == 1  # its timeout was cut to the deadline: no second try
    assert clock.calls == []
    assert "deadline" in _one_warning(err)


def test_deadline_comes_from_the_config_file(
    emulator: GitHubEmulator,
    clock: FakeClock,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "flakewarden.yml"
    config.write_text("issues_deadline: 5\n", encoding="utf-8")
    emulator.faults.append(Fault(502, times=10_000))
    assert _issues(_report(tmp_path, 6), "--config", str(config)) == 0
    _, err = capsys.readouterr()
    assert sum(clock.calls) < 5
    assert "5 s deadline" in _one_warning(err)


@pytest.mark.parametrize("where", ["refused", "dns"])
def test_unreachable_api_is_not_retried(
    emulator: GitHubEmulator,
    clock: FakeClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
) -> None:
    url = closed_port_url() if where == "refused" else UNRESOLVABLE_URL
    monkeypatch.setenv("GITHUB_API_URL", url)
    assert _issues(_report(tmp_path, 6)) == 0
    out, err = capsys.readouterr()
    assert out.count("FLAKY-TEST-DETECTED") == 6
    assert clock.calls == []  # no backoff: asking again would not change the answer
    warning = _one_warning(err)
    assert ("refused" if where == "refused" else "does not resolve") in warning
    assert "6 of 6 flaky tests" in warning


@pytest.mark.parametrize("fault", ["hang", "5xx", "retry-after", "refused"])
def test_reading_the_quarantined_set_gives_up_at_its_deadline(
    emulator: GitHubEmulator, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    if fault == "hang":
        emulator.faults.append(Fault(hang=True, times=100))
    elif fault == "5xx":
        emulator.faults.append(Fault(500, times=100))
    elif fault == "retry-after":
        emulator.faults.append(secondary_rate_limit(retry_after=900, times=100))
    else:
        monkeypatch.setenv("GITHUB_API_URL", closed_port_url())
    with pytest.raises(GitHubError) as caught:
        if fault == "hang":  # its timeout is cut to the deadline (15 s unless told)
            fetch_quarantined_set(REPO, deadline=1.0)
        else:
            fetch_quarantined_set(REPO)
    # One try and one retry, after one backoff (1 s plus up to a quarter of jitter), for a 5xx
    # only: the hang used the whole deadline, 900 s is past the 30 s it waits at most, and
    # nothing listens at a closed port (no request reaches the emulator).
    assert len(emulator.log) == {"hang": 1, "5xx": 2, "retry-after": 1, "refused": 0}[fault]
    if fault == "5xx":
        assert len(clock.calls) == 1 and 1.0 <= clock.calls[0] <= 1.25
    else:
        assert clock.calls == []
    words = {
        "hang": "deadline",
        "5xx": "answered 500 2 times",
        "retry-after": "more than the 30 s",
        "refused": "refused",
    }
    assert words[fault] in str(caught.value)


def test_a_deadline_that_is_not_a_positive_number_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator_env(monkeypatch, None)
    report = _report(tmp_path, 1)
    assert _issues(report, "--deadline", "0") == 4
    assert "--deadline" in capsys.readouterr().err
    config = tmp_path / "flakewarden.yml"
    config.write_text("issues_deadline: -1\n", encoding="utf-8")
    assert _issues(report, "--config", str(config)) == 4
    assert "issues_deadline" in capsys.readouterr().err
