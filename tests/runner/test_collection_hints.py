"""Which flaky tests the run marks as maybe depending on what collecting other modules does:
only those the run holds evidence for, with the evidence said."""

from __future__ import annotations

from helpers.report_builders import result

from flakewarden.model import Outcome, TestRecord, TestResult
from flakewarden.runner.folding import mark_collection_hints

ALL = ["tests/test_a.py", "tests/test_b.py"]
OWN = ["tests/test_a.py"]
VICTIM = "tests/test_a.py::test_victim"
# Attempt 1's order: the victim after a test of tests/test_b.py, or before every one.
AFTER = ["tests/test_b.py::test_b", VICTIM]
BEFORE = [VICTIM, "tests/test_b.py::test_b"]


def _marked(
    outcome: Outcome,
    files: dict[int, list[str]],
    order: list[str],
    failures: int = 1,
    message: str = "assert 1 == 2",
) -> TestResult:
    test = result(VICTIM, outcome, failures=failures, runs=2, message=message)
    records = {
        test_id: [(1, TestRecord(test_id, test_id.partition("::")[0], 1, [], index=n))]
        for n, test_id in enumerate(order)
    }
    mark_collection_hints([test], files, records)
    return test


def test_a_plain_failure_after_the_other_modules_ran_is_no_evidence() -> None:
    test = _marked(Outcome.FLAKY, {1: ALL, 2: OWN}, AFTER)
    assert not test.collection_hint and test.collection_evidence == ""


def test_failing_before_any_test_of_the_other_modules_ran_is_evidence() -> None:
    test = _marked(Outcome.FLAKY, {1: ALL, 2: OWN}, BEFORE)
    assert test.collection_hint
    assert test.collection_evidence == (
        "it failed in attempt 1 before any test of tests/test_b.py ran in its process (only "
        "their import had), and passed in a rerun that did not collect them"
    )


def test_a_failure_that_names_a_module_only_its_attempt_collected_is_evidence() -> None:
    test = _marked(
        Outcome.FLAKY, {1: ALL, 2: OWN}, AFTER, message="AttributeError: test_b patched clock"
    )
    assert test.collection_hint
    assert test.collection_evidence == (
        "its failure in attempt 1 names tests/test_b.py, a module that attempt collected and "
        "the rerun it passed in did not"
    )


def test_another_process_running_the_other_module_first_does_not_count(  # xdist's workers
) -> None:
    test = result(VICTIM, Outcome.FLAKY, failures=1, runs=2)
    other = "tests/test_b.py::test_b"
    records = {
        other: [(1, TestRecord(other, "tests/test_b.py", 1, [], index=0, worker="gw0"))],
        VICTIM: [(1, TestRecord(VICTIM, "tests/test_a.py", 1, [], index=3, worker="gw1"))],
    }
    mark_collection_hints([test], {1: ALL, 2: OWN}, records)
    assert test.collection_hint and "before any test of tests/test_b.py" in test.collection_evidence
    records[other] = [(1, TestRecord(other, "tests/test_b.py", 1, [], index=1, worker="gw1"))]
    mark_collection_hints([test], {1: ALL, 2: OWN}, records)
    assert not test.collection_hint


def test_the_same_collection_in_both_attempts_is_not_marked() -> None:
    assert not _marked(Outcome.FLAKY, {1: OWN, 2: OWN}, BEFORE).collection_hint


def test_a_test_that_never_passed_is_not_marked() -> None:
    assert not _marked(Outcome.FAILED, {1: ALL, 2: OWN}, BEFORE, failures=2).collection_hint


def test_an_attempt_without_a_record_of_its_collection_marks_nothing() -> None:
    assert not _marked(Outcome.FLAKY, {2: OWN}, BEFORE).collection_hint
