"""A test's score leaves out the runs the environment failed it: real runs, a real history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cause_projects import reset, storm_project

from flakewarden.cli import main
from flakewarden.history.failures import environment_failures
from flakewarden.history.store import HistoryStore
from flakewarden.history.tallies import Tally, tally
from flakewarden.history.tally_query import tally_store
from flakewarden.model.environment import DEFAULT_PATTERNS
from flakewarden.reports.report_json import read_report

RUNS = 3


@pytest.fixture(scope="module")
def outage_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three runs of a suite whose database refused three tests' first attempt (few
    enough of the suite's tests that the runs are scored, not left out as fallen over)."""
    where = tmp_path_factory.mktemp("outage")
    project = storm_project(where / "p", storm=3, modules=1, passing=12)
    db = where / "history.db"
    with HistoryStore.open(db) as store:
        for n in range(RUNS):
            reset(project.root)
            result = project.run("-q", report_dir=f"report-{n}")
            assert result.returncode == 0, result.stdout + result.stderr
            assert store.ingest(read_report(result.report_dir), f"report-{n}")
    return db


def _show(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> dict[str, dict[str, object]]:
    code = main(["history", "show", "--db", str(db), "--json", "--branch", "", *args])
    out = capsys.readouterr().out
    assert code == 0, out
    return {t["id"]: t for t in json.loads(out)["tests"]}


def test_an_outage_is_counted_apart_and_a_flake_of_the_test_is_not(
    outage_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tests = _show(capsys, outage_db)
    storm = [f"tests/test_db_0.py::test_query_{n}" for n in range(3)]
    for test in storm:
        assert tests[test]["environment_runs"] == RUNS
        assert (tests[test]["runs"], tests[test]["first_attempt_failures"]) == (0, 0)
        assert tests[test]["state"] == "new"
    alone = tests["tests/test_loner.py::test_alone"]
    assert (alone["runs"], alone["flaky_runs"], alone["environment_runs"]) == (RUNS, RUNS, 0)


def test_a_configured_list_without_the_pattern_counts_the_outage_as_flakes(
    outage_db: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "flakewarden.yml"
    config.write_text("causes:\n  builtin_environment: false\n", encoding="utf-8")
    tests = _show(capsys, outage_db, "--config", str(config))
    test = tests["tests/test_db_0.py::test_query_0"]
    assert (test["runs"], test["flaky_runs"], test["environment_runs"]) == (RUNS, RUNS, 0)


def test_the_lean_tally_counts_an_outage_apart_as_the_tally_of_entries_does(
    outage_db: Path,
) -> None:
    with HistoryStore.open(outage_db) as store:
        runs = store.runs()
        assert len(runs) == RUNS
        lean = tally_store(store, runs)
        ids = dict(store.read("SELECT id, run_key FROM runs"))
        names = dict(store.read("SELECT id, test_id FROM tests"))
        outages = environment_failures(store, list(ids), DEFAULT_PATTERNS)
        keyed = {(ids[run], names[test]): n for (run, test), n in outages.items()}
        assert len(keyed) == 3 * RUNS
        full = tally(runs, store.entries([r.run_key for r in runs]), keyed)
    assert sorted(lean) == sorted(full)
    for test_id, t in full.items():
        assert _counts(lean[test_id]) == _counts(t), test_id
    assert lean["tests/test_db_0.py::test_query_1"].environment == RUNS


def _counts(t: Tally) -> dict[str, object]:
    return {k: sorted(t.hard_at) if k == "hard_at" else getattr(t, k) for k in Tally.__slots__}
