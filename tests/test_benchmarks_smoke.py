"""The benchmarks run end to end at a tiny size; their figures are measured, never asserted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
_LEAKY_ENV = ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "COVERAGE_FILE")


def _bench(
    script: str, *args: str, timeout: int = 120, inherit: bool = False
) -> subprocess.CompletedProcess[str]:
    """``script`` run to the end; without this run's pytest and coverage variables unless
    ``inherit``, so a benchmark's own pytest children start clean."""
    env = None if inherit else {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.mark.parametrize(
    ("script", "ratio_line"),
    [
        ("bench_run_overhead.py", "ratio flakewarden/pytest:"),
        ("bench_reruns_vs_rerunfailures.py", "ratio flakewarden/rerunfailures:"),
    ],
)
def test_benchmark_runs_at_a_tiny_size(script: str, ratio_line: str) -> None:
    done = _bench(script, "--tests", "6", "--modules", "2", "--pairs", "1")
    assert ratio_line in done.stdout, done.stdout
    assert "median s" in done.stdout, done.stdout


def test_history_show_benchmark_runs_at_a_tiny_size() -> None:
    done = _bench("bench_history_show.py", *("--tests", "60", "--runs", "5", "--repeat", "1"))
    assert "window: last 5 runs on main; 60 tests scored" in done.stdout, done.stdout
    assert "history show --json median s:" in done.stdout, done.stdout


def test_stress_fork_benchmark_runs_at_a_tiny_size() -> None:
    done = _bench(
        "bench_stress_fork.py",
        *("--runs", "3", "--pairs", "1", "--parallel", "1"),
        timeout=300,
    )
    assert "ratio fork/spawn at parallel 1:" in done.stdout, done.stdout
    assert "spawn runs/s" in done.stdout, done.stdout


def test_stress_sequential_simulation_meets_its_targets_at_a_small_size() -> None:
    """The stopping rule itself on seeded simulated tests, 40 trials a case.

    The knob-only races and the clean and high-rate tests meet their targets by a
    wide margin at this size; the false-race rate of flat rates needs the full
    run's 200 trials to be read (and ``tests/stress/test_sequential.py`` checks it
    on 300 seeded trials).
    """
    cases = ["knob-only 0.5%", "knob-only 1.5%", "knob-only 5%", "never fails", "flat 20%"]
    done = _bench(
        "bench_stress_sequential.py",
        *("--trials", "40"),
        *(arg for case in cases for arg in ("--case", case)),
        timeout=300,
        inherit=True,
    )
    lines = done.stdout.splitlines()
    assert lines[1].split()[:3] == ["case", "race", "flaky"], done.stdout
    rows = {line[:18].strip(): line[18:].split() for line in lines[2:] if "%" in line}
    assert sorted(rows) == sorted(cases), done.stdout
    for case in cases[:3]:  # every knob-only race found, none allowed quarantine
        race, allowed = rows[case][0], rows[case][3]
        assert float(race.rstrip("%")) >= 90.0 and float(allowed.rstrip("%")) <= 5.0, done.stdout
    assert rows["never fails"][2] == "100.0%", done.stdout  # not-reproducible, bounded


def test_plugin_evidence_benchmark_runs_at_a_tiny_size() -> None:
    done = _bench("bench_plugin_evidence.py", *("--tests", "40", "--pairs", "1"))
    # Both plugins recorded each of the 40 tests (a start and a test record apiece) and
    # the session's config, collection, pytest's counts and exit: 84 lines each.
    assert done.stdout.count(", 84 record lines") == 2, done.stdout
    assert "ratio candidate/baseline: wall" in done.stdout, done.stdout


def test_burn_in_benchmark_runs_its_no_test_change() -> None:
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_burn_in.py"), "--skip-stable", "--repeat", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "a change with no tests:" in done.stdout, done.stdout


def test_report_html_benchmark_runs_at_a_tiny_size() -> None:
    done = _bench("bench_report_html.py", *("--tests", "200", "--flaky", "5", "--repeat", "1"))
    assert "run: 200 tests, 5 flaky" in done.stdout, done.stdout
    assert "render_report_html median s:" in done.stdout, done.stdout
    assert "report.html:" in done.stdout, done.stdout


def test_dashboard_benchmark_runs_at_a_tiny_size() -> None:
    done = _bench(
        "bench_dashboard.py", *("--tests", "200", "--runs", "20", "--repeat", "1", "--loads", "1")
    )
    assert "history: 20 runs x 200 tests = 4,000 entries" in done.stdout, done.stdout
    assert "flakewarden dashboard (whole subprocess) median s:" in done.stdout, done.stdout


def test_plugin_knobs_benchmark_runs_at_a_tiny_size() -> None:
    done = _bench(
        "bench_plugin_knobs.py",
        *("--pairs", "1", "--repeat", "20", "--rounds", "1"),
        *("--tests", "threads", "--warmups", "0"),
        timeout=300,
    )
    assert "per test: trivial repeated 20 times in one process" in done.stdout, done.stdout
    assert "\nthreads " in done.stdout and "\nloop " not in done.stdout, done.stdout
    assert "set-up: plugin imported to configured" in done.stdout, done.stdout


def test_plugin_load_benchmark_runs_at_a_tiny_size() -> None:
    done = _bench("bench_plugin_load.py", "--pairs", "1")
    assert "source - bytecode, median of pair differences:" in done.stdout, done.stdout


def test_causes_benchmark_runs_at_a_tiny_size() -> None:
    done = _bench("bench_causes.py", *("--tests", "50", "--failing", "20", "--repeat", "1"))
    assert "run: 50 tests, 20 failed once; 3 causes" in done.stdout, done.stdout
    assert "signature computed: median" in done.stdout, done.stdout


def test_scale_benchmark_runs_at_a_tiny_size() -> None:
    done = _bench(
        "bench_scale.py",
        *("--sizes", "20,40", "--flaky", "2", "--modules", "2", "--workers", "2"),
        *("--pairs", "1", "--warmups", "0"),
        timeout=300,
    )
    assert "40 tests, 2 flaky, -n 2" in done.stdout, done.stdout
    assert "growth from 20 to 40 tests (x2.0 tests):" in done.stdout, done.stdout
    assert "flakewarden own peak MiB" in done.stdout, done.stdout


def test_the_outside_json_benchmark_runs_at_a_tiny_size() -> None:
    done = _bench("bench_outside_json.py", "--mib", "1", "--repeat", "1")
    for shape in ("whitespace", "empty-objects", "short-strings", "floats", "integers", "report"):
        assert f"\n{shape} " in done.stdout, done.stdout
    assert "medians of 1" in done.stdout


def test_slowest_tests_ranks_a_real_runs_tests_by_the_time_of_all_their_attempts(
    tmp_path: Path,
) -> None:
    from helpers.project import ISOLATED_INI, make_project

    project = make_project(
        tmp_path / "proj",
        {
            "test_pace.py": """
            import time
            from pathlib import Path

            def test_quick():
                pass

            def test_slow():
                time.sleep(0.6)

            def test_slow_once_then_rerun():
                marker = Path(__file__).with_name(".ran")
                first = not marker.exists()
                marker.write_text("x")
                time.sleep(0.4)
                assert not first
            """
        },
        ini=ISOLATED_INI,
    )
    run = subprocess.run(
        [sys.executable, "-m", "flakewarden", "run", "--", sys.executable, "-m", "pytest"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = project / "flakewarden-report" / "report.json"
    done = _bench("slowest_tests.py", "--top", "2", "--files", str(report))
    lines = done.stdout.splitlines()
    top = lines[lines.index("slowest 2 tests (seconds, part, id):") + 1 :][:2]
    # The rerun test ran twice (0.8 s in all): it outranks the one slow run; the quick test
    # is not among the top 2.
    assert [line.split()[-1] for line in top] == [
        "test_pace.py::test_slow_once_then_rerun",
        "test_pace.py::test_slow",
    ]
    assert float(top[0].split()[0]) >= 0.8 and float(top[1].split()[0]) >= 0.6
    assert "flakewarden-report: 3 tests" in lines[0]
    assert any(line.split()[1:] == ["3", "flakewarden-report", "test_pace.py"] for line in lines)
    missing = subprocess.run(
        [sys.executable, str(BENCHMARKS / "slowest_tests.py"), str(tmp_path / "none.json")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "not a readable report.json" in missing.stderr
