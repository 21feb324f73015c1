"""Any runner's JUnit in, schema-valid JUnit out: ``flakewarden publish --junit`` on real
pytest output and on files real runners wrote; every junit.xml written validates against
Jenkins's and Surefire's schemas and reads back the same with junitparser."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.hermetic import clean_env
from helpers.project import BUMP_BY_NAME, PYTEST, PYTHON, Project
from junit_checks import assert_schema_valid, junitparser_outcomes

from flakewarden.reports.junit_read import iter_junit_cases

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "junit-samples"

SUITE = (
    """
from pathlib import Path

import pytest


@pytest.fixture
def broken_fixture():
    raise OSError("port in use")


def test_passes():
    pass


def test_fails():
    assert 1 + 1 == 3, "a real bug"


def test_flaky():
    assert bump("flaky") > 1, "lost the race"


@pytest.mark.skip(reason="needs linux 7")
def test_skipped():
    pass


def test_errors(broken_fixture):
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


@pytest.mark.parametrize("value", ["a::b", "<&>"])
def test_param(value):
    print("captured", value)
"""
    + BUMP_BY_NAME
)

OUTCOMES = {
    "test_passes": "passed",
    "test_fails": "failed",
    "test_flaky": "flaky",
    "test_skipped": "skipped",
    "test_errors": "error",
    "test_xfail": "skipped",
    "test_param[a::b]": "passed",
    "test_param[<&>]": "passed",
}


def _publish(
    project: Project, *args: str, report: str = "published"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "flakewarden", "publish", "--report-dir", report, *args],
        cwd=project.root,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _outcomes(report_dir: Path) -> dict[str, str]:
    data = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    return {t["id"]: t["outcome"] for t in data["tests"]}


def _by_name(outcomes: dict[str, str]) -> dict[str, str]:
    # The suite has no classes: what follows the first "::" is the name, parameters included.
    return {test.split("::", 1)[1]: outcome for test, outcome in outcomes.items()}


def test_flakewarden_runs_junit_is_schema_valid_and_reads_back(project: Project) -> None:
    project.write("tests/test_suite.py", SUITE)
    result = project.run("--junit-xunit1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert _by_name(result.outcomes) == OUTCOMES
    junit = result.report_dir / "junit.xml"
    assert_schema_valid(junit)
    # junitparser reads the same final results (a flaky test's flakyFailure is no failure).
    kinds = {"passed": "passed", "flaky": "passed", "failed": "failure", "error": "error"}
    kinds["skipped"] = "skipped"
    assert _by_name(junitparser_outcomes(junit)) == {
        name: kinds[outcome] for name, outcome in OUTCOMES.items()
    }
    # Our reader gives back the exact node ids, files and lines.
    read = {case.nodeid: case for case in iter_junit_cases(junit)}
    assert set(read) == set(result.outcomes)
    flaky = read["tests/test_suite.py::test_flaky"]
    line = SUITE.lstrip("\n").splitlines().index("def test_flaky():") + 1
    assert (flaky.file, flaky.line, flaky.outcome.value) == ("tests/test_suite.py", line, "flaky")
    # The xunit1 file carries pytest's attributes instead.
    xunit1 = (result.report_dir / "junit-xunit1.xml").read_text(encoding="utf-8")
    assert f'file="tests/test_suite.py" line="{line}" time=' in xunit1
    assert 'nodeid="tests/test_suite.py::test_flaky"' in xunit1


def _pytest_junitxml(project: Project, *extra: str) -> None:
    """pytest's own ``--junitxml`` of the suite, into out/pytest.xml."""
    project.write("tests/test_suite.py", SUITE)
    done = subprocess.run(
        [*PYTEST, "--junitxml=out/pytest.xml", *extra],
        cwd=project.root,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout


def test_pytests_junitxml_without_reruns_shows_one_attempt_each(project: Project) -> None:
    _pytest_junitxml(project, "-p", "no:rerunfailures")
    published = _publish(project, "--junit", "out/pytest.xml")
    assert published.returncode == 1, published.stdout + published.stderr
    # Nothing was rerun: the flaky test's one attempt failed, and that is all the file says.
    assert _by_name(_outcomes(project.root / "published")) == {**OUTCOMES, "test_flaky": "failed"}


@pytest.mark.parametrize(
    "extra", [["-p", "rerunfailures", "--reruns", "2"], ["-n", "2", "--reruns", "1"]]
)
def test_pytests_own_junitxml_gives_the_outcomes_flakewarden_run_does(
    project: Project, extra: list[str]
) -> None:
    _pytest_junitxml(project, *extra)
    published = _publish(project, "--junit", "out/*.xml")
    assert published.returncode == 1, published.stdout + published.stderr
    assert _by_name(_outcomes(project.root / "published")) == OUTCOMES
    report = json.loads((project.root / "published" / "report.json").read_text())
    fails = next(t for t in report["tests"] if t["id"] == "tests.test_suite::test_fails")
    runs = 3 if "2" in extra[-1:] else 2
    assert [a["outcome"] for a in fails["attempts"]] == ["failed"] * runs
    # The rows pytest-rerunfailures writes for a rerun are empty: said, not invented.
    assert fails["attempts"][0]["message"].startswith("failed, then rerun by the runner")
    assert fails["attempts"][-1]["message"] == "AssertionError: a real bug\nassert (1 + 1) == 3"
    assert "FLAKY-TEST-DETECTED: tests.test_suite::test_flaky" in published.stdout
    assert_schema_valid(project.root / "published" / "junit.xml")


def _sample(ids: list[str], retries: bool) -> dict[str, tuple[str, int]]:
    """What each sample's suite gives: its tests pass, fail, skip and flake (fail once, then
    pass) in that order; a runner that retries shows the failing test's 3 attempts and the
    flaky one's 2; one that keeps no trace of a retry shows one attempt each, a plain pass."""
    seen = [("passed", 1), ("failed", 3), ("skipped", 1), ("flaky", 2)]
    if not retries:
        seen = [("passed", 1), ("failed", 1), ("skipped", 1), ("passed", 1)]
    return dict(zip(ids, seen))


def _named(prefix: str, *names: str) -> list[str]:
    return [f"{prefix}{name}" for name in names]


SAMPLE_OUTCOMES = {
    "gotestsum/gotestsum-rerun.xml": _sample(
        _named("example.com/sample::Test", "Pass", "Fail", "Skip", "Flaky"), retries=True
    ),
    "maven-surefire/TEST-sample.SampleTest.xml": _sample(
        _named("sample.SampleTest::", "passes", "fails", "skipped", "flaky"), retries=True
    ),
    "pytest/pytest-rerunfailures.xml": _sample(
        _named("test_sample::test_", "pass", "fail", "skip", "flaky"), retries=True
    ),
    # jest-junit's classname and name are both "{describe} {title}": here, with no describe,
    # " fails" (the spaces are dropped).
    "jest/jest-junit.xml": _sample(
        [f"{n}::{n}" for n in ("passes", "fails", "skipped", "flaky")], retries=False
    ),
    "mocha/mocha-junit-reporter-includePending.xml": _sample(
        [f"{n}::sample {n}" for n in ("passes", "fails", "skipped", "flaky")], retries=False
    ),
    "playwright/playwright-junit.xml": _sample(
        _named("sample.spec.js::", "passes", "fails", "skipped", "flaky"), retries=False
    ),
    # node's runner has no retries: the sample has no flaky test.
    "node-test/node-test-junit.xml": _sample(
        _named("test::", "passes", "fails", "skipped"), retries=False
    ),
}


@pytest.mark.parametrize("sample", sorted(SAMPLE_OUTCOMES))
def test_a_real_runners_junit_becomes_the_report(project: Project, sample: str) -> None:
    published = _publish(project, "--junit", str(SAMPLES / sample))
    assert published.returncode == 1, published.stdout + published.stderr
    report: dict[str, Any] = json.loads((project.root / "published" / "report.json").read_text())
    assert {t["id"]: (t["outcome"], len(t["attempts"])) for t in report["tests"]} == (
        SAMPLE_OUTCOMES[sample]
    )
    assert report["problems"] == []
    assert report["junit_from"] == [str(SAMPLES / sample)]
    # The file written reads back with junitparser as the same final results.
    kind = {"passed": "passed", "flaky": "passed", "failed": "failure", "skipped": "skipped"}
    written = junitparser_outcomes(project.root / "published" / "junit.xml")
    assert sorted(written.values()) == sorted(kind[t["outcome"]] for t in report["tests"])
    summary = (project.root / "published" / "summary.md").read_text(encoding="utf-8")
    assert "Read from 1 JUnit XML file another runner wrote" in summary
    assert_schema_valid(project.root / "published" / "junit.xml")


def test_several_files_at_once_one_per_module(project: Project) -> None:
    published = _publish(project, "--junit", str(SAMPLES / "*" / "*-rerun*.xml"))
    assert published.returncode == 1, published.stderr
    outcomes = _outcomes(project.root / "published")
    assert outcomes["example.com/sample::TestFlaky"] == "flaky"
    assert outcomes["test_sample::test_flaky"] == "flaky"
    assert len(outcomes) == 8


def test_a_quarantined_failure_does_not_fail_the_exit_code(project: Project) -> None:
    quarantined = project.write("quarantined.json", '["example.com/sample::TestFail"]')
    published = _publish(
        project,
        "--junit",
        str(SAMPLES / "gotestsum" / "gotestsum-rerun.xml"),
        "--quarantined-file",
        str(quarantined),
    )
    assert published.returncode == 0, published.stdout + published.stderr
    assert _outcomes(project.root / "published")["example.com/sample::TestFail"] == "quarantined"
    assert "QUARANTINED-TEST-FAILED: example.com/sample::TestFail" in published.stdout


def test_the_reader_fixes_found_on_real_files(project: Project) -> None:
    project.write(
        "odd.xml",
        """
        <testsuite name="odd" tests="4">
          <testcase classname="c" name="disabled_one" status="disabled"/>
          <testcase classname="c" name="skipped_one" status="skipped"/>
          <testcase classname="c" name=""/>
          <testcase classname="c" name="ran"/>
        </testsuite>
        """,
    )
    project.write("empty.xml", '<testsuites><testsuite name="none" tests="0"/></testsuites>')
    published = _publish(project, "--junit", "odd.xml", "empty.xml")
    assert published.returncode == 0, published.stdout + published.stderr
    report = json.loads((project.root / "published" / "report.json").read_text())
    assert {t["id"]: t["outcome"] for t in report["tests"]} == {
        "c::disabled_one": "skipped",
        "c::skipped_one": "skipped",
        "c::(unnamed testcase 3)": "passed",
        "c::ran": "passed",
    }
    root = project.root
    assert report["problems"] == [
        f"{root / 'odd.xml'}: testcase 3 has no name; it is named by its position",
        f"{root / 'empty.xml'}: no testcase in this file",
    ]


def test_another_format_and_a_missing_file_are_one_line_errors(project: Project) -> None:
    check = _publish(project, "--junit", str(SAMPLES / "check" / "check-0.15.xml"))
    assert check.returncode == 3
    assert check.stderr.strip().splitlines() == [
        f"flakewarden: error: {SAMPLES / 'check' / 'check-0.15.xml'}: not a JUnit XML file: "
        "its root is in the namespace 'http://check.sourceforge.net/ns' and holds no "
        "<testcase> (another format's, such as the Check framework's)"
    ]
    missing = _publish(project, "--junit", "build/test-results/**/*.xml")
    assert missing.returncode == 4
    assert missing.stderr.strip().splitlines()[-1] == (
        f"flakewarden: error: no JUnit XML file matches 'build/test-results/**/*.xml' "
        f"(in {project.root})"
    )
    assert not (project.root / "published").exists()


def test_the_evaluation_script_counts_a_folder(project: Project) -> None:
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "junit_counts.py"
    done = subprocess.run(
        [sys.executable, str(script), str(SAMPLES)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == [
        "file",
        *("tests", "passed", "flaky", "failed", "error", "skipped", "attempts"),
        *("junitparser", "rows"),
    ]
    row = next(line for line in lines if line.startswith("maven-surefire/"))
    # Surefire's reruns are elements inside one testcase: junitparser counts 4 rows.
    assert row.split()[1:] == ["4", "1", "1", "1", "0", "1", "7", "4"]
    gotestsum = next(line for line in lines if line.startswith("gotestsum/"))
    # gotestsum repeats a rerun testcase: 7 rows, 4 tests.
    assert gotestsum.split()[1:] == ["4", "1", "1", "1", "0", "1", "7", "7"]
    assert lines[-1].split()[-7:] == ["27", "10", "3", "7", "0", "7", "36"]
    assert any("check/check-0.15.xml: not a JUnit XML file" in line for line in lines)


def test_issues_and_the_history_work_from_a_junit_report(
    project: Project, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from helpers.github_fixtures import checked_emulator, emulator_env

    from flakewarden.cli import main
    from flakewarden.issues.marker import read_marker

    published = _publish(project, "--junit", str(SAMPLES / "maven-surefire" / "*.xml"))
    assert published.returncode == 1, published.stderr
    (project.root / ".git").mkdir()
    monkeypatch.chdir(project.root)
    for emulator in checked_emulator():
        emulator_env(monkeypatch, emulator)
        assert main(["issues", "--report-dir", "published"]) == 0
        (issue,) = emulator.issues.values()
        assert issue["title"] == "flake: sample.SampleTest::flaky"
        assert read_marker(issue["body"])["hits"] == 1
        assert "java.lang.AssertionError: flaky: first attempt fails" in issue["body"]
    database = tmp_path / "history.sqlite"
    assert main(["history", "ingest", "--db", str(database), "published"]) == 0
    # Half of these four tests failed their first attempt: a run the history would leave
    # out as one where the suite fell over, unless told to keep every run.
    project.write(".github/flakewarden.yml", "history:\n  fell_over_share: 1\n")
    show = ["history", "show", "--db", str(database), "--json", "--branch", ""]
    shown = subprocess.run(
        [PYTHON, "-m", "flakewarden", *show],
        cwd=project.root,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    rows = {row["id"]: row for row in json.loads(shown.stdout)["tests"]}
    flaky = rows["sample.SampleTest::flaky"]
    assert (flaky["flaky_runs"], flaky["state"]) == (1, "new")  # one run: too few to score
    assert rows["sample.SampleTest::fails"]["hard_failures"] == 1
