"""End-to-end tests of ``flakewarden run``: real pytest subprocesses on real projects."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers.console_script import pytest_script
from helpers.project import ISOLATED_INI, PYTEST, PYTHON, Project, flaky_module, make_project
from helpers.workflow_commands import parse_commands, read_output_file


def test_flaky_test_is_rerun_alone_and_reported(project: Project) -> None:
    project.write("tests/test_stable.py", "def test_ok():\n    pass\n")
    source = project.write("tests/test_flaky.py", flaky_module("flaky"))
    def_line = source.read_text().splitlines().index("def test_flaky():") + 1
    result = project.run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "FLAKY-TEST-DETECTED: tests/test_flaky.py::test_flaky (1/2 attempts failed, then passed)"
        in result.stdout
    )
    report = result.report
    assert report["schema"] == 1
    assert report["totals"] == {
        "tests": 2,
        "passed": 1,
        "flaky": 1,
        "failed": 0,
        "quarantined": 0,
        "skipped": 0,
        "error": 0,
    }
    flaky = result.test("tests/test_flaky.py::test_flaky")
    assert flaky["outcome"] == "flaky"
    assert flaky["file"] == "tests/test_flaky.py"
    assert flaky["line"] == def_line
    assert [a["outcome"] for a in flaky["attempts"]] == ["failed", "passed"]
    assert flaky["attempts"][0]["message"].startswith("AssertionError: flaked")
    assert "def test_flaky" in flaky["attempts"][0]["longrepr"]
    # Attempt 2 ran only the failed test, in its own process.
    attempts = report["attempts"]
    assert len(attempts) == 2
    assert attempts[1]["selected"] == ["tests/test_flaky.py::test_flaky"]
    rerun_records = (result.report_dir / "attempts" / "2" / "results.jsonl").read_text()
    ran = [
        json.loads(line)["id"] for line in rerun_records.splitlines() if '"kind": "test"' in line
    ]
    assert ran == ["tests/test_flaky.py::test_flaky"]
    assert (result.report_dir / "rerun-report.txt").read_text() == (
        "tests/test_flaky.py::test_flaky: 2 runs, 1 failures\n"
    )
    assert (result.report_dir / "attempts" / "1" / "output.log").exists()
    assert "1 passed, 0 failed, 0 skipped, 1 flaky" in result.stdout.splitlines()[-1]


def test_flaky_junit_carries_flaky_failure(project: Project) -> None:
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    result = project.run()
    assert result.returncode == 0, result.stdout + result.stderr
    root = ET.parse(result.report_dir / "junit.xml").getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == 1
    # One failed attempt, then a pass: one flakyFailure, and no failure nor error.
    failures = [c.tag for c in cases[0] if c.tag.endswith(("ailure", "rror"))]
    assert failures == ["flakyFailure"]


def test_hard_failure_fails_every_attempt(project: Project) -> None:
    project.write("tests/test_bad.py", "def test_bad():\n    assert 1 == 2\n")
    result = project.run("--reruns", "3")
    assert result.returncode == 1
    test = result.test("tests/test_bad.py::test_bad")
    assert test["outcome"] == "failed"
    assert [a["outcome"] for a in test["attempts"]] == ["failed"] * 4
    assert "FLAKY-TEST-DETECTED" not in result.stdout
    case = ET.parse(result.report_dir / "junit.xml").getroot().find(".//testcase")
    assert case is not None
    assert [child.tag for child in case if child.tag.endswith(("ailure", "rror"))] == [
        "failure",
        "rerunFailure",
        "rerunFailure",
        "rerunFailure",
    ]


def test_fail_on_flaky_turns_a_flake_red(project: Project) -> None:
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    result = project.run("--fail-on-flaky")
    assert result.returncode == 1
    assert result.outcomes == {"tests/test_flaky.py::test_flaky": "flaky"}


def test_zero_reruns_reports_failure(project: Project) -> None:
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    result = project.run("--reruns", "0")
    assert result.returncode == 1
    assert result.outcomes == {"tests/test_flaky.py::test_flaky": "failed"}
    assert len(result.report["attempts"]) == 1


def test_too_many_failures_is_a_real_break(project: Project) -> None:
    project.write(
        "tests/test_many.py",
        """
        import pytest

        @pytest.mark.parametrize("n", range(3))
        def test_broken(n):
            assert False
        """,
    )
    result = project.run("--max-failures", "2")
    assert result.returncode == 1
    report = result.report
    assert report["cutoff"] is True
    assert len(report["attempts"]) == 1
    assert "more than --max-failures 2" in result.stdout
    assert result.outcomes == {f"tests/test_many.py::test_broken[{n}]": "failed" for n in range(3)}
    # At the limit itself, reruns still happen.
    again = project.run("--max-failures", "3", report_dir="report2")
    assert again.report["cutoff"] is False
    assert len(again.report["attempts"]) == 3


def test_teardown_failure_is_not_a_pass(project: Project) -> None:
    project.write(
        "tests/test_td.py",
        """
        import pytest

        @pytest.fixture
        def resource():
            yield
            raise RuntimeError("teardown broke")

        def test_uses_resource(resource):
            pass
        """,
    )
    result = project.run("--reruns", "1")
    assert result.returncode == 1
    test = result.test("tests/test_td.py::test_uses_resource")
    assert test["outcome"] == "error"
    assert test["attempts"][0]["phase"] == "teardown"
    assert "teardown broke" in test["attempts"][0]["message"]


def test_setup_error_is_an_error(project: Project) -> None:
    project.write(
        "tests/test_setup.py",
        """
        import pytest

        @pytest.fixture
        def broken():
            raise OSError("no database")

        def test_needs_db(broken):
            pass
        """,
    )
    result = project.run("--reruns", "1")
    assert result.returncode == 1
    test = result.test("tests/test_setup.py::test_needs_db")
    assert test["outcome"] == "error"
    assert test["attempts"][0]["phase"] == "setup"
    case = ET.parse(result.report_dir / "junit.xml").getroot().find(".//testcase")
    assert case is not None
    assert [c.tag for c in case if c.tag.endswith("rror")] == ["error", "rerunError"]


def test_skips_and_xfail_are_not_rerun(project: Project) -> None:
    project.write(
        "tests/test_skip.py",
        """
        import pytest

        @pytest.mark.skip(reason="not today")
        def test_skipped():
            pass

        @pytest.mark.xfail(reason="known bug")
        def test_xfail():
            assert False
        """,
    )
    result = project.run()
    assert result.returncode == 0
    assert result.outcomes == {
        "tests/test_skip.py::test_skipped": "skipped",
        "tests/test_skip.py::test_xfail": "skipped",
    }
    assert len(result.report["attempts"]) == 1
    skipped = result.test("tests/test_skip.py::test_skipped")
    assert skipped["attempts"][0]["message"] == "Skipped: not today"


HOSTILE_PARAMS = ["a::b", "with space", "quote'\"s", "brä[ck]et", "semi;colon", "x/y"]


def test_hostile_parametrized_ids_rerun_exactly(project: Project) -> None:
    project.write(
        "tests/test_hostile.py",
        f"""
        import pytest
        from pathlib import Path

        PARAMS = {HOSTILE_PARAMS!r}

        @pytest.mark.parametrize("param", PARAMS)
        def test_flaky_param(param, request):
            marker = Path(__file__).parent / (".seen-" + str(PARAMS.index(param)))
            if not marker.exists():
                marker.write_text("x")
                assert False, "first time fails"

        @pytest.mark.parametrize("param", PARAMS)
        def test_stable_param(param):
            pass
        """,
    )
    result = project.run()
    assert result.returncode == 0, result.stdout + result.stderr
    flaky = {tid for tid, outcome in result.outcomes.items() if outcome == "flaky"}
    # pytest's own ids: non-ASCII is escaped, everything else (even "::") kept as given.
    shown = [p.replace("\u00e4", "\\xe4") for p in HOSTILE_PARAMS]
    assert flaky == {f"tests/test_hostile.py::test_flaky_param[{p}]" for p in shown}
    assert result.outcomes == {
        **{tid: "flaky" for tid in flaky},
        **{f"tests/test_hostile.py::test_stable_param[{p}]": "passed" for p in shown},
    }
    rerun = result.report["attempts"][1]
    assert set(rerun["selected"]) == flaky
    records = (result.report_dir / "attempts" / "2" / "results.jsonl").read_text("utf-8")
    ran = {json.loads(line)["id"] for line in records.splitlines() if '"kind": "test"' in line}
    assert ran == flaky  # the stable siblings were not rerun


def test_reruns_replace_selection_and_keep_options(project: Project) -> None:
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    project.write("tests/test_other.py", "def test_other():\n    pass\n")
    project.write("tests/test_skipped_by_k.py", "def test_never():\n    assert False\n")
    command = [*PYTEST, "-k", "flaky or other", "-o", "console_output_style=classic", "tests"]
    result = project.run(command=command)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes == {
        "tests/test_flaky.py::test_flaky": "flaky",
        "tests/test_other.py::test_other": "passed",
    }
    rerun_command = result.report["attempts"][1]["command"]
    assert "-k" not in rerun_command
    assert "tests" not in rerun_command
    assert rerun_command[-1] == str(project.root / "tests" / "test_flaky.py")
    assert "-o" in rerun_command
    assert "console_output_style=classic" in rerun_command
    assert f"--rootdir={project.root}" in rerun_command


def test_run_from_a_subdirectory(project: Project) -> None:
    project.write("tests/unit/test_flaky.py", flaky_module("flaky"))
    result = project.run(cwd=project.root / "tests" / "unit")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes == {"tests/unit/test_flaky.py::test_flaky": "flaky"}
    assert result.report["rootdir"] == str(project.root)


def test_xdist_reruns(project: Project) -> None:
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    for n in range(6):
        project.write(f"tests/test_ok{n}.py", "def test_ok():\n    pass\n")
    result = project.run(command=[*PYTEST, "-n", "2"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.report["totals"]["tests"] == 7
    assert result.outcomes["tests/test_flaky.py::test_flaky"] == "flaky"
    rerun = result.report["attempts"][1]["command"]
    assert rerun[rerun.index("-n") + 1] == "2"
    records = (result.report_dir / "attempts" / "1" / "results.jsonl").read_text()
    workers = {json.loads(line)["worker"] for line in records.splitlines() if '"test"' in line}
    # 7 tests on 2 workers: xdist's load scheduler sends each worker 2 tests up front.
    assert workers == {"gw0", "gw1"}


def test_pytest_script_command(project: Project, tmp_path: Path) -> None:
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    script = str(pytest_script(tmp_path / "bin"))
    result = project.run(command=[script])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes == {"tests/test_flaky.py::test_flaky": "flaky"}


def test_wrapped_command_still_selects_exactly(project: Project) -> None:
    """A command that is not recognisably pytest is rerun as given; the plugin selects."""
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    project.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    wrapper = project.write("run-tests.sh", f'exec "{PYTHON}" -m pytest "$@"\n')
    result = project.run(command=["bash", str(wrapper)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes["tests/test_flaky.py::test_flaky"] == "flaky"
    records = (result.report_dir / "attempts" / "2" / "results.jsonl").read_text()
    ran = [json.loads(line)["id"] for line in records.splitlines() if '"kind": "test"' in line]
    assert ran == ["tests/test_flaky.py::test_flaky"]


# --- exit codes and bad input -------------------------------------------------


def test_unknown_option_is_a_usage_error(project: Project) -> None:
    done = subprocess.run(
        [PYTHON, "-m", "flakewarden", "run", "--no-such-option", "--", *PYTEST],
        cwd=project.root,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 4
    assert "unrecognized arguments: --no-such-option" in done.stderr


def test_empty_command_is_a_usage_error(project: Project) -> None:
    done = subprocess.run(
        [PYTHON, "-m", "flakewarden", "run"], cwd=project.root, capture_output=True, text=True
    )
    assert done.returncode == 4
    assert done.stderr.strip().splitlines()[-1].startswith("flakewarden: error: no test command")


def test_command_not_found(project: Project) -> None:
    result = project.run(command=["no-such-pytest-binary"])
    assert result.returncode == 4
    assert "command not found: no-such-pytest-binary" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_collection_error(project: Project) -> None:
    project.write("tests/test_broken.py", "import no_such_module_anywhere\n")
    result = project.run()
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert "collection error in tests/test_broken.py" in last
    assert "no_such_module_anywhere" in last
    attempts = result.report["attempts"]
    assert len(attempts) == 1  # collection errors are not rerun
    assert attempts[0]["collection_errors"] == [
        "tests/test_broken.py: ModuleNotFoundError: No module named 'no_such_module_anywhere'"
    ]


def test_no_tests_collected(project: Project) -> None:
    project.write("tests/test_empty.py", "X = 1\n")
    result = project.run()
    assert result.returncode == 5
    assert "no tests were collected" in result.stderr
    assert result.report["exit_code"] == 5


def test_pytest_usage_error(project: Project) -> None:
    project.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    result = project.run(command=[*PYTEST, "--no-such-pytest-option"])
    assert result.returncode == 4
    last = result.stderr.strip().splitlines()[-1]
    assert "usage error" in last
    assert "unrecognized arguments: --no-such-pytest-option" in last


def test_not_a_pytest_command(project: Project) -> None:
    result = project.run(command=[PYTHON, "-c", "print('hello')"])
    assert result.returncode == 3
    assert "is it a pytest command?" in result.stderr


def test_sigterm_stops_the_group_and_writes_the_report(project: Project) -> None:
    pid_file = project.root / "child.pid"
    project.write("tests/test_a_fast.py", "def test_fast():\n    pass\n")
    project.write(
        "tests/test_b_slow.py",
        f"""
        import os, time
        from pathlib import Path

        def test_slow():
            Path({str(pid_file)!r}).write_text(str(os.getpid()))
            time.sleep(120)
        """,
    )
    report_dir = project.root / "report"
    runner = project.start()
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pid_file.exists(), "the slow test never started"
    time.sleep(0.2)
    runner.send_signal(signal.SIGTERM)
    out, err = runner.communicate(timeout=60)
    assert runner.returncode == 2, out + err
    report = json.loads((report_dir / "report.json").read_text())
    assert report["interrupted"] is True
    # The finished test is kept; the one the signal stopped has no outcome to report.
    assert {t["id"]: t["outcome"] for t in report["tests"]} == {
        "tests/test_a_fast.py::test_fast": "passed"
    }
    child = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        for _ in range(100):
            os.kill(child, 0)
            time.sleep(0.05)


# --- coverage -------------------------------------------------------------------

COVERED_PACKAGE = """
def used(x):
    if x > 0:
        return "positive"
    return "other"


