"""A rare race that only a knob exposes is found, never granted quarantine.

Eight threads reserve stock with a read, a little work and a write: a textbook
lost update. At the default switch interval a thread finishes its reservation
long before the interpreter would switch threads, so it never fails; at
``sys.setswitchinterval(1e-5)`` it loses an update in about 1-4% of runs
(measured on this 2-core machine: 9 of 400 plain-Python iterations, 0 of 400 at
the default); a thread that yields inside the window (the ``yield`` knob) loses
one far more often. Every failure falls under a knob, none at baseline: sampling
goes on until the evidence crosses the race threshold, instead of stopping
after a fixed round count and calling a handful of failures a flat rate.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.project import make_project
from helpers.stress_corpus import LOST_UPDATE
from helpers.stress_runs import arm, stress


@pytest.mark.usefixtures("one_stress_at_a_time")
def test_a_knob_only_lost_update_at_a_low_rate_is_a_race(tmp_path: Path) -> None:
    project = make_project(tmp_path / "stock", LOST_UPDATE)
    test_id = "test_stock.py::test_concurrent_reservations_are_all_counted"
    result, data = stress(project, test_id, "--budget-seconds", "480")
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "race", data["reason"]
    # Both thread knobs reach into its window (a loop between the read and the write):
    # the one whose evidence crossed first names it.
    knob = data["knob"]
    assert knob in ("switch-interval", "yield"), knob
    assert data["quarantine_allowed"] is False
    found, base = arm(data, "timing", knob), arm(data, "timing", "baseline")
    assert found["failures"] > base["failures"]
    row = data["power"]["knobs"][knob]
    assert row["state"] == "race" and row["e_value"] >= row["race_threshold"]
    assert data["statistics"]["ended_by"] == "race"
