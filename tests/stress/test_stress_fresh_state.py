"""A test whose first run in a process fails while its in-process repeats pass.

Ten failing first runs cannot tell a test that always fails in a fresh process from one
that fails there 85% of the time (a cold start inside a tight margin: runium's
``test_start_in``). When a repeat passes, ``stress`` makes more fresh runs before it
calls the test ``deterministic``; each test here runs a real ``flakewarden stress``.
"""

from __future__ import annotations

from pathlib import Path

from helpers.project import make_project
from helpers.stress_runs import arm, stress

COLD_EVERY_PROCESS = """
    _runs = []


    def test_cold_start():
        first = not _runs
        _runs.append(1)
        assert not first, "the first run in a process always finds the cache cold"
    """

# Process n (counted from 0 across the whole stress run, the probe included) finds the
# cache cold until 13 processes have started: claimed with O_EXCL, so parallel
# processes count right.
WARMS_UP = """
    import os
    from pathlib import Path

    SLOTS = Path(__file__).with_name(".processes")
    _runs = []


    def _process_number():
        SLOTS.mkdir(exist_ok=True)
        n = 0
        while True:
            try:
                os.close(os.open(SLOTS / str(n), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                return n
            except FileExistsError:
                n += 1


    def test_warm_cache():
        first = not _runs
        _runs.append(1)
        if first:
            assert _process_number() >= 13, "the cache is cold in the first processes"
    """


def test_a_test_that_fails_every_fresh_first_run_is_deterministic_after_more_fresh_runs(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "cold", {"test_cold.py": COLD_EVERY_PROCESS})
    result, data = stress(project, "test_cold.py::test_cold_start")
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "deterministic"
    assert data["quarantine_allowed"] is False
    isolation, repeats = arm(data, "isolation", "baseline"), arm(data, "isolation", "in-process")
    assert isolation["runs"] == isolation["failures"] == 30  # 10, then 20 more
    assert repeats["failures"] == 2 and repeats["runs"] == 10  # only the first runs failed
    assert "fails every time a fresh process runs it" in data["reason"]
    assert "8 of 8 in-process repeats passed" in data["reason"]
    assert any("20 more fresh processes decide" in note for note in data["notes"])


def test_a_first_run_that_can_pass_in_a_later_process_is_not_deterministic(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "warm", {"test_warm.py": WARMS_UP})
    result, data = stress(project, "test_warm.py::test_warm_cache", "--runs", "20")
    assert result.returncode == 0, result.stderr
    isolation, repeats = arm(data, "isolation", "baseline"), arm(data, "isolation", "in-process")
    # Processes 0 to 12 find the cache cold: the probe, the first 10 fresh runs and the
    # 2 in-process repeat processes (their first runs). The 20 more fresh runs all pass.
    assert (isolation["runs"], isolation["failures"]) == (30, 10)
    assert (repeats["runs"], repeats["failures"]) == (10, 2)
    assert any("20 more fresh processes decide" in note for note in data["notes"])
    # Not deterministic; and the timing arms, warm, passed 20 of 20 each: too few runs to
    # bound a knob, so the --runs cap leaves the question open.
    timing = [a for a in data["arms"] if a["phase"] == "timing"]
    # (no thread and no event loop in the test: the thread and asyncio knobs cannot apply)
    assert {a["knob"] for a in timing} == {"baseline", "cpu-load", "throttle"}
    assert all((a["runs"], a["failures"]) == (20, 0) for a in timing), timing
    assert data["verdict"] == "inconclusive", data["reason"]
    assert data["quarantine_allowed"] is False
    assert "the --runs cap ended it first" in data["reason"]