def only_in_flaky():
    total = 0
    for i in range(3):
        total += i
    return total


def never():
    return 1
"""


def _coverage_project(project: Project, fail_times: int) -> None:
    project.write("pkg/__init__.py", "")
    project.write("pkg/mod.py", COVERED_PACKAGE)
    project.write(
        "tests/test_cov.py",
        """
        from pkg.mod import used

        def test_used():
            assert used(1) == "positive"
        """,
    )
    project.write(
        "tests/test_flaky.py",
        flaky_module("flaky", fail_times).replace(
            "def test_flaky():\n",
            "def test_flaky():\n    from pkg.mod import only_in_flaky\n    only_in_flaky()\n",
        ),
    )
    project.write(
        "pytest.ini",
        """
        [pytest]
        addopts = -p no:randomly -p no:cacheprovider
        pythonpath = .
        """,
    )
    project.write(".coveragerc", "[run]\nsource = pkg\n")


@pytest.mark.parametrize("mode", ["pytest-cov", "coverage-run"])
def test_rerun_merged_coverage_equals_in_process_total(project: Project, mode: str) -> None:
    _coverage_project(project, fail_times=0)
    args: tuple[str, ...] = ("--coverage",) if mode == "coverage-run" else ()
    command = PYTEST if mode == "coverage-run" else [*PYTEST, "--cov"]
    green = project.run(*args, command=command, report_dir="green")
    assert green.returncode == 0, green.stdout + green.stderr
    assert green.outcomes["tests/test_flaky.py::test_flaky"] == "passed"
    in_process = green.report["coverage"]["percent"]

    (project.root / "tests" / ".counter-flaky").unlink()
    _coverage_project(project, fail_times=1)
    flaky = project.run(*args, command=command, report_dir="flaky")
    assert flaky.returncode == 0, flaky.stdout + flaky.stderr
    assert flaky.outcomes["tests/test_flaky.py::test_flaky"] == "flaky"
    merged = flaky.report["coverage"]
    assert merged["percent"] == in_process
    assert merged["files_combined"] == 2  # attempt 1's data file and the rerun's
    assert (flaky.report_dir / ".coverage").exists()
    assert (flaky.report_dir / "coverage.xml").exists()
    # Each attempt kept its own data file: the evidence is not overwritten.
    for number in ("1", "2"):
        assert any(
            p.name.startswith(".coverage")
            for p in (flaky.report_dir / "attempts" / number).iterdir()
        )
    # 9 of 11 statements at coverage.py's default precision 0: what `coverage report` prints.
    assert in_process == 900 / 11
    assert merged["precision"] == 0
    assert merged["percent_display"] == "82"
    assert "coverage 82% (merged over every attempt)" in flaky.stdout


def test_coverage_is_shown_with_the_projects_precision_everywhere(
    project: Project, tmp_path: Path
) -> None:
    _coverage_project(project, fail_times=1)
    project.write(".coveragerc", "[run]\nsource = pkg\n[report]\nprecision = 2\n")
    outputs, summary = tmp_path / "outputs", tmp_path / "summary"
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_WORKSPACE": str(project.root),
    }
    # 81.818...% at two decimals is 81.82: it meets a threshold of 81.82, as coverage.py says.
    result = project.run("--cov-fail-under", "81.82", command=[*PYTEST, "--cov"], env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    coverage = result.report["coverage"]
    assert coverage["percent"] == 900 / 11
    assert (coverage["precision"], coverage["percent_display"]) == (2, "81.82")
    assert "coverage 81.82% (merged over every attempt)" in result.stdout
    shown = "Coverage: **81.82%** (meets the 81.82% threshold)"
    assert shown in (result.report_dir / "summary.md").read_text()
    assert read_output_file(outputs)["coverage"] == "81.82"

    # At precision 0 the total shows as 82, yet coverage.py judges a threshold of 81.9 at the
    # threshold's own digits: 81.8 is below it, and the message says so in those digits.
    project.write(".coveragerc", "[run]\nsource = pkg\n")
    strict = project.run("--cov-fail-under", "81.9", command=[*PYTEST, "--cov"], report_dir="r2")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert strict.report["coverage"]["percent_display"] == "82"
    assert (
        "coverage 82% (merged over every attempt), below --cov-fail-under 81.9: "
        "total of 81.8 is less than fail-under=81.9"
    ) in strict.stdout

    # pytest-cov's --cov-precision overrides [report] precision, for its report and for ours.
    command = [*PYTEST, "--cov", "--cov-precision", "3", "--cov-precision=1"]
    tenths = project.run(command=command, report_dir="r3")
    assert tenths.returncode == 0, tenths.stdout + tenths.stderr
    assert tenths.report["coverage"]["percent_display"] == "81.8"
    assert "coverage 81.8% (merged over every attempt)" in tenths.stdout


def test_cov_fail_under_applies_to_the_merged_total(project: Project) -> None:
    _coverage_project(project, fail_times=1)
    # pkg/mod.py has 11 statements; the whole run misses only used()'s "other" branch and
    # never()'s body: 9 of 11, above 80.
    command = [*PYTEST, "--cov", "--cov-fail-under=80"]
    result = project.run(command=command)
    assert result.returncode == 0, result.stdout + result.stderr
    coverage = result.report["coverage"]
    assert coverage["fail_under"] == 80
    assert coverage["percent"] == 900 / 11
    # The rerun alone covers less than the threshold and was not held to it.
    for attempt in result.report["attempts"]:
        thresholds = [a for a in attempt["command"] if a.startswith("--cov-fail-under")]
        assert thresholds == ["--cov-fail-under=0"]

    strict = project.run("--cov-fail-under", "99", command=[*PYTEST, "--cov"], report_dir="r2")
    assert strict.returncode == 1
    assert "below --cov-fail-under 99" in strict.stdout


@pytest.mark.parametrize("how", ["coverage-run", "pytest-cov"])
def test_a_rerun_that_touches_no_measured_code_is_no_coverage_error(
    project: Project, how: str
) -> None:
    # The flaky test never imports app: its rerun's data file measures nothing, as it should.
    project.write(".coveragerc", "[run]\nsource = app\n")
    project.write("app.py", "def f():\n    return 1\n")
    project.write("tests/test_app.py", "import app\n\n\ndef test_f():\n    assert app.f() == 1\n")
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    args, command = (("--coverage",), None) if how == "coverage-run" else ((), [*PYTEST, "--cov"])
    result = project.run(*args, command=command)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes["tests/test_flaky.py::test_flaky"] == "flaky"
    coverage = result.report["coverage"]
    assert (coverage["errors"], coverage["percent"], coverage["files_combined"]) == ([], 100.0, 1)
    # Attempt 1 measuring nothing is still a misconfiguration, named.
    project.write(".coveragerc", "[run]\nsource = not_here\n")
    wrong = project.run(*args, command=command, report_dir="r2")
    assert wrong.returncode == 3
    assert any(
        "attempts/1/.coverage measures no file" in e for e in wrong.report["coverage"]["errors"]
    )


def test_corrupt_coverage_data_is_named_and_report_written(project: Project) -> None:
    _coverage_project(project, fail_times=0)
    project.write(
        "tests/test_corrupt.py",
        """
        import os
        from pathlib import Path

        def test_leaves_garbage():
            data = Path(os.environ["COVERAGE_FILE"])
            (data.parent / ".coverage.garbage").write_bytes(b"SQLite format 3\\x00 truncated")
        """,
    )
    result = project.run(command=[*PYTEST, "--cov"])
    assert result.returncode == 3
    assert ".coverage.garbage" in result.stderr
    report = result.report
    # The good data is still combined: the 9 of 11 statements the two other tests reach.
    assert report["coverage"]["percent"] == 900 / 11
    # One error, for that file alone; what follows the colon is coverage.py's own wording.
    [error] = report["coverage"]["errors"]
    assert error.startswith(
        "coverage data file report/attempts/1/.coverage.garbage is truncated or corrupt: "
    ), error
    assert report["totals"]["passed"] == 3


def test_demo_project_runs(tmp_path: Path) -> None:
    """The demo the README points newcomers at: one flake, partial coverage, green."""
    demo = Path(__file__).parents[2] / "examples" / "demo"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "COVERAGE_FILE")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "flakewarden",
            "run",
            "--coverage",
            "--report-dir",
            str(tmp_path / "report"),
            "--",
            *PYTEST,
            "-p",
            "no:randomly",
        ],
        cwd=demo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FLAKY-TEST-DETECTED: tests/test_flaky.py::test_sometimes_fails" in done.stdout
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    # demo/calc.py has 10 statements (its docstring is none); the tests never raise nor
    # call mean(): the 2 raises, mean()'s check and its return are missed, 6 of 10 run.
    assert report["coverage"]["percent"] == 60.0
    broken = subprocess.run(
        [
            sys.executable,
            "-m",
            "flakewarden",
            "run",
            "--report-dir",
            str(tmp_path / "broken"),
            "--",
            *PYTEST,
            "-p",
            "no:randomly",
        ],
        cwd=demo,
        env={**env, "DEMO_BREAK": "1"},
        capture_output=True,
        text=True,
    )
    assert broken.returncode == 1
    outcomes = {
        t["id"]: t["outcome"]
        for t in json.loads((tmp_path / "broken" / "report.json").read_text())["tests"]
    }
    assert outcomes["tests/test_breakable.py::test_divide_by_two"] == "failed"


def test_test_output_cannot_emit_workflow_commands(project: Project, tmp_path: Path) -> None:
    project.write(
        "tests/test_hostile_output.py",
        """
        def test_prints_commands():
            print("::stop-commands::mine")
            print("::error file=x.py,line=1::pwned")
            print("::add-mask::secret")
        """,
    )
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    outputs = tmp_path / "outputs"
    summary = tmp_path / "summary"
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_WORKSPACE": str(project.root),
    }
    # The fixture strips GITHUB_* from the suite's own environment; add these back.
    result = project.run(command=[*PYTEST, "-s"], env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "::error file=x.py,line=1::pwned" in result.stdout  # it was printed, as data
    commands = parse_commands(result.stdout)
    assert [name for name, _, _ in commands] == ["warning"], commands
    assert commands[0][1]["title"] == "Flaky test: tests/test_flaky.py::test_flaky"
    assert re.search(r"^flaky<<(\S+)\n1\n\1$", outputs.read_text(), re.MULTILINE)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--reruns", "-1"], "argument --reruns: expected 0 or more, got -1"),
        (["run", "--max-failures", "many"], "expected a whole number, got 'many'"),
        (["run", "--cov-fail-under", "101"], "expected 0 or more and at most 100, got 101"),
        (["run", "--cov-fail-under", "nan"], "expected 0 or more and at most 100, got nan"),
        (["stress", "t.py::x", "--runs", "0"], "argument --runs: expected 1 or more, got 0"),
        (["stress", "t.py::x", "--budget-seconds", "0"], "expected more than 0, got 0"),
    ],
)
def test_bad_option_values_are_usage_errors(
    project: Project, args: list[str], message: str
) -> None:
    done = subprocess.run(
        [PYTHON, "-m", "flakewarden", *args, "--", *PYTEST],
        cwd=project.root,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 4
    assert done.stderr.strip().splitlines()[-1].endswith(message), done.stderr


@pytest.mark.parametrize("xdist", [False, True])
def test_a_pytest_run_inside_a_test_is_not_recorded(project: Project, xdist: bool) -> None:
    """Plugin suites run pytest in a subprocess; that inner session is not ours."""
    inner_tests = (
        "def test_inner_fails():\n    assert False\n\ndef test_inner_passes():\n    pass\n"
    )
    inner = make_project(
        project.root.parent / f"inner-{xdist}", {"test_inner.py": inner_tests}, ini=ISOLATED_INI
    )
    project.write(
        "tests/test_outer.py",
        f"""
        import subprocess, sys

        def test_runs_inner_suite():
            done = subprocess.run(
                [sys.executable, "-m", "pytest", {str(inner)!r}],
                cwd={str(inner)!r}, capture_output=True, text=True,
            )
            # The inner session ran both of its tests, unfiltered by our selection.
            assert "1 failed, 1 passed" in done.stdout, done.stdout
        """,
    )
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    command = [*PYTEST, "-n", "2"] if xdist else PYTEST
    result = project.run(command=command)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes == {
        "tests/test_outer.py::test_runs_inner_suite": "passed",
        "tests/test_flaky.py::test_flaky": "flaky",
    }
    assert result.report["rootdir"] == str(project.root)
    assert result.report["problems"] == []


@pytest.mark.parametrize("where", ["command", "addopts"])
def test_a_session_stopped_early_is_never_green(project: Project, where: str) -> None:
    """-x stops at the first failure; rerunning that one test must not hide the rest."""
    project.write("tests/test_a_flaky.py", flaky_module("flaky"))
    project.write("tests/test_b_never.py", "def test_b():\n    pass\n\ndef test_c():\n    pass\n")
    if where == "addopts":
        project.write("pytest.ini", "[pytest]\naddopts = -p no:randomly -p no:cacheprovider -x\n")
        command = PYTEST
    else:
        command = [*PYTEST, "-x"]
    result = project.run(command=command)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.outcomes == {"tests/test_a_flaky.py::test_flaky": "flaky"}
    # Attempt 1 ran test_flaky alone; test_b and test_c are the 2 it never reached.
    assert result.report["problems"] == [
        "attempt 1: pytest stopped after 1 of 3 tests (-x, --maxfail, or a test that stopped "
        "the session?): 2 never ran, so the run cannot be green"
    ]
    assert "2 never ran" in result.stderr


def test_collection_errors_with_continue_are_not_green(project: Project) -> None:
    project.write("tests/test_broken.py", "import no_such_module_anywhere\n")
    project.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    result = project.run(command=[*PYTEST, "--continue-on-collection-errors"])
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.outcomes == {"tests/test_ok.py::test_ok": "passed"}
    assert result.report["attempts"][0]["collection_errors"] == [
        "tests/test_broken.py: ModuleNotFoundError: No module named 'no_such_module_anywhere'"
    ]


HOSTILE_COLLECTOR = """
import pytest
from pathlib import Path


