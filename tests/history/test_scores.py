"""Scores over a window, read back from real SQLite files through ``flakewarden history show``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from helpers.project import Project, flaky_module
from helpers.workflow_commands import command_stream
from history_builders import ingest, report

from flakewarden.cli import main
from flakewarden.history.store import HistoryStore
from flakewarden.history.tallies import Tally, tally
from flakewarden.history.tally_query import tally_store
from flakewarden.model.binomial import clopper_pearson

STABLE = "tests/test_a.py::test_stable"
FLAKY = "tests/test_a.py::test_flaky"
BROKEN = "tests/test_a.py::test_broken"
NEWBIE = "tests/test_a.py::test_newbie"
SKIPPER = "tests/test_a.py::test_skipped"
#: Ten more healthy tests, so that two failures in a run are not a suite that fell over.
FILLER = {f"tests/test_b.py::test_{n}": "p" for n in range(10)}


def team_runs() -> list[Any]:
    """30 runs on main, one where the suite fell over, four runs of a pull request into main
    and one of a pull request into another branch."""
    runs = []
    for n in range(1, 31):
        tests = {
            **FILLER,
            STABLE: "p",
            FLAKY: "fp" if n % 5 == 0 else "p",
            BROKEN: "fff" if n >= 28 else "p",
            SKIPPER: "s",
        }
        if n >= 26:
            tests[NEWBIE] = "p"
        runs.append(report(n, tests))
    runs.append(report(31, {STABLE: "fff", FLAKY: "fff", BROKEN: "fff", NEWBIE: "fff"}))
    for n in range(32, 36):
        tests = {**FILLER, STABLE: "fp", FLAKY: "p", BROKEN: "fff"}
        runs.append(
            report(
                n, tests, branch="feature", event="pull_request", pr_number=7, base_branch="main"
            )
        )
    # A pull request into another branch is not one of main's.
    runs.append(
        report(36, {**FILLER, STABLE: "fp"}, event="pull_request", pr_number=8, base_branch="v1.x")
    )
    return runs


@pytest.fixture(scope="module")
def team_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("team")
    return ingest(where / "history.db", team_runs(), where)


def show(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["history", "show", *args])
    return code, capsys.readouterr().out


def show_json(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> dict[str, Any]:
    code, out = show(capsys, "--db", str(db), "--json", *args)
    assert code == 0
    data: dict[str, Any] = json.loads(out)
    return data


def by_id(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in data["tests"]}


def test_window_figures_states_exclusion_and_pull_requests_apart(
    team_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = show_json(capsys, team_db, "--branch", "main")
    window = data["window"]
    assert (window["runs"], window["excluded_runs"], window["pull_request_runs"]) == (30, 1, 4)
    assert window["branch"] == "main" and window["branch_source"] == "option"
    tests = by_id(data)
    assert SKIPPER not in tests  # it never ran: no runs to score
    flaky = tests[FLAKY]
    assert (flaky["runs"], flaky["first_attempt_failures"], flaky["flaky_runs"]) == (30, 6, 6)
    assert flaky["hard_failures"] == 0 and flaky["state"] == "flaky"
    assert flaky["rate"] == pytest.approx(0.2)
    assert flaky["interval"] == pytest.approx(list(clopper_pearson(6, 30)), abs=1e-6)
    assert flaky["first_failure"] == "2026-11-01T11:00:00Z"  # run 5
    broken = tests[BROKEN]
    assert (broken["state"], broken["hard_failures"], broken["flaky_runs"]) == ("broken", 3, 0)
    newbie = tests[NEWBIE]
    assert (newbie["state"], newbie["runs"]) == ("new", 5)
    assert newbie["first_seen"] == "2026-11-02T08:00:00Z"  # run 26
    stable = tests[STABLE]
    # The fell-over run is not counted, and the pull requests' failures stay apart.
    assert (stable["state"], stable["runs"], stable["first_attempt_failures"]) == ("healthy", 30, 0)
    assert stable["pull_requests"]["runs"] == 4
    assert stable["pull_requests"]["first_attempt_failures"] == 4
    assert stable["pull_requests"]["flaky_runs"] == 4
    assert stable["last_seen"] == "2026-11-02T12:00:00Z"  # run 30, not the fallen run 31
    assert [t["id"] for t in data["tests"]][:4] == [BROKEN, FLAKY, NEWBIE, STABLE]


def test_window_options_narrow_the_runs(team_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = show_json(capsys, team_db, "--window-runs", "10", "--test", FLAKY)
    assert data["window"]["runs"] == 9 and data["window"]["excluded_runs"] == 1
    assert data["window"]["branch_source"] == "fallback"
    [flaky] = data["tests"]
    assert (flaky["runs"], flaky["first_attempt_failures"]) == (9, 2)  # runs 25 and 30
    # The newest pull-request run is into another branch: the two before it are main's.
    assert show_json(capsys, team_db, "--window-runs", "2")["window"]["pull_request_runs"] == 2
    # A branch with no runs of its own, only a pull request into it: every test is new.
    data = show_json(capsys, team_db, "--branch", "v1.x")
    assert (data["window"]["runs"], data["window"]["pull_request_runs"]) == (0, 1)
    assert {t["state"] for t in data["tests"]} == {"new"}
    assert by_id(data)[STABLE]["pull_requests"]["flaky_runs"] == 1


def test_share_and_sample_come_from_the_config(
    team_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "flakewarden.yml"
    config.write_text(
        "history:\n  default_branch: main\n  fell_over_share: 1\n"
        "quarantine_policy:\n  min_runs: 3\n",
        encoding="utf-8",
    )
    data = show_json(capsys, team_db, "--config", str(config))
    assert data["window"]["branch_source"] == "config"
    assert (data["window"]["runs"], data["window"]["excluded_runs"]) == (31, 0)
    tests = by_id(data)
    # The fallen run counts now: one hard failure in six runs is flaky, not yet broken.
    assert (tests[NEWBIE]["state"], tests[NEWBIE]["hard_failures"]) == ("flaky", 1)
    assert (tests[STABLE]["state"], tests[STABLE]["hard_failures"]) == ("flaky", 1)
    assert (tests[BROKEN]["state"], tests[BROKEN]["hard_failures"]) == ("broken", 4)
    assert data["min_runs"] == 3


def test_console_lists_the_unhealthy_and_escapes_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = "tests/test_a.py::test_x[\n::error::owned ##[warning]x]"
    runs = [report(n, {**FILLER, hostile: "fp" if n % 2 else "p"}) for n in range(1, 25)]
    db = ingest(tmp_path / "h.db", runs, tmp_path)
    code, out = show(capsys, "--db", str(db))
    assert code == 0
    assert command_stream(out) == []
    lines = out.splitlines()
    assert lines[0].startswith("flakewarden: history window: last 50 runs on main")
    assert "24 runs scored" in lines[0]
    assert lines[1].split()[:3] == ["STATE", "RATE", "95%"]
    assert lines[2].startswith("flaky     50.0% [ 29.1%,  70.9%]    24    12    12     0")
    assert lines[2].endswith("test_x[\\n::error::owned ##\\x5bwarning]x]")
    assert lines[-1] == (
        "flakewarden: 11 tests scored (0 broken, 1 flaky, 0 new, 10 healthy); "
        "10 healthy not listed (--all lists them)"
    )
    code, out = show(capsys, "--db", str(db), "--all")
    assert "tests/test_b.py::test_9" in out
    # --json holds the exact id, and its line forms no command either.
    code, out = show(capsys, "--db", str(db), "--json")
    assert code == 0 and len(out.splitlines()) == 1
    assert command_stream(out) == []
    assert hostile in by_id(json.loads(out))
    assert main(["history", "show", "--db", str(db), "--test", "tests/nope.py::test_gone"]) == 1
    assert "no runs of tests/nope.py::test_gone in the window" in capsys.readouterr().err


def test_a_missing_history_is_a_usage_error_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["history", "show", "--db", str(tmp_path / "none.db")])
    assert code == 4
    assert "no history at" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


def test_real_runs_on_main_and_a_pull_request(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reports of real ``flakewarden run`` subprocesses in a GitHub Actions environment."""
    project.write("test_flaky.py", flaky_module("flaky"))
    project.write(
        "test_other.py",
        """
        import pytest

        @pytest.mark.parametrize("n", range(8))
        def test_many(n):
            pass

        def test_broken():
            assert False, "broken"
        """,
    )
    actions = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": "octo-org/octo-repo",
        "GITHUB_WORKFLOW": "CI",
        "GITHUB_RUN_ATTEMPT": "1",
        "GITHUB_JOB": "test",
        "GITHUB_SHA": "0" * 40,
    }
    push = {**actions, "GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/main"}
    push["GITHUB_REF_NAME"] = "main"
    pull = {**actions, "GITHUB_EVENT_NAME": "pull_request", "GITHUB_REF": "refs/pull/9/merge"}
    pull.update(GITHUB_HEAD_REF="fix-cache", GITHUB_BASE_REF="main", GITHUB_REF_NAME="9/merge")
    db = tmp_path / "history.db"
    dirs = []
    for n, env in enumerate([pull, push], start=1):
        done = project.run("-q", env={**env, "GITHUB_RUN_ID": str(n)}, report_dir=f"r{n}")
        assert done.returncode == 1, done.stderr
        dirs.append(str(done.report_dir))
    assert main(["history", "ingest", "--db", str(db), *dirs]) == 0
    capsys.readouterr()
    config = tmp_path / "flakewarden.yml"
    config.write_text("quarantine_policy:\n  min_runs: 1\n", encoding="utf-8")
    data = show_json(capsys, db, "--config", str(config))
    window = data["window"]
    assert (window["branch"], window["branch_source"]) == ("main", "fallback")
    assert (window["runs"], window["excluded_runs"], window["pull_request_runs"]) == (1, 0, 1)
    tests = by_id(data)
    # The counter file fails it once, the first time: in the pull request's run, kept apart.
    flaky = tests["test_flaky.py::test_flaky"]
    assert (flaky["state"], flaky["runs"], flaky["first_attempt_failures"]) == ("healthy", 1, 0)
    assert (flaky["pull_requests"]["runs"], flaky["pull_requests"]["flaky_runs"]) == (1, 1)
    broken = tests["test_other.py::test_broken"]
    assert (broken["state"], broken["hard_failures"], broken["flaky_runs"]) == ("broken", 1, 0)
    assert broken["pull_requests"]["hard_failures"] == 1
    assert tests["test_other.py::test_many[3]"]["state"] == "healthy"


