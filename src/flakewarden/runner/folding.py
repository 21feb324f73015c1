"""Folding the attempts into the run's verdict: one outcome per test and the exit code.

Kept apart from the attempt loop because it only reads what the attempts recorded: it
decides nothing about which tests run again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Optional

from flakewarden.model import (
    AttemptOutcome,
    AttemptResult,
    ExitCode,
    Outcome,
    RunReport,
    TestRecord,
    TestResult,
    id_key,
)


def fold(
    order: Sequence[str],
    records: Mapping[str, Sequence[tuple[int, TestRecord]]],
    quarantined: frozenset[str],
    early: Mapping[str, tuple[TestRecord, TestResult]] = {},
    not_rerun: Mapping[str, str] = {},
) -> list[TestResult]:
    """One ``TestResult`` per test, in run order, from every attempt's records.

    ``early`` holds tests folded while attempt 1 ran (``early_fold``), each beside the
    one record it was folded from: reused for a test whose records are still exactly
    that record, which is what folding it again would give. ``not_rerun``: why the
    rerun policy held a failed test back.
    """
    tests = []
    in_order = set(order)
    ordered = list(order) + [tid for tid in records if tid not in in_order]
    for test_id in ordered:
        runs = records.get(test_id)
        if not runs:
            continue
        known = early.get(test_id)
        if known is not None and len(runs) == 1 and runs[0][0] == 1 and runs[0][1] is known[0]:
            tests.append(known[1])
        else:
            tests.append(fold_test(test_id, runs, quarantined))
            if test_id in not_rerun:
                tests[-1].not_rerun = not_rerun[test_id]
    return tests


def fold_test(
    test_id: str, runs: Sequence[tuple[int, TestRecord]], quarantined: frozenset[str]
) -> TestResult:
    """One test's result from its records (at least one), each with its attempt's number."""
    attempts = [AttemptResult.from_record(number, record) for number, record in runs]
    last = attempts[-1].outcome
    failed_any = any(a.outcome.is_failure for a in attempts)
    if last.is_failure:
        outcome = Outcome.ERROR if last == AttemptOutcome.ERROR else Outcome.FAILED
        if test_id in quarantined or id_key(test_id) in quarantined:
            outcome = Outcome.QUARANTINED
    elif failed_any:
        outcome = Outcome.FLAKY
    elif last == AttemptOutcome.SKIPPED:
        outcome = Outcome.SKIPPED
    else:
        outcome = Outcome.PASSED
    first_record = runs[0][1]
    return TestResult(
        id=test_id,
        file=first_record.file,
        line=first_record.line,
        outcome=outcome,
        attempts=attempts,
    )


def mark_collection_hints(
    tests: Sequence[TestResult],
    files: Mapping[int, Sequence[str]],
    records: Mapping[str, Sequence[tuple[int, TestRecord]]] = {},
) -> None:
    """Mark a flaky test that failed where other modules were collected and passed without
    them, when the run holds evidence that their collection mattered (``collection_evidence``).

    pytest imports every collected module before any test runs, so a module that changes
    shared state at import fails its victim only in an attempt that collected it; a rerun
    collects only the failed tests' files. But every flaky test of a suite of many modules
    failed where more were collected than in its rerun: that alone is no evidence. It is
    when the failure names such a module, or when it failed before any test of those
    modules ran in its process (only their import can have touched it). ``files``: each
    attempt's collected modules; ``records``: each test's records, by attempt.
    """
    place: dict[str, tuple[str, int]] = {}  # attempt 1: the test's process and its position
    first_ran: dict[tuple[str, str], int] = {}  # (process, module) -> its first test's position
    for test_id, found in records.items():
        for number, record in found:
            if number == 1:
                place.setdefault(test_id, (record.worker, record.index))
                key = (record.worker, test_id.partition("::")[0])
                first_ran[key] = min(first_ran.get(key, record.index), record.index)
    for test in tests:
        test.collection_hint, test.collection_evidence = False, ""
        if test.outcome != Outcome.FLAKY:
            continue
        passed = [a.attempt for a in test.attempts if a.outcome == AttemptOutcome.PASSED]
        for attempt in test.attempts:
            f = attempt.attempt
            if not attempt.outcome.is_failure or f not in files:
                continue
            for p in passed:
                if p <= f or p not in files:
                    continue
                extra = sorted(set(files[f]) - set(files[p]) - {test.file})
                at = place.get(test.id) if f == 1 else None
                evidence = collection_evidence(attempt.longrepr, f, extra, at, first_ran)
                if evidence:
                    test.collection_hint, test.collection_evidence = True, evidence
                    break
            if test.collection_hint:
                break


def collection_evidence(
    longrepr: str,
    attempt: int,
    extra: Sequence[str],
    at: Optional[tuple[str, int]],
    first_ran: Mapping[tuple[str, str], int],
) -> str:
    """Why a failure may depend on collecting ``extra`` (modules its failing ``attempt``
    collected and its passing rerun did not), or "" when the run shows nothing for it."""
    if not extra:
        return ""
    for module in extra:
        stem = module.replace("\\", "/").rpartition("/")[2].removesuffix(".py")
        if module in longrepr or (stem and re.search(rf"\b{re.escape(stem)}\b", longrepr)):
            return (
                f"its failure in attempt {attempt} names {module}, a module that attempt "
                "collected and the rerun it passed in did not"
            )
    if at is not None and all(first_ran.get((at[0], m), at[1] + 1) > at[1] for m in extra):
        shown = ", ".join(extra[:3]) + (f" and {len(extra) - 3} more" if len(extra) > 3 else "")
        return (
            f"it failed in attempt 1 before any test of {shown} ran in its process (only "
            "their import had), and passed in a rerun that did not collect them"
        )
    return ""


def exit_code(
    report: RunReport,
    *,
    ended_with: Optional[int],
    not_green: bool,
    fail_on_flaky: bool,
    forgiven: frozenset[str] = frozenset(),
) -> int:
    """The run's exit code: ``ended_with`` when the loop ended the run, else from the totals.

    A failed test in ``forgiven`` (blame's ``ignore-in-gate``) does not fail the run.
    """
    if ended_with is not None:
        return int(ended_with)
    totals = report.totals
    failing = sum(
        1
        for test in report.tests
        if test.outcome in (Outcome.FAILED, Outcome.ERROR) and test.id not in forgiven
    )
    if failing or not_green:
        return ExitCode.TESTS_FAILED
    if fail_on_flaky and totals.flaky:
        return ExitCode.TESTS_FAILED
    if report.coverage is not None:
        if report.coverage.errors:
            return ExitCode.INTERNAL_ERROR
        if report.coverage.below_threshold:
            return ExitCode.TESTS_FAILED
    if totals.tests == 0:
        return ExitCode.NO_TESTS_COLLECTED
    return ExitCode.OK
