"""History schema 2: failures by signature and the quarantined set, and old files migrating.

A version 1 database (written with version 1's own schema, as an older flakewarden left
it) opens, migrates in place and keeps every run; runs ingested after carry failures.
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from helpers.hermetic import clean_env
from helpers.history_reports import as_github_run, report_dirs
from helpers.project import PYTHON

from flakewarden.history import failures, schema, timeline
from flakewarden.history.store import HistoryStore
from flakewarden.model.signatures import innermost_frame, mask, signature
from flakewarden.reports.report_json import read_report

__all__ = ["report_dirs"]  # the fixture


def version_1_database(path: Path) -> None:
    """A database as flakewarden wrote it before schema 2: one run of two tests."""
    db = sqlite3.connect(str(path))
    db.executescript(schema.SCHEMA_V1)
    db.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
    db.execute("PRAGMA user_version = 1")
    db.execute(
        "INSERT INTO runs VALUES (1, 'local:old', '', '', NULL, NULL, '', '', '', 'main', '',"
        " NULL, '', '2026-01-01T00:00:00Z', '', '', '0.1.0', 2, 1, 0, 1, 0, 0, 'old', 'x')"
    )
    db.execute("INSERT INTO tests VALUES (1, 't.py::test_a'), (2, 't.py::test_b')")
    db.execute("INSERT INTO entries VALUES (1, 1, 0, 'p', 10), (1, 2, 1, 'fp', 20)")
    db.commit()
    db.close()


def test_a_version_1_database_opens_and_migrates(report_dirs: list[Path], tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    version_1_database(db)
    with HistoryStore.open(db) as store:
        assert store.counts() == (1, 2, 2)
        assert failures.failures(store) == []
        [entry_b] = [e for e in store.entries(["local:old"]) if e.test_id == "t.py::test_b"]
        assert entry_b.attempt_outcomes == "fp"
        copy = as_github_run(report_dirs[0], tmp_path / "new", 77)
        assert store.ingest(read_report(copy), str(copy))
        assert {f.message for f in failures.failures(store)} >= {"AssertionError: broken"}
    raw = sqlite3.connect(str(db))
    assert raw.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION == 4
    assert raw.execute("SELECT count(*) FROM github_artifacts").fetchone()[0] == 0
    # The old run has no claim; nothing was downloaded for it.
    assert raw.execute("SELECT claimed FROM runs WHERE run_key = 'local:old'").fetchall() == [("",)]
    raw.close()
    # The CLI reads the migrated file as any other.
    done = subprocess.run(
        [PYTHON, "-m", "flakewarden", "history", "show", "--db", str(db), "--branch", "main"],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    # Both runs, the old one and the new, are read (each excluded: most of it failed).
    assert "0 runs scored, 2 excluded (the suite fell over)" in done.stdout


def test_a_new_database_has_version_2s_tables(tmp_path: Path) -> None:
    with HistoryStore.open(tmp_path / "h.db") as store:
        tables = {name for (name,) in store.read("SELECT name FROM sqlite_master")}
    assert {"runs", "tests", "entries", "signatures", "failures", "quarantined"} <= tables


def test_ingest_keeps_each_failed_attempt_by_signature(
    report_dirs: list[Path], tmp_path: Path
) -> None:
    quarantined = ["test_other.py::test_broken"]
    with HistoryStore.open(tmp_path / "h.db") as store:
        report = read_report(report_dirs[0])
        report.quarantine_known = quarantined
        store.ingest(report, "r")
        found = failures.failures(store)
        names = {n: name for name, n in timeline.test_numbers(store).items()}
        by_test: dict[str, list[int]] = {}
        for failure in found:
            by_test.setdefault(names[failure.test], []).append(failure.attempt)
        assert by_test == {
            "test_other.py::test_broken": [1, 2, 3],
            "test_flaky.py::test_flaky": [1],
        }
        rows = failures.signatures(store, {f.signature for f in found})
        keys = {row.signature.key for row in rows.values()}
        assert keys == {
            "AssertionError: broken @ test_other.py::test_broken",
            "AssertionError: flaked @ test_flaky.py::test_flaky",
        }
        example = next(r.example for r in rows.values() if "broken" in r.signature.key)
        assert 'assert False, "broken"' in example
        [run] = timeline.run_numbers(store, store.runs())
        assert failures.quarantined(store, run) == set(quarantined)
        # Ingesting the same run again adds nothing.
        assert not store.ingest(report, "r")
        assert len(failures.failures(store)) == len(found)


def test_masking_and_frames() -> None:
    assert mask("timed out after 3.25 s on 10.0.0.7:8080") == "timed out after N s on N:N"
    assert mask("<Foo object at 0x7f3a2b1c>") == "<Foo object at <hex>>"
    assert mask("open /tmp/pytest-of-ci/pytest-12/test_a0/x.db") == "open <path>"
    assert mask("tmpa1b2c3d4 and pytest-77") == "<tmp> and <tmp>"
    assert mask("id 123e4567-e89b-12d3-a456-426614174000") == "id <uuid>"
    assert mask("var1 and test_case_3 keep their names") == "var1 and test_case_3 keep their names"
    long = (
        "    def test_a():\n>       helper()\n\ntests/test_a.py:3: \n_ _ _\n\n"
        "    def helper():\n>       boom()\n\nsrc/pkg/mod.py:9: \n_ _ _\n\n"
        "    def boom():\n>       raise ValueError('x')\nE       ValueError: x\n\n"
        "/usr/lib/python3.12/site-packages/lib/x.py:4: ValueError"
    )
    assert innermost_frame(long) == "src/pkg/mod.py::helper"
    short = "tests/test_a.py:3: in test_a\n    helper()\nsrc/pkg/mod.py:9: in helper\n    boom()"
    assert innermost_frame(short) == "src/pkg/mod.py::helper"
    native = 'Traceback:\n  File "tests/test_a.py", line 3, in test_a\n    x()\n'
    assert innermost_frame(native) == "tests/test_a.py::test_a"
    sig = signature("E   KeyError: 'user-1234'\n\ntests/t.py:5: KeyError", "KeyError: 'user-1234'")
    assert sig.key == "KeyError: 'user-N' @ tests/t.py:5"


def test_cells() -> None:
    passed, flaky, quarantined = (
        schema.OUTCOME_CODES[o] for o in ("passed", "flaky", "quarantined")
    )
    assert timeline.cell(passed, "p") == "p"
    assert timeline.cell(flaky, "fp") == "x"
    assert timeline.cell(schema.OUTCOME_CODES["failed"], "fff") == "f"
    assert timeline.cell(quarantined, "fff") == "q"
    assert timeline.cell(schema.OUTCOME_CODES["skipped"], "s") == "s"
