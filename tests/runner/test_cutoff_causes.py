"""The cut-off counts causes: one outage of the environment's is rerun, a broken fixture is not."""

from __future__ import annotations

from pathlib import Path

from helpers.cause_projects import storm_project
from helpers.project import ISOLATED_INI, Project, make_project


def test_thirty_tests_one_outage_and_a_flake_go_green_on_their_rerun(tmp_path: Path) -> None:
    project = storm_project(tmp_path / "p", storm=30, modules=3)
    result = project.run("-q")
    assert result.returncode == 0, result.stdout + result.stderr
    report = result.report
    assert report["cutoff"] is False and report["max_failures"] == 10
    assert report["totals"]["flaky"] == 31 and len(report["attempts"]) == 2
    assert (
        "31 tests failed, more than --max-failures 10, but 30 of them are 1 cause of the "
        "environment's (ConnectionRefusedError: [Errno N] Connection refused: could not "
        "connect to N:N) and 1 is not: one event, not a real break; rerunning them"
    ) in result.stdout


BROKEN_FIXTURE = {
    "tests/conftest.py": """
        import pytest


        @pytest.fixture
        def settings():
            raise RuntimeError("settings.toml has no [database] table")
        """,
    "tests/test_uses.py": "".join(
        f"def test_uses_{n}(settings):\n    pass\n\n\n" for n in range(12)
    ),
}


def test_many_failures_of_a_cause_that_is_not_the_environment_stay_a_real_break(
    tmp_path: Path,
) -> None:
    project = Project(make_project(tmp_path / "p", BROKEN_FIXTURE, ini=ISOLATED_INI))
    result = project.run("-q")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.report["cutoff"] is True and len(result.report["attempts"]) == 1
    assert (
        "12 tests failed, more than --max-failures 10: that is a real break, not flakiness; "
        "no reruns"
    ) in result.stdout


def test_an_outage_past_its_rerun_limit_is_not_rerun(tmp_path: Path) -> None:
    project = storm_project(tmp_path / "p", storm=12, modules=2)
    project.write(".github/flakewarden.yml", "causes:\n  environment_rerun_limit: 12\n")
    result = project.run("-q")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.report["cutoff"] is True and len(result.report["attempts"]) == 1
    assert (
        "13 tests failed, more than --max-failures 10; 12 of them the environment's, more "
        "than its rerun limit of 12 tests (causes.environment_rerun_limit): no reruns"
    ) in result.stdout


def test_an_outage_beside_more_than_max_failures_other_failures_is_a_real_break(
    tmp_path: Path,
) -> None:
    project = storm_project(tmp_path / "p", storm=12, modules=2)
    result = project.run("--max-failures", "0", "-q")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.report["cutoff"] is True
    assert "13 tests failed, more than --max-failures 0: that is a real break" in result.stdout
