"""``history ingest --from-github`` stores each report under the run GitHub listed it in,
against the emulator over loopback: a fork's report that claims the main branch, another
run or another commit changes nothing the main branch's tallies hold."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_emulator_actions import zip_directory, zip_members
from helpers.history_reports import IngestJob, as_github_run, report_dirs

from flakewarden.cli import main
from flakewarden.history.seen import seen_on_branch
from flakewarden.history.store import HistoryStore
from flakewarden.history.tally_query import tally_store

__all__ = ["report_dirs"]  # the fixture

PREFIX = "flakewarden-tests-0-attempt-1"
MAIN_SHA = "a" * 40
FORK_SHA = "f" * 40


def _claiming(report_dir: Path, **context: Any) -> bytes:
    """A real report whose context claims ``context``."""
    data = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    data["context"].update({"repository": "octo-org/octo-repo", "workflow": "CI", **context})
    return json.dumps(data).encode()


def _main_runs(emu: GitHubEmulator, report_dirs: list[Path], tmp_path: Path) -> list[int]:
    """Two runs on main: one job, then a matrix of two shards (two reports in one run)."""
    first = emu.add_workflow_run(created_at=1_700_000_000, head_sha=MAIN_SHA)
    emu.add_artifact(
        first["id"],
        PREFIX,
        zip_directory(as_github_run(report_dirs[0], tmp_path / "m1", first["id"], commit=MAIN_SHA)),
    )
    second = emu.add_workflow_run(created_at=1_700_000_100, head_sha=MAIN_SHA)
    for shard in ("py3.11", "py3.12"):
        report = as_github_run(
            report_dirs[1], tmp_path / shard, second["id"], commit=MAIN_SHA, job_name=shard
        )
        emu.add_artifact(second["id"], f"{PREFIX}-{shard}", zip_directory(report))
    return [first["id"], second["id"]]


def _main_tallies(db: Path) -> tuple[list[tuple[Any, ...]], dict[str, Any], Any]:
    """What the main branch's evidence is made of: its runs, its tallies (the quarantine
    policy's and the digest's evidence) and the tests burn-in counts as known there."""
    with HistoryStore.open(db) as store:
        runs = store.runs(branch="main", pull_requests=False)
        keys = sorted((r.context.run_id, r.context.job_name, r.context.commit) for r in runs)
        tallies = {
            name: (t.figures(), t.newest, t.oldest, t.first_failure, t.clean, t.hard_at)
            for name, t in tally_store(store, runs).items()
        }
        return keys, tallies, seen_on_branch(store, "main").runs


def _ingest(db: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    assert main(["history", "ingest", "--from-github", "--db", str(db)]) == 0
    return capsys.readouterr()


def test_a_forks_report_claiming_main_is_stored_under_its_real_run(
    report_dirs: list[Path],
    tmp_path: Path,
    ingest_job: IngestJob,
    capsys: pytest.CaptureFixture[str],
) -> None:
    work, emu = ingest_job
    main_ids = _main_runs(emu, report_dirs, tmp_path)
    _ingest(work / "before.db", capsys)
    before = _main_tallies(work / "before.db")
    assert [key[0] for key in before[0]] == [main_ids[0], main_ids[1], main_ids[1]]
    assert before[1]  # the flaky run's tests are in main's tallies

    # A fork's pull request from its own "main" branch: one report claims a run of
    # main (its id, event, commit), another a run id that does not exist.
    fork = emu.add_workflow_run(
        created_at=1_700_000_200, branch="main", event="pull_request", head_sha=FORK_SHA
    )
    forged = {
        "posing/report.json": _claiming(
            report_dirs[0],
            run_id=main_ids[0],
            run_attempt=1,
            event="push",
            branch="main",
            commit=MAIN_SHA,
            job_name="posing",
        ),
        "elsewhere/report.json": _claiming(
            report_dirs[0],
            run_id=10**12,
            run_attempt=7,
            event="schedule",
            branch="release",
            commit="b" * 40,
            job_name="elsewhere",
        ),
    }
    artifact = emu.add_artifact(fork["id"], PREFIX, zip_members(forged))
    # The same history, then the fork's run on top of it.
    (work / "after.db").write_bytes((work / "before.db").read_bytes())
    out, err = _ingest(work / "after.db", capsys)
    assert "1 new run(s) looked at, 1 report artifact(s), 2 run(s) ingested" in out

    # Main's evidence is exactly as it was.
    assert _main_tallies(work / "after.db") == before
    with HistoryStore.open(work / "after.db") as store:
        runs = store.runs(pull_requests=True)
    stored = sorted(
        (c.job_name, c.run_id, c.run_attempt, c.event, c.branch, c.commit)
        for c in (r.context for r in runs)
    )
    assert stored == [
        ("elsewhere", fork["id"], 1, "pull_request", "main", FORK_SHA),
        ("posing", fork["id"], 1, "pull_request", "main", FORK_SHA),
    ]
    # What each report claimed is kept as detail, and said in one line each.
    claimed = {r.context.job_name: r.claimed for r in runs}
    assert claimed["posing"] == f"run_id={main_ids[0]}, event='push'"
    assert claimed["elsewhere"] == (
        "run_id=1000000000000, run_attempt=7, event='schedule', branch='release'"
    )
    lines = [line for line in err.splitlines() if "claims another run" in line]
    assert len(lines) == 2, err
    for line in lines:
        assert f"(run {fork['id']}, artifact {artifact['id']})" in line
        assert f"stored under run {fork['id']} (pull_request on main at {FORK_SHA[:12]})" in line
    assert any("elsewhere/report.json" in line and "branch='release'" in line for line in lines)


def test_a_push_report_claiming_another_commit_or_run_is_stored_under_the_listed_one(
    report_dirs: list[Path],
    tmp_path: Path,
    ingest_job: IngestJob,
    capsys: pytest.CaptureFixture[str],
) -> None:
    work, emu = ingest_job
    run = emu.add_workflow_run(
        created_at=1_700_000_000, branch="feature", head_sha=MAIN_SHA, run_attempt=2
    )
    members = {
        # An earlier attempt of the same run: its own attempt is kept.
        "attempt-1/report.json": _claiming(
            report_dirs[0],
            run_id=run["id"],
            run_attempt=1,
            event="push",
            branch="feature",
            commit=MAIN_SHA,
            job_name="a1",
        ),
        "other/report.json": _claiming(
            report_dirs[1],
            run_id=run["id"] + 5,
            run_attempt=2,
            event="push",
            branch="main",
            commit="c" * 40,
            job_name="other",
        ),
    }
    emu.add_artifact(run["id"], PREFIX, zip_members(members))
    db = work / "history.db"
    _, err = _ingest(db, capsys)
    assert [line for line in err.splitlines() if "claims another run" in line] == [
        line for line in err.splitlines() if "other/report.json" in line
    ]
    raw = sqlite3.connect(str(db))
    rows = raw.execute(
        "SELECT job_name, run_id, run_attempt, branch, commit_sha, claimed FROM runs"
        " ORDER BY job_name"
    ).fetchall()
    raw.close()
    assert rows == [
        ("a1", run["id"], 1, "feature", MAIN_SHA, ""),
        (
            "other",
            run["id"],
            2,
            "feature",
            MAIN_SHA,
            f"run_id={run['id'] + 5}, branch='main', commit='{'c' * 40}'",
        ),
    ]
