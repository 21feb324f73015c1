"""Quarantine, release proposals and the digest decided from the history, over real HTTP
against the loopback GitHub emulator, with the history in real SQLite files."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import emulator_env, seed_issue
from helpers.github_fixtures import issue_comments as _comments
from helpers.github_fixtures import issue_labels as _labels
from helpers.github_fixtures import issue_marker as _marker
from history_builders import ingest, report

from flakewarden.cli import main
from flakewarden.issues.marker import format_marker, id_fields
from flakewarden.issues.records import LABEL, iso, title_for
from flakewarden.quarantine.quarantined import QUARANTINED

TEST = "tests/test_cache.py::test_fill"
FILLER = {f"tests/test_b.py::test_{n}": "p" for n in range(10)}
NOW = dt.datetime.now(dt.timezone.utc)


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()  # stops the search for a default config here
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flakewarden.yml").write_text("", encoding="utf-8")  # the defaults
    return tmp_path


def _seed(emu: GitHubEmulator, test_id: str = TEST, **marker: Any) -> int:
    data = {
        "id": test_id,
        "hits": 4,
        "first": "2026-10-01T12:00:00Z",
        "verdict": "flaky",
        "verdict_at": iso(NOW - dt.timedelta(days=2)),
        "verdict_bound": {"met": True, "max_increase": 0.001, "baseline_rate": 0.0},
        **marker,
    }
    return seed_issue(emu, data, assignees=("alice",))


def _runs(first: int, last: int, failing: set[int]) -> list[Any]:
    """Runs ``first..last`` on main; ``TEST`` fails a first attempt, then passes, in ``failing``."""
    return [
        report(n, {**FILLER, TEST: "fp" if n in failing else "p"}) for n in range(first, last + 1)
    ]


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main([*args, "--config", "flakewarden.yml"])
    return code, capsys.readouterr().out


def test_quarantine_refuses_below_the_sample_and_the_entry_rate(
    emulator: GitHubEmulator,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    number = _seed(emulator)  # 4 hits and a fresh verdict: the counters alone would admit it
    few = ingest(cwd / "few.db", _runs(1, 10, {2, 4, 6}), cwd / "few")
    code, out = _cli(capsys, "quarantine", TEST, "--history", str(few))
    assert code == 1
    assert f"evidence: the flake history {few}: last 50 runs on main" in out
    unmet = [line for line in out.splitlines() if line.startswith("  - ")]
    assert unmet == [
        "  - it has 10 runs in the history window; the policy needs at least 20 "
        "(quarantine_policy.min_runs)"
    ]
    low = ingest(cwd / "low.db", _runs(1, 25, {5, 15}), cwd / "low")
    code, out = _cli(capsys, "quarantine", TEST, "--history", str(low))
    assert code == 1
    unmet = [line for line in out.splitlines() if line.startswith("  - ")]
    assert len(unmet) == 1
    assert "its failure rate is 8.0% (2 first-attempt failures in 25 runs" in unmet[0]
    assert "below the entry rate of 15% (quarantine_policy.enter_failure_rate)" in unmet[0]
    assert QUARANTINED not in _labels(emulator, number)
    assert all(
        c.startswith("**Quarantine refused.** Unmet conditions (evidence from the flake history)")
        for c in _comments(emulator, number)
    )
    # Failing every attempt lately is a break, whatever the rate.
    broken = ingest(
        cwd / "broken.db",
        _runs(1, 25, set()) + [report(n, {**FILLER, TEST: "fff"}) for n in (26, 27, 28)],
        cwd / "broken",
    )
    code, out = _cli(capsys, "quarantine", TEST, "--history", str(broken))
    assert code == 1
    unmet = [line for line in out.splitlines() if line.startswith("  - ")]
    assert unmet == [
        "  - it failed every attempt in its most recent runs of the history window (state "
        "broken): a real break is fixed, never quarantined",
        "  - its failure rate is 10.7% (3 first-attempt failures in 28 runs; 95% interval "
        "2.3% to 28.2%), below the entry rate of 15% (quarantine_policy.enter_failure_rate)",
    ]
    # Without --history the marker's counters decide, and the output says so.
    code, out = _cli(capsys, "quarantine", TEST)
    assert code == 0
    assert "evidence: the counters in the issue's marker (no --history given)" in out


def test_a_stress_verdict_is_still_required_with_history(
    emulator: GitHubEmulator,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    number = _seed(emulator, verdict="race")
    db = ingest(cwd / "h.db", _runs(1, 25, {5, 10, 15, 20, 25}), cwd / "h")
    code, out = _cli(capsys, "quarantine", TEST, "--history", str(db))
    assert code == 1
    assert "its stress verdict is 'race'" in out
    assert QUARANTINED not in _labels(emulator, number)


def test_quarantine_entered_and_released_by_rate_with_hysteresis(
    emulator: GitHubEmulator,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    number = _seed(emulator, hits=1)  # one hit: the counters alone would refuse
    db = cwd / "history.db"
    every_fifth = {n for n in range(1, 126) if n % 5 == 0}

    def step(first: int, last: int, failing: set[int]) -> str:
        ingest(db, _runs(first, last, failing), cwd / f"runs-{first}")
        code, out = _cli(capsys, "reevaluate", "--history", str(db))
        assert code == 0
        assert "evidence: the flake history" in out
        return out

    # Runs 1-25: 5 first-attempt failures, 20% >= the 15% entry rate, over 25 >= 20 runs.
    ingest(db, _runs(1, 25, every_fifth), cwd / "runs-1")
    code, out = _cli(capsys, "quarantine", TEST, "--history", str(db))
    assert code == 0, out
    assert QUARANTINED in _labels(emulator, number)
    marker = _marker(emulator, number)
    assert marker["quarantine_rate"] == 0.2
    [entered] = _comments(emulator, number)
    assert "a failure rate of 20.0% (5 first-attempt failures in 25 runs" in entered

    # Runs 1-50 hold 7 failures: 14%, between the exit (5%) and entry (15%) rates: nothing.
    out = step(26, 50, {30, 40})
    assert f"{TEST} (#{number}): 7 failures in 50 runs in the history window: no change" in out
    assert len(_comments(emulator, number)) == 1

    # Runs 26-75 hold 2: 4%, below the exit rate over 50 runs: release proposed, once.
    out = step(51, 75, set())
    assert "2 failures in 50 runs in the history window: release proposed" in out
    proposal = _comments(emulator, number)[-1]
    assert proposal.startswith("**Release proposed:** 2 first-attempt failures in 50 runs")
    assert "@alice: please decide." in proposal
    assert "release_proposed_at" in _marker(emulator, number)
    assert QUARANTINED in _labels(emulator, number)  # proposed, never released silently

    # Runs 51-100 hold 5: 10%, inside the band: the proposal stands.
    out = step(76, 100, every_fifth)
    assert "5 failures in 50 runs in the history window: no change" in out
    assert "release_proposed_at" in _marker(emulator, number)

    # Runs 76-125 hold 17: 34% >= entry: withdrawn, and the rise (from 4% the window before)
    # is flagged once.
    out = step(101, 125, every_fifth | set(range(101, 126, 3)))
    assert "rose to 34.0% over the last 50 runs, from 4.0% over the 50 runs before" in out
    assert "proposal withdrawn, rate rose" in out
    withdrawn = _comments(emulator, number)[-1]
    assert "**Release proposal withdrawn:**" in withdrawn
    assert "**Failure rate rising:**" in withdrawn
    assert "rate_rose_at" in _marker(emulator, number)
    comments = len(_comments(emulator, number))
    code, out = _cli(capsys, "reevaluate", "--history", str(db))
    assert code == 0 and out.splitlines()[-2].endswith("runs before): no change")
    assert len(_comments(emulator, number)) == comments  # flagged once, not every time

    # A person releases it: the label goes.
    assert main(["release", TEST, "--reason", "fixed the cache"]) == 0
    assert QUARANTINED not in _labels(emulator, number)


def test_a_long_id_is_found_in_the_history_by_its_digest(
    emulator: GitHubEmulator,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    long_id = f"tests/test_q.py::test_long[{'x' * 1_200}]"
    fields = id_fields(long_id)
    assert fields["id"] != long_id  # the marker holds a clipped id and the digest
    marker = {"hits": 4, "quarantined_at": iso(NOW), **fields}
    issue = emulator.add_issue(
        title_for(long_id), format_marker(marker) + "\n", (LABEL, QUARANTINED)
    )
    runs = [report(n, {**FILLER, long_id: "fp" if n == 7 else "p"}) for n in range(1, 51)]
    db = ingest(cwd / "h.db", runs, cwd / "runs")
    code, out = _cli(capsys, "reevaluate", "--history", str(db))
    assert code == 0
    assert "1 failures in 50 runs in the history window: release proposed" in out
    assert _comments(emulator, int(issue["number"]))[0].startswith("**Release proposed:**")


def test_a_missing_history_fails_before_any_request(
    emulator: GitHubEmulator,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    _seed(emulator)
    before = len(emulator.log)
    for command in (["quarantine", TEST], ["reevaluate"], ["digest"]):
        assert main([*command, "--history", "nowhere.db", "--config", "flakewarden.yml"]) == 4
        assert "no history at nowhere.db" in capsys.readouterr().err
    assert len(emulator.log) == before and not (cwd / "nowhere.db").exists()
