"""``history ingest --from-github`` with hostile artifacts beside valid ones, against the
emulator over loopback: each artifact is ingested or skipped on its own, a skipped one is
named, recorded and never tried again, and the resume point moves past it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.github_emulator import Fault, GitHubEmulator
from helpers.github_emulator_actions import zip_directory, zip_members
from helpers.github_fixtures import emulator_env
from helpers.history_reports import IngestJob, as_github_run, report_dirs

from flakewarden.cli import main
from flakewarden.commands.history_github import MAX_ARTIFACT_TRIES
from flakewarden.github.artifacts import MAX_ARTIFACT_BYTES
from flakewarden.history.store import HistoryStore

__all__ = ["report_dirs"]  # the fixture

PREFIX = "flakewarden-tests-0-attempt-1"


def _report(report_dir: Path, run_id: int, **changes: Any) -> bytes:
    """A real report of run ``run_id`` with ``changes`` made to its context, as report.json."""
    data = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    data["context"].update(
        {"repository": "octo-org/octo-repo", "workflow": "CI", "run_id": run_id, "event": "push"}
    )
    data["context"].update(changes)
    return json.dumps(data).encode()


def _listing(tmp_path: Path) -> dict[str, int]:
    return {str(p.relative_to(tmp_path)): p.stat().st_size for p in tmp_path.rglob("*")}


def test_an_oversized_artifact_is_skipped_and_the_runs_after_it_ingested(
    report_dirs: list[Path],
    tmp_path: Path,
    ingest_job: IngestJob,
    capsys: pytest.CaptureFixture[str],
) -> None:
    work, emu = ingest_job
    first = emu.add_workflow_run(created_at=1_700_000_000)
    big = emu.add_artifact(first["id"], PREFIX + "-big", b"PK")
    big["size_in_bytes"] = MAX_ARTIFACT_BYTES + 1  # listed past the download limit
    emu.add_artifact(
        first["id"],
        PREFIX,
        zip_directory(as_github_run(report_dirs[0], tmp_path / "a", first["id"])),
    )
    # Reports whose run id no SQLite integer holds, nested 100,000 deep, with NaN and
    # Infinity, beside a valid report, in one artifact.
    second = emu.add_workflow_run(created_at=1_700_000_100)
    huge = emu.add_artifact(
        second["id"],
        PREFIX,
        zip_members(
            {
                "huge/report.json": _report(report_dirs[0], 10**30),
                "nested/report.json": b"[" * 100_000 + b"]" * 100_000,
                "nan/report.json": _report(report_dirs[0], second["id"]).replace(
                    b'"duration": ', b'"duration": NaN, "was": ', 1
                ),
                "infinite/report.json": _report(
                    report_dirs[0], second["id"], job_name="inf"
                ).replace(b'"exit_code": ', b'"exit_code": Infinity, "was": ', 1),
                "fine/report.json": _report(report_dirs[1], second["id"], job_name="fine"),
            }
        ),
    )
    third = emu.add_workflow_run(created_at=1_700_000_200)
    emu.add_artifact(
        third["id"],
        PREFIX,
        zip_directory(as_github_run(report_dirs[1], tmp_path / "c", third["id"])),
    )
    db = work / "history.db"
    outside = _listing(tmp_path / "a") | _listing(tmp_path / "c")
    argv = ["history", "ingest", "--from-github", "--db", str(db)]

    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "3 new run(s) looked at, 4 report artifact(s), 3 run(s) ingested" in out
    assert "5 unreadable" in out and "stopped early" not in err
    assert re.search(
        rf"unreadable artifact, skipped: {PREFIX}-big \(run {first['id']}, artifact "
        rf"{big['id']}\): cannot be downloaded: .*more than {MAX_ARTIFACT_BYTES:,}",
        err,
    )
    [huge_line] = [line for line in err.splitlines() if "huge/report.json" in line]
    assert f"artifact {huge['id']}" in huge_line
    assert "context.run_id is 1000000000000000000000000000000, out of a 64-bit" in huge_line
    for member, why in (
        ("nested/report.json", "nested deeper than 64 levels"),
        ("nan/report.json", "NaN is not a number JSON allows"),
        ("infinite/report.json", "Infinity is not a number JSON allows"),
    ):
        [line] = [line for line in err.splitlines() if member in line]
        assert why in line and f"artifact {huge['id']}" in line
    # Exactly one line per skipped artifact or report, each on a line of its own.
    assert len([line for line in err.splitlines() if "skipped" in line]) == 5

    with HistoryStore.open(db) as store:
        assert sorted((r.context.run_id, r.context.job_name) for r in store.runs()) == [
            (first["id"], ""),
            (second["id"], "fine"),
            (third["id"], ""),
        ]
        assert store.last_github_run_id(emu.full_name, "", "") == third["id"]
        skipped = store.skipped_artifacts(emu.full_name)
        assert [(run, artifact, result) for run, artifact, _, result, _ in skipped] == [
            (first["id"], big["id"], "skipped"),
            (second["id"], huge["id"], "skipped"),
        ]
    downloads = len(emu.blob_log)
    assert downloads == 3  # the oversized artifact was never downloaded

    # Recorded: the next ingest asks for nothing old and says nothing of them again.
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "0 new run(s) looked at" in out and err == ""
    assert len(emu.blob_log) == downloads
    assert emu.leaked_authorization == [] and emu.schema_errors == []
    # Nothing but the database was written, in the working directory only.
    assert all(p.name.startswith("history.db") for p in work.iterdir())
    assert _listing(tmp_path / "a") | _listing(tmp_path / "c") == outside


def test_a_download_that_keeps_failing_is_skipped_on_its_last_try(
    report_dirs: list[Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with GitHubEmulator() as emu:
        emulator_env(monkeypatch, emu)
        runs = []
        for n in range(3):
            run = emu.add_workflow_run(created_at=1_700_000_000 + n)
            report = as_github_run(report_dirs[n % 2], tmp_path / f"r{n}", run["id"])
            artifact = emu.add_artifact(run["id"], PREFIX, zip_directory(report))
            runs.append((run["id"], artifact["id"]))
        # The middle run's artifact: a 502 on every try, every ingest (1 try + 4 retries each).
        emu.faults.append(Fault(status=502, path=rf"/artifacts/{runs[1][1]}/zip$", times=10**6))
        db = tmp_path / "history.db"
        argv = ["history", "ingest", "--from-github", "--db", str(db)]
        for attempt in range(1, MAX_ARTIFACT_TRIES):
            assert main(argv) == 0
            out, err = capsys.readouterr()
            assert f"stopped early: run {runs[1][0]}:" in err and "502" in err
            with HistoryStore.open(db) as store:
                assert [r.context.run_id for r in store.runs()] == [runs[0][0]]
                assert [(a, r) for _, a, _, r, _ in store.skipped_artifacts(emu.full_name)] == [
                    (runs[1][1], "failed")
                ]
                assert store.artifact_tries(emu.full_name, runs[1][1]) == attempt
        assert main(argv) == 0
        out, err = capsys.readouterr()
        assert "stopped early" not in err
        assert (
            f"unreadable artifact, skipped: {PREFIX} (run {runs[1][0]}, artifact {runs[1][1]}): "
            f"its download failed {MAX_ARTIFACT_TRIES} times" in err
        )
        assert "2 new run(s) looked at, 2 report artifact(s), 1 run(s) ingested" in out
        with HistoryStore.open(db) as store:
            assert sorted(r.context.run_id for r in store.runs()) == [runs[0][0], runs[2][0]]
            assert store.last_github_run_id(emu.full_name, "", "") == runs[2][0]
            assert [(a, r) for _, a, _, r, _ in store.skipped_artifacts(emu.full_name)] == [
                (runs[1][1], "skipped")
            ]
        # Skipped for good: the next ingest does not download it again.
        zips = len(emu.requests_for("GET", rf"/artifacts/{runs[1][1]}/zip$"))
        assert main(argv) == 0
        assert "0 new run(s) looked at" in capsys.readouterr().out
        assert len(emu.requests_for("GET", rf"/artifacts/{runs[1][1]}/zip$")) == zips
        assert emu.leaked_authorization == [] and emu.schema_errors == []


def test_a_download_that_fails_once_is_ingested_next_time_and_forgotten(
    report_dirs: list[Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with GitHubEmulator() as emu:
        emulator_env(monkeypatch, emu)
        run = emu.add_workflow_run(created_at=1_700_000_000)
        report = as_github_run(report_dirs[0], tmp_path / "r", run["id"])
        artifact = emu.add_artifact(run["id"], PREFIX, zip_directory(report))
        emu.faults.append(Fault(status=502, path=rf"/artifacts/{artifact['id']}/zip$", times=5))
        db = tmp_path / "history.db"
        argv = ["history", "ingest", "--from-github", "--db", str(db)]
        assert main(argv) == 0
        assert "stopped early" in capsys.readouterr().err
        assert main(argv) == 0
        out, err = capsys.readouterr()
        assert "1 run(s) ingested" in out and err == ""
        with HistoryStore.open(db) as store:
            assert store.skipped_artifacts(emu.full_name) == []
            assert [r.context.run_id for r in store.runs()] == [run["id"]]


def test_a_report_claiming_a_later_runs_id_does_not_keep_that_run_out(
    report_dirs: list[Path],
    tmp_path: Path,
    ingest_job: IngestJob,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A pull request's artifact may hold a report that claims any run's identity: whether a
    # run was looked at is the ingest's own record of the runs it downloaded, never a claim.
    work, emu = ingest_job
    first = emu.add_workflow_run(created_at=1_700_000_000)
    second = emu.add_workflow_run(created_at=1_700_000_100)
    forged = _report(report_dirs[0], second["id"], run_attempt=1, job_name="forged")
    emu.add_artifact(first["id"], PREFIX, zip_members({"forged/report.json": forged}))
    emu.add_artifact(
        second["id"],
        PREFIX,
        zip_directory(as_github_run(report_dirs[1], tmp_path / "b", second["id"])),
    )
    db = work / "history.db"
    assert main(["history", "ingest", "--from-github", "--db", str(db)]) == 0
    out, _ = capsys.readouterr()
    assert "2 new run(s) looked at" in out
    with HistoryStore.open(db) as store:
        jobs = sorted((r.context.run_id, r.context.job_name) for r in store.runs())
    assert (second["id"], "") in jobs, jobs  # the real run's report, ingested
    assert len(emu.blob_log) == 2