def test_window_days_counts_back_from_now(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = dt.datetime.now(dt.timezone.utc)
    runs = [
        report(n, {**FILLER, FLAKY: "fp" if n < 2 else "p"}, at=now - dt.timedelta(days=n))
        for n in range(10)
    ]
    db = ingest(tmp_path / "h.db", runs, tmp_path)
    data = show_json(capsys, db, "--window-days", "3.5", "--test", FLAKY)
    assert data["window"]["runs"] == 4  # today and the three days before
    assert (data["window"]["limit_runs"], data["window"]["limit_days"]) == (None, 3.5)
    [flaky] = data["tests"]
    assert (flaky["runs"], flaky["flaky_runs"]) == (4, 2)
    both = show_json(capsys, db, "--window-days", "3.5", "--window-runs", "2", "--test", FLAKY)
    assert both["window"]["runs"] == 2 and both["tests"][0]["flaky_runs"] == 2


def test_the_lean_tally_agrees_with_the_tally_of_entries(team_db: Path) -> None:
    """Every count of every test, in every window, read lean or from ``HistoryEntry``s."""
    with HistoryStore.open(team_db) as store:
        every = store.runs()
        windows = [every, every[:7], every[3:20], [r for r in every if r.context.pr_number]]
        for runs in windows:
            lean = tally_store(store, runs)
            full = tally(runs, store.entries([r.run_key for r in runs]))
            assert sorted(lean) == sorted(full) and lean
            for test_id, t in full.items():
                assert counts(lean[test_id]) == counts(t), test_id


def counts(t: Tally) -> dict[str, Any]:
    return {k: sorted(t.hard_at) if k == "hard_at" else getattr(t, k) for k in Tally.__slots__}


def test_runs_without_a_branch_are_scored_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [
        report(n, {**FILLER, FLAKY: "fp" if n == 3 else "p"}, branch="", event="")
        for n in (1, 2, 3)
    ]
    db = ingest(tmp_path / "h.db", runs, tmp_path)
    code, out = show(capsys, "--db", str(db))
    assert code == 0
    assert "0 runs scored" in out
    assert (
        "no run of main in the window; runs made outside GitHub Actions and a git branch "
        "record none: --branch '' scores them"
    ) in out
    data = show_json(capsys, db, "--branch", "", "--test", FLAKY)
    assert data["window"]["runs"] == 3
    description = data["window"]["description"]
    assert "on no branch (runs outside GitHub Actions and any git branch)" in description
    assert data["tests"][0]["flaky_runs"] == 1


def test_the_repository_default_branch_comes_from_the_event(
    team_db: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"repository": {"default_branch": "v1.x"}}), encoding="utf-8")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    window = show_json(capsys, team_db)["window"]
    assert (window["branch"], window["branch_source"]) == ("v1.x", "repository")
    assert window["pull_request_runs"] == 1  # the one pull request into v1.x
    # --branch still wins, and an unreadable payload falls back to main.
    assert show_json(capsys, team_db, "--branch", "main")["window"]["branch_source"] == "option"
    event.write_text("{not json", encoding="utf-8")
    assert show_json(capsys, team_db)["window"]["branch"] == "main"


def test_a_window_whose_runs_all_fell_over_says_so_and_no_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [report(n, {FLAKY: "fp", STABLE: "fp"}) for n in (1, 2)]
    db = ingest(tmp_path / "h.db", runs, tmp_path)
    code, out = show(capsys, "--db", str(db))
    assert code == 0
    assert "0 runs scored, 2 excluded (the suite fell over)" in out
    assert "no run of main" not in out  # the runs are there: they fell over
