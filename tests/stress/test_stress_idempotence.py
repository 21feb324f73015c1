"""In-process repetition is a knob with its own evidence: tests that leak state into themselves.

A test that passes its first run in every fresh process and fails when it is
repeated in the same process is non-idempotent. Its repeats must neither hide
a found cause (a polluter, a seed) under ``flaky`` nor count as the failures
that decide a verdict. Each project is real and stressed with the real CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from math import comb
from pathlib import Path
from typing import Any

import pytest
from helpers.project import make_project
from helpers.stress_runs import (
    PYTEST,
    arm,
    stress,
    write_order_report,
)

# Like six's test_lazy: a module must not be imported before the test imports it.
# Once per fresh process it passes; repeated in the same process it always fails,
# and any earlier test that imports the module makes it fail too.
LAZY_FILES = {
    "heavy.py": """
        VALUE = 1
        """,
    "test_lazy.py": """
        import importlib
        import sys


        def test_heavy_is_imported_lazily():
            assert "heavy" not in sys.modules
            module = importlib.import_module("heavy")
            assert sys.modules["heavy"] is module
        """,
    "test_other.py": """
        def test_title():
            assert "other".title() == "Other"


        def test_uses_heavy():
            import heavy

            assert heavy.VALUE == 1


        def test_length():
            assert len("other") == 5
        """,
}


def _check_arms_split_first_runs_from_repeats(data: dict[str, Any]) -> None:
    for row in data["arms"]:
        assert row["first_runs"] + row["repeat_runs"] == row["runs"], row
        assert row["first_failures"] + row["repeat_failures"] == row["failures"], row


def test_non_idempotent_and_order_dependent_names_the_polluter(tmp_path: Path) -> None:
    project = make_project(tmp_path / "lazy-order", LAZY_FILES)
    test_id = "test_lazy.py::test_heavy_is_imported_lazily"
    order = [
        "test_other.py::test_title",
        "test_other.py::test_uses_heavy",
        "test_other.py::test_length",
        test_id,
    ]
    write_order_report(project, order)
    result, data = stress(project, test_id, "--order-from", "report.json", "--runs", "20")
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "order-dependent", data["reason"]
    assert data["polluter"] == "test_other.py::test_uses_heavy"
    assert data["quarantine_allowed"] is True
    # Every first run in a fresh process passed (10 processes: none failed, so no more are
    # made); every in-process repeat failed (2 processes x 5 runs: 2 first runs, 8 repeats).
    fresh = arm(data, "isolation", "baseline")
    assert (fresh["runs"], fresh["first_runs"], fresh["processes"]) == (10, 10, 10)
    assert fresh["failures"] == 0
    repeats = arm(data, "isolation", "in-process")
    assert (repeats["first_runs"], repeats["first_failures"], repeats["processes"]) == (2, 0, 2)
    assert (repeats["repeat_runs"], repeats["repeat_failures"]) == (8, 8)
    evidence = data["non_idempotent"]
    assert (evidence["first_runs"], evidence["first_failures"]) == (12, 0)
    assert (evidence["repeat_runs"], evidence["repeat_failures"]) == (8, 8)
    # 8 of 8 failures among the repeats against 0 of 12 first runs: 1 / C(20, 8).
    assert evidence["p_value"] == pytest.approx(1 / comb(20, 8))
    assert "non-idempotent" in data["reason"]
    assert any("non-idempotent" in note for note in data["notes"])
    confirm = arm(data, "order", "after-polluter")
    assert (confirm["runs"], confirm["failures"]) == (5, 5)  # 5 confirming processes
    _check_arms_split_first_runs_from_repeats(data)
    markdown = (project / "flakewarden-stress" / "verdict.md").read_text(encoding="utf-8")
    assert "Non-idempotent" in markdown and "in-process repeats" in markdown


def test_pure_non_idempotent_test_gets_its_own_verdict(tmp_path: Path) -> None:
    project = make_project(tmp_path / "lazy", LAZY_FILES)
    test_id = "test_lazy.py::test_heavy_is_imported_lazily"
    result, data = stress(project, test_id, "--runs", "10")
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "non-idempotent", data["reason"]
    assert data["quarantine_allowed"] is True
    # Isolation's 2 processes x 5 runs: each passed its first run and failed its 4 repeats.
    evidence = data["non_idempotent"]
    assert (evidence["repeat_runs"], evidence["repeat_failures"]) == (8, 8)
    assert evidence["processes_passed_first_then_failed"] == 2
    assert "non-idempotent" in data["rule"] and "Fisher" in data["rule"]
    # Never repeated in-process after isolation: the timing arms are fresh processes only,
    # and none of their runs failed.
    # (no thread and no event loop in the test: only the load knobs apply)
    assert {a["knob"] for a in data["arms"] if a["phase"] == "timing"} == {
        "baseline",
        "cpu-load",
        "throttle",
    }
    for knob in ("baseline", "cpu-load", "throttle"):
        timing = arm(data, "timing", knob)
        assert timing["repeat"] == 1 and timing["repeat_runs"] == 0
        assert timing["runs"] == timing["processes"] == 10
        assert timing["failures"] == 0
    assert data["first_failure"]["phase"] == "isolation"
    assert data["first_failure"]["knob"] == "in-process"
    assert data["first_failure"]["iteration"] == 1
    _check_arms_split_first_runs_from_repeats(data)
    # What its first run leaves behind for its repeats, the line that did it (the first
    # suspect) and the line of the test that reads it.
    [left] = [x for x in data["where"]["state"] if (x["kind"], x["name"]) == ("module", "heavy")]
    assert left["written_at"] == ["test_lazy.py", 7] and left["read_at"] == ["test_lazy.py", 6]
    first = data["where"]["suspects"][0]
    assert (first["file"], first["line"]) == ("test_lazy.py", 7)
    assert "its first run leaves behind the module heavy was imported" in data["reason"]
    # Its fresh processes were forked, and spawning every one gives the same verdict.
    assert data["launcher"]["mechanism"] == "fork server", data["launcher"]
    spawned = subprocess.run(
        [sys.executable, "-m", "flakewarden", "stress", test_id, "--runs", "10",
         "--report-dir", "spawned", "--", *PYTEST],
        cwd=project,
        env={**os.environ, "FLAKEWARDEN_STRESS_FORK": "0"},
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert spawned.returncode == 0, spawned.stderr
    again = json.loads((project / "spawned" / "verdict.json").read_text(encoding="utf-8"))
    assert again["verdict"] == "non-idempotent", again["reason"]
    assert again["launcher"]["mechanism"] == "spawn"
    assert [(a["phase"], a["knob"], a["runs"], a["failures"]) for a in again["arms"]] == [
        (a["phase"], a["knob"], a["runs"], a["failures"]) for a in data["arms"]
    ]


# The suite pins its randomness in conftest; sample data is drawn at import from the
# global random state. With pytest-randomly the seed decides the first draw; without
# it the first draw in a process always passes and the third, fourth and fifth (the
# in-process repeats) fail, which made isolation and the seed confirmation look flat.
SEED_FILES = {
    "conftest.py": """
        import random

        random.seed(8)
        """,
    "test_sample.py": """
        import random

        _draws = random.Random(random.getrandbits(64))


        def test_sample_is_large_enough():
            assert _draws.random() >= 0.3
        """,
}


def test_seed_dependent_test_is_not_made_flaky_by_in_process_repeats(tmp_path: Path) -> None:
    project = make_project(tmp_path / "seed-repeat", SEED_FILES)
    test_id = "test_sample.py::test_sample_is_large_enough"
    command = [sys.executable, "-m", "pytest"]  # pytest-randomly in use
    result, data = stress(project, test_id, "--runs", "20", command=command)
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "seed-dependent", data["reason"]
    seed = data["seed"]
    assert isinstance(seed, int) and seed == data["seeds"]["failing_seeds"][0]
    assert arm(data, "isolation", "baseline")["failures"] == 0
    # The seed phase ran the test once per process.
    for row in data["arms"]:
        if row["phase"] == "seed":
            assert row["repeat"] == 1 and row["repeat_runs"] == 0, row
    bad = arm(data, "seed", f"seed={seed}")
    assert bad["failures"] == bad["runs"] == 8
    _check_arms_split_first_runs_from_repeats(data)


def test_policy_accepts_non_idempotent_like_the_other_found_causes(tmp_path: Path) -> None:
    from flakewarden.config import load
    from flakewarden.model.verdicts import QUARANTINE_ALLOWED

    assert QUARANTINE_ALLOWED["non-idempotent"] is True
    path = tmp_path / ".github" / "flakewarden.yml"
    path.parent.mkdir(parents=True)
    path.write_text(
        "quarantine_policy:\n  allowed_verdicts: [non-idempotent, order-dependent]\n",
        encoding="utf-8",
    )
    policy = load(None, tmp_path).quarantine_policy
    assert policy.allowed_verdicts == ("non-idempotent", "order-dependent")


def test_first_runs_and_non_idempotence_survive_the_file_and_a_merge(tmp_path: Path) -> None:
    from flakewarden.stress.verdict import Arm, Sample, Verdict, read_verdict
    from flakewarden.stress.verdict_merge import merge_verdicts
    from flakewarden.stress.verdict_render import write_verdict

    runs = [Sample(p, i, i > 0) for p in (1, 2) for i in range(5)]
    repeats = Arm("isolation", "in-process", repeat=5).grown(runs, processes=2)
    assert (repeats.first_runs, repeats.first_failures) == (2, 0)
    assert (repeats.repeat_runs, repeats.repeat_failures) == (8, 8)
    evidence = {"first_runs": 12, "first_failures": 0, "repeat_runs": 8, "repeat_failures": 8}
    leaky = Verdict(
        "t.py::t", "non-idempotent", "leaks", "rule", arms=[repeats], non_idempotent=evidence
    )
    clean = Verdict(
        "t.py::t", "not-reproducible", "clean", "rule", arms=[Arm("timing", "baseline")]
    )
    for name, verdict in (("a", leaky), ("b", clean)):
        write_verdict(verdict, tmp_path / name)
    again = read_verdict(tmp_path / "a")
    assert again.non_idempotent == evidence
    row = again.arms[0].to_json()
    assert (row["first_runs"], row["repeat_runs"], row["repeat_failures"]) == (2, 8, 8)
    merged = merge_verdicts([read_verdict(tmp_path / "b"), again], ["b", "a"])
    assert merged.verdict == "non-idempotent" and merged.quarantine_allowed
    assert merged.non_idempotent == evidence
    markdown = (tmp_path / "a" / "verdict.md").read_text(encoding="utf-8")
    assert "| 0/2 | 8/8 |" in markdown
