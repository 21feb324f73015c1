"""flakewarden against plain pytest and coverage.py on real projects from PyPI (the CI subset).

The sources are downloaded at run time at pinned versions (``benchmarks/realworld``);
CI reaches PyPI, so a failed download fails these tests rather than skipping them.
The full corpus, with more projects and shapes, is ``python benchmarks/realworld/corpus.py``.
"""

from __future__ import annotations

import fcntl
import functools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks" / "realworld"))

import corpus_counts
import corpus_scenarios
import sdist
from corpus_projects import PROJECTS

pytestmark = pytest.mark.realworld

SUBSET = [p for p in PROJECTS if p.ci]
# Venvs are kept between runs (keyed by their requirements) so CI stays within its budget;
# FLAKEWARDEN_CORPUS_CACHE moves them and the downloaded sources elsewhere.
WORK = sdist.DEFAULT_CACHE / "test-work"


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    """The shared work directory, held by one test session at a time (by module)."""
    WORK.mkdir(parents=True, exist_ok=True)
    with open(WORK / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield WORK


BY_NAME = {p.name: p for p in SUBSET}


def running(scenario: str) -> list[Any]:
    """The subset's projects CI runs ``scenario`` on, as ``prepared``'s parameters (every
    other project is left out, not collected to be skipped)."""
    return [pytest.param(p.name, id=p.name) for p in SUBSET if scenario in p.ci]


def running_each(*scenarios: str) -> list[Any]:
    """``(project, scenario)`` for each scenario CI runs on each project of the subset."""
    return [
        pytest.param(p.name, s, id=f"{p.name}-{s}") for p in SUBSET for s in scenarios if s in p.ci
    ]


@functools.cache
def _prepare(name: str) -> corpus_scenarios.Prepared:
    return corpus_scenarios.prepare(BY_NAME[name], WORK)


@functools.cache
def _green(name: str) -> corpus_scenarios.Check:
    """The plain counts run, once per project: later checks compare against it."""
    return corpus_scenarios.counts_check(_prepare(name), "counts", ["-p", "no:randomly"])


@pytest.fixture
def prepared(request: pytest.FixtureRequest, work: Path) -> corpus_scenarios.Prepared:
    """A project of the subset (``running`` picks which), prepared once per session."""
    return _prepare(request.param)


@pytest.fixture
def green(prepared: corpus_scenarios.Prepared) -> corpus_scenarios.Check:
    return _green(prepared.project.name)


def test_pytest_summary_line_is_read_in_pytest_own_words() -> None:
    output = "\n".join(
        [
            "FAILED t.py::x",
            "= 1 failed, 197 passed, 2 skipped, 3 xfailed, 1 xpassed, 2 errors, 1 warning "
            "in 2.14s (0:00:02) =",
        ]
    )
    assert corpus_counts.summary_counts(output) == {
        "passed": 197,
        "failed": 1,
        "skipped": 2,
        "xfailed": 3,
        "xpassed": 1,
        "errors": 2,
        "warnings": 1,
    }
    assert corpus_counts.summary_counts("==== no tests ran in 0.01s ====")["passed"] == 0
    with pytest.raises(corpus_counts.NoSummary):
        corpus_counts.summary_counts("Segmentation fault")


def _assert_agrees(check: corpus_scenarios.Check) -> None:
    assert check.ok, (
        f"{check.scenario}: plain {check.plain} vs flakewarden {check.flakewarden}: {check.detail}"
    )


@pytest.mark.parametrize("prepared", running("counts"), indirect=True)
def test_counts_agree_with_pytest_summary_line(green: corpus_scenarios.Check) -> None:
    _assert_agrees(green)
    assert green.plain["passed"] > 20  # the suite really ran


@pytest.mark.parametrize("prepared", running("xdist"), indirect=True)
def test_counts_agree_under_xdist(prepared: corpus_scenarios.Prepared) -> None:
    check = corpus_scenarios.counts_check(prepared, "xdist", ["-p", "no:randomly", "-n", "2"])
    _assert_agrees(check)


@pytest.mark.parametrize("prepared", running("randomly"), indirect=True)
def test_counts_agree_under_randomly_seed(prepared: corpus_scenarios.Prepared) -> None:
    seed = f"--randomly-seed={corpus_scenarios.SEED}"
    _assert_agrees(corpus_scenarios.counts_check(prepared, "randomly", [seed]))


@pytest.mark.parametrize(
    ("prepared", "scenario"), running_each("coverage", "pytest-cov"), indirect=["prepared"]
)
def test_coverage_total_equals_coverage_py(
    prepared: corpus_scenarios.Prepared, scenario: str
) -> None:
    _assert_agrees(corpus_scenarios.coverage_check(prepared, scenario))


@pytest.mark.parametrize("prepared", running("flaky"), indirect=True)
def test_test_failing_once_is_rerun_fresh_and_flaky(
    prepared: corpus_scenarios.Prepared, green: corpus_scenarios.Check
) -> None:
    _assert_agrees(green)
    _assert_agrees(corpus_scenarios.flaky_check(prepared, prepared.work / "counts"))
