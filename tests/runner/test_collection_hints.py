"""Which flaky tests the run marks as maybe depending on what collecting other modules does."""

from __future__ import annotations

from helpers.report_builders import result

from flakewarden.model import Outcome
from flakewarden.runner.folding import mark_collection_hints

ALL = ["tests/test_a.py", "tests/test_b.py"]
OWN = ["tests/test_a.py"]


def _hinted(outcome: Outcome, files: dict[int, list[str]], failures: int = 1) -> bool:
    test = result("tests/test_a.py::test_victim", outcome, failures=failures, runs=2)
    mark_collection_hints([test], files)
    return test.collection_hint


def test_failed_with_other_modules_collected_and_passed_without_them_is_marked() -> None:
    assert _hinted(Outcome.FLAKY, {1: ALL, 2: OWN})


def test_the_same_collection_in_both_attempts_is_not_marked() -> None:
    assert not _hinted(Outcome.FLAKY, {1: OWN, 2: OWN})


def test_a_test_that_never_passed_is_not_marked() -> None:
    assert not _hinted(Outcome.FAILED, {1: ALL, 2: OWN}, failures=2)


def test_an_attempt_without_a_record_of_its_collection_marks_nothing() -> None:
    assert not _hinted(Outcome.FLAKY, {2: OWN})
