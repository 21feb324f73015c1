"""The history store on real SQLite files, fed with reports of real ``flakewarden run``s."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from helpers.history_reports import report_dirs

from flakewarden.errors import HistoryError
from flakewarden.history import schema
from flakewarden.history.store import HistoryStore
from flakewarden.model import Outcome
from flakewarden.reports.report_json import read_report

__all__ = ["report_dirs"]  # the fixture


def test_ingest_counts_every_test_and_attempt(report_dirs: list[Path], tmp_path: Path) -> None:
    first, second = (read_report(d) for d in report_dirs)
    with HistoryStore.open(tmp_path / "history.db") as store:
        assert store.ingest(first, str(report_dirs[0])) is True
        assert store.ingest(second, str(report_dirs[1])) is True
        runs = store.runs()
        assert [r.source for r in runs] == [str(report_dirs[1]), str(report_dirs[0])]
        newest, oldest = runs
        assert newest.context.started_at == second.started_at
        # The counter file is kept: the flake failed once, in the first run only.
        assert (oldest.tests, oldest.first_attempt_failures, oldest.hard_failures) == (3, 2, 1)
        assert (newest.tests, newest.first_attempt_failures, newest.hard_failures) == (3, 1, 1)
        assert (oldest.flaky, newest.flaky) == (1, 0)
        entries = {e.test_id: e for e in store.entries([runs[1].run_key])}
    flaky = entries["test_flaky.py::test_flaky"]
    assert (flaky.outcome, flaky.attempts, flaky.failures) == (Outcome.FLAKY, 2, 1)
    assert flaky.first_attempt_failed and flaky.attempt_outcomes == "fp"
    broken = entries["test_other.py::test_broken"]
    assert (broken.outcome, broken.attempts, broken.failures) == (Outcome.FAILED, 3, 3)
    stable = entries["test_other.py::test_stable"]
    assert (stable.outcome, stable.attempts, stable.first_attempt_failed) == (
        Outcome.PASSED,
        1,
        False,
    )
    # Durations are kept in whole milliseconds, summed over every attempt.
    in_report = {test.id: test for test in first.tests}
    for entry in (flaky, broken, stable):
        assert entry.duration == int(in_report[entry.test_id].duration * 1000 + 0.5) / 1000


def test_a_run_ingested_twice_changes_nothing(report_dirs: list[Path], tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    report = read_report(report_dirs[0])
    with HistoryStore.open(path) as store:
        assert store.ingest(report, "first") is True
        before = store.counts()
    with HistoryStore.open(path) as store:  # reopened: the key is stored, not remembered
        assert store.ingest(read_report(report_dirs[0]), "again") is False
        assert store.counts() == before == (1, 3, 3)
        assert [r.source for r in store.runs()] == ["first"]


def test_runs_filter_and_limit(report_dirs: list[Path], tmp_path: Path) -> None:
    first, second = (read_report(d) for d in report_dirs)
    with HistoryStore.open(tmp_path / "history.db") as store:
        store.ingest(first, "a")
        store.ingest(second, "b")
        assert [r.source for r in store.runs(limit=1)] == ["b"]
        assert store.runs(branch="main") == []  # a laptop run has no branch
        assert [r.source for r in store.runs(branch="")] == ["b", "a"]
        assert store.runs(events=[]) == []
        assert len(store.runs(since=first.started_at)) == 2
        assert store.runs(since="9999-01-01T00:00:00+00:00") == []
        assert store.last_github_run_id("o/r", "CI") is None
        store.mark_github_run("o/r", "CI", "main", 41, 1, "expired")
        assert store.last_github_run_id("o/r", "CI") == 41
        assert store.last_github_run_id("o/r", "CI", "other") is None
        assert store.github_run_seen("o/r", "CI", 41, 1)
        assert not store.github_run_seen("o/r", "CI", 41, 2)


def test_a_file_that_is_not_a_history_is_refused_untouched(tmp_path: Path) -> None:
    text = tmp_path / "notes.db"
    text.write_text("not a database at all, but somebody's notes\n" * 20)
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE mine (x)")
    db.close()
    for path, words in ((text, "not a SQLite file"), (foreign, "another application")):
        before = path.read_bytes()
        with pytest.raises(HistoryError, match=words) as caught:
            HistoryStore.open(path)
        assert caught.value.exit_code == 4
        assert path.read_bytes() == before


def test_a_corrupt_database_is_refused_untouched(report_dirs: list[Path], tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    with HistoryStore.open(path) as store:
        store.ingest(read_report(report_dirs[0]), "a")
    data = bytearray(path.read_bytes())
    data[100 : len(data)] = b"\xff" * (len(data) - 100)  # header kept, every page destroyed
    path.write_bytes(bytes(data))
    with pytest.raises(HistoryError, match="corrupt") as caught:
        HistoryStore.open(path)
    assert "left untouched" in str(caught.value)
    assert path.read_bytes() == bytes(data)


def test_a_reader_never_creates_a_database(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match=r"no history at .*history ingest first"):
        HistoryStore.open(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    HistoryStore.open(path).close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION + 1}")
    db.close()
    copy = tmp_path / "copy.db"
    shutil.copy(path, copy)
    with pytest.raises(HistoryError, match=r"newer .* upgrade flakewarden"):
        HistoryStore.open(path)
    assert path.read_bytes() == copy.read_bytes()
