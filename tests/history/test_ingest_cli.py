"""``flakewarden history ingest REPORT_DIR...`` as a real subprocess on real report dirs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.history_reports import report_dirs

from flakewarden.cli import main
from flakewarden.history.store import HistoryStore

__all__ = ["report_dirs"]  # the fixture


def _ingest(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flakewarden", "history", "ingest", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ingest_report_dirs_twice_and_a_bad_one(report_dirs: list[Path], tmp_path: Path) -> None:
    first, second = (str(d) for d in report_dirs)
    missing = tmp_path / "nothing-here"
    done = _ingest(first, second, str(missing), cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # one report dir could not be read
    assert "2 run(s) ingested from 3 report dir(s), 0 already in, 1 unreadable" in done.stdout
    assert f"unreadable report, skipped: {missing} not found" in done.stderr
    assert "flakewarden-history.db: 2 run(s), 3 test(s), 6 entries" in done.stdout
    again = _ingest(first, second, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "0 run(s) ingested from 2 report dir(s), 2 already in, 0 unreadable" in again.stdout
    with HistoryStore.open(tmp_path / "flakewarden-history.db") as store:
        assert store.counts() == (2, 3, 6)

    # A corrupt database: one line, exit 4, the file kept as it was.
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"SQLite format 3\x00" + b"\x07" * 4000)
    refused = _ingest(first, "--db", str(bad), cwd=tmp_path)
    assert refused.returncode == 4
    assert refused.stderr.count("\n") == 1 and "left untouched" in refused.stderr
    assert bad.read_bytes() == b"SQLite format 3\x00" + b"\x07" * 4000

    usage = _ingest(cwd=tmp_path)
    assert usage.returncode == 4 and "nothing to ingest" in usage.stderr


def test_the_history_benchmark_runs_at_a_tiny_size() -> None:
    """Its figures are measured, never asserted: here only that it runs end to end."""
    bench = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_history.py"
    done = subprocess.run(
        [sys.executable, str(bench), "--tests", "50", "--runs", "5", "--github-runs", "3"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 runs x 50 tests = 250 entries" in done.stdout
    assert "github second ingest: 0 runs" in done.stdout


def test_the_history_group_needs_a_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history"]) == 4
    assert "SUBCOMMAND" in capsys.readouterr().err
    assert main(["history", "ingest", "--help"]) == 0
    assert "--from-github" in capsys.readouterr().out


def test_two_runs_within_one_second_have_keys_of_their_own(
    report_dirs: list[Path], tmp_path: Path
) -> None:
    """Runs of one command in one job start within a second of each other: the start time
    the key holds is to the millisecond, so each run is a run of its own; a report written
    before, to the second, keeps its key."""
    from flakewarden.history.rows import report_context
    from flakewarden.model import run_key
    from flakewarden.reports.report_json import read_report
    from flakewarden.runner.run_options import now_iso

    assert now_iso(1_700_000_000.25) == "2023-11-14T22:13:20.250+00:00"
    assert now_iso(1_700_000_000.75) == "2023-11-14T22:13:20.750+00:00"
    written = read_report(report_dirs[0])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", written.started_at)
    keys = set()
    for n, started in enumerate(
        [
            "2023-11-14T22:13:20.250+00:00",
            "2023-11-14T22:13:20.750+00:00",
            "2023-11-14T22:13:20+00:00",
        ]
    ):
        target = tmp_path / f"r{n}"
        target.mkdir()
        data = json.loads((report_dirs[0] / "report.json").read_text(encoding="utf-8"))
        data["started_at"] = data["context"]["started_at"] = started
        (target / "report.json").write_text(json.dumps(data), encoding="utf-8")
        report = read_report(target)
        keys.add(run_key(report_context(report), report.command, report.rootdir))
    assert len(keys) == 3
    assert any(key.startswith("local:2023-11-14T22:13:20+00:00/") for key in keys)  # as before
    done = _ingest(*(str(tmp_path / f"r{n}") for n in range(3)), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "3 run(s) ingested from 3 report dir(s), 0 already in" in done.stdout