class FlakyItem(pytest.Item):
    def runtest(self):
        marker = Path(__file__).parent / ".seen"
        if not marker.exists():
            marker.write_text("x")
            raise AssertionError("first\\n::error::INJECTED-MESSAGE")

    def reportinfo(self):
        return self.path, 0, self.name


class HostileFile(pytest.File):
    def collect(self):
        yield FlakyItem.from_parent(self, name="x\\n::error file=a.py::INJECTED-ID")


def pytest_collect_file(parent, file_path):
    if file_path.suffix == ".hostile":
        return HostileFile.from_parent(parent, path=file_path)
"""


def test_a_test_id_with_a_line_break_cannot_emit_a_workflow_command(
    project: Project, tmp_path: Path
) -> None:
    project.write("tests/conftest.py", HOSTILE_COLLECTOR)
    project.write("tests/case.hostile", "")
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(tmp_path / "out"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
        "GITHUB_WORKSPACE": str(project.root),
    }
    result = project.run("-q", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    [(test_id, outcome)] = result.outcomes.items()
    assert test_id == "tests/case.hostile::x\n::error file=a.py::INJECTED-ID"  # data kept exact
    assert outcome == "flaky"
    assert "FLAKY-TEST-DETECTED: tests/case.hostile::x\\n::error file=a.py::INJECTED-ID" in (
        result.stdout
    )
    for stream in (result.stdout, result.stderr):
        commands = parse_commands(stream)
        assert not [c for c in commands if c[0] == "error"], commands
    [warning] = parse_commands(result.stdout)
    assert warning[0] == "warning"
    assert warning[1]["title"] == f"Flaky test: {test_id}"  # escaped, not split


def test_report_dir_never_deletes_what_flakewarden_did_not_write(project: Project) -> None:
    project.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    keep = project.write("attempts/important.txt", "user data")
    result = project.run(report_dir=".")
    assert result.returncode == 4
    assert "already holds attempts that flakewarden did not write" in result.stderr
    assert keep.read_text() == "user data"
    # An empty or new directory is fine, and a second run replaces the first one's report.
    first = project.run(report_dir="out")
    assert first.returncode == 0
    stale = first.report_dir / "attempts" / "9"
    stale.mkdir()
    second = project.run(report_dir="out")
    assert second.returncode == 0
    assert not stale.exists()
    assert (second.report_dir / ".flakewarden-report").exists()


def test_run_exits_at_once_yet_runs_exit_handlers_and_flushes_its_output(
    project: Project, tmp_path: Path
) -> None:
    """``entry`` skips the interpreter's teardown after ``run``; nothing it owes is lost."""
    project.write("tests/test_bad.py", "def test_bad():\n    assert 1 == 2\n")
    marker = tmp_path / "atexit-ran"
    code = (
        "import atexit, pathlib\n"
        f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'ran')\n"
        "from flakewarden.cli import entry\n"
        "entry()\n"
    )
    env = project.env()
    env.pop("PYTHONUNBUFFERED", None)  # a pipe: stdout is block-buffered until flushed
    done = subprocess.run(
        [PYTHON, "-c", code, "run", "--report-dir", "report", "--reruns", "0", "--", *PYTEST],
        cwd=project.root,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert marker.read_text() == "ran"
    assert done.stdout.splitlines()[-1].startswith("flakewarden: 0 passed, 1 failed")
    report = json.loads((project.root / "report" / "report.json").read_text(encoding="utf-8"))
    assert report["totals"]["failed"] == 1
    # A usage error exits the same way, its one line flushed and its code kept.
    marker.unlink()
    usage = subprocess.run(
        [PYTHON, "-c", code, "run"], cwd=project.root, env=env, capture_output=True, text=True
    )
    assert usage.returncode == 4
    assert usage.stderr.endswith("put it after --, e.g. flakewarden run -- python -m pytest\n")
    assert marker.read_text() == "ran"
