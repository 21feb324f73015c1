"""Yield and asyncio find the races the switch interval cannot, and cost nothing elsewhere.

- A lost update inside one line (``self.count += 1``) has no call and no backward
  jump inside its window, where the interpreter checks whether to switch threads:
  ``sys.setswitchinterval`` does not interleave it, while a thread that yields at an
  opcode of the project's code does.
- Two asyncio tasks that rely on the order they were scheduled in never fail on a
  quiet machine, where the event loop runs ready callbacks first in, first out; a
  seeded loop that shuffles them does.
- A test in which no event loop (and no thread) runs gets neither knob: they cannot
  apply, so they cost no runs, and the verdict says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.project import make_project
from helpers.stress_corpus import NO_LOOP, ONE_LINE_LOST_UPDATE, TASK_ORDER_RACE
from helpers.stress_runs import arm, stress


@pytest.mark.usefixtures("one_stress_at_a_time")
def test_a_lost_update_inside_one_line_is_a_race_under_yield(tmp_path: Path) -> None:
    project = make_project(tmp_path / "counter", ONE_LINE_LOST_UPDATE)
    test_id = "test_counter.py::test_every_increment_is_counted"
    result, data = stress(project, test_id, "--budget-seconds", "240")
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "race", data["reason"]
    assert data["knob"] == "yield", data["reason"]
    assert data["quarantine_allowed"] is False
    base, knob = arm(data, "timing", "baseline"), arm(data, "timing", "yield")
    assert base["failures"] == 0 and knob["failures"] > 0
    # The switch interval ran beside it and is not what found it.
    assert data["power"]["knobs"]["switch-interval"]["state"] != "race"
    # The failing schedule's seed is in verdict.json and in the command that replays it.
    replay = data["statistics"]["replay"]["yield"]
    assert replay.startswith("FLAKEWARDEN_YIELD=") and replay in knob["command"]
    assert "-p flakewarden.inside.plugin" in knob["command"]
    assert replay in data["reason"]


@pytest.mark.usefixtures("one_stress_at_a_time")
def test_a_task_order_race_is_a_race_under_asyncio(tmp_path: Path) -> None:
    project = make_project(tmp_path / "cache", TASK_ORDER_RACE)
    test_id = "test_cache.py::test_the_reader_sees_the_warmed_cache"
    result, data = stress(project, test_id, "--budget-seconds", "240")
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "race", data["reason"]
    assert data["knob"] == "asyncio", data["reason"]
    base, knob = arm(data, "timing", "baseline"), arm(data, "timing", "asyncio")
    assert base["failures"] == 0 and knob["failures"] > 0
    assert arm(data, "isolation", "baseline")["failures"] == 0  # never at baseline
    replay = data["statistics"]["replay"]["asyncio"]
    assert replay.startswith("FLAKEWARDEN_ASYNCIO=") and replay in knob["command"]
    # No thread ran beside the test: the thread knobs could not apply and cost nothing.
    assert set(data["statistics"]["not_applicable"]) == {"switch-interval", "yield"}
    assert not [a for a in data["arms"] if a["knob"] in ("switch-interval", "yield")]
    # The await points whose order decides it, each alone: moving only the tasks
    # suspended at the warm-up's or the reader's await fails it; at the gather, never.
    timing = data["timing"]
    assert timing["kind"] == "interleaving", timing
    assert timing["lines"] and set(timing["lines"]) <= {"test_cache.py:5", "test_cache.py:10"}
    assert timing["alone"]["test_cache.py:17"]["failures"] == 0, timing
    gather = arm(data, "await-points", "at test_cache.py:17")
    assert gather["runs"] > 0 and gather["failures"] == 0
    assert "moving the tasks suspended at test_cache.py:" in data["reason"]
    assert "the order of the tasks at those awaits decides it" in data["reason"]
    first = data["where"]["suspects"][0]
    assert f"{first['file']}:{first['line']}" in timing["lines"]


# Its verdict is knob applicability and a test that never fails: no timing evidence, so it
# runs in the parallel part of the suite.
def test_a_test_without_an_event_loop_or_threads_gets_neither_knob(tmp_path: Path) -> None:
    project = make_project(tmp_path / "plain", NO_LOOP)
    result, data = stress(project, "test_plain.py::test_a_rare_coin", "--budget-seconds", "120")
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "not-reproducible", data["reason"]
    skipped = data["statistics"]["not_applicable"]
    assert set(skipped) == {"switch-interval", "yield", "asyncio"}
    assert "no event loop ran" in skipped["asyncio"]
    assert "no thread ran" in skipped["yield"]
    # Not applicable costs no runs: no arm, no bound, and the race test's correction
    # counts only the two load knobs.
    assert {a["knob"] for a in data["arms"] if a["phase"] == "timing"} == {
        "baseline",
        "cpu-load",
        "throttle",
    }
    assert set(data["power"]["knobs"]) == {"cpu-load", "throttle"}
    assert data["power"]["knobs"]["cpu-load"]["race_threshold"] == pytest.approx(2 / 0.05)
    assert "not applicable" in data["reason"] and "no event loop ran" in data["reason"]
    assert "not applicable" in (project / "flakewarden-stress" / "verdict.md").read_text(
        encoding="utf-8"
    )
