"""A run's causes said in plain words, for the summary and report.html to escape and show.

A cause that failed several tests is what a reader should see first: one sentence saying
how many tests it hit, with what, where, and how they ended, before the tests one by one.
"""

from __future__ import annotations

import collections
from typing import NamedTuple

from flakewarden.model import Outcome, RunReport
from flakewarden.model.causes import Cause

#: Causes said at most, and tests named per cause.
MAX_SHOWN = 20
MAX_TESTS_NAMED = 5


class CauseText(NamedTuple):
    """One cause as a sentence, and the first of its tests."""

    id: str
    sentence: str
    tests: tuple[str, ...]
    more: int  # tests not named


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _ends(cause: Cause, report: RunReport) -> str:
    """How the cause's tests ended: ``all 30 passed on a rerun``."""
    outcomes = {test.id: test.outcome for test in report.tests}
    counts = collections.Counter(outcomes.get(test) for test in cause.tests)
    total = len(cause.tests)
    words = [
        (Outcome.FLAKY, "passed on a rerun"),
        (Outcome.FAILED, "failed every attempt"),
        (Outcome.ERROR, "failed every attempt"),
        (Outcome.QUARANTINED, "are quarantined"),
    ]
    parts: list[str] = []
    for outcome, said in words:
        count = counts.pop(outcome, 0)
        if count == total:
            return f"all {total} {said}" if total > 2 else f"both {said}"
        if count:
            parts.append(f"{count} {said}")
    return ", ".join(parts)


def describe(cause: Cause, report: RunReport) -> str:
    """``30 tests failed their first attempt with E: message in path::func; all 30 ...``.

    A cause of the environment's says so, and the pattern that tells it.
    """
    numbers = {number for _, number in cause.attempts}
    if numbers == {1}:
        when = "their first attempt"
    else:
        when = f"{_plural(len(cause.attempts), 'attempt')} in all"
    sig = cause.signature
    text = f"{len(cause.tests)} tests failed {when} with {sig.exception}: {sig.message}"
    if sig.frame:
        text += f" in {sig.frame}"
    ends = _ends(cause, report)
    text = f"{text}; {ends}" if ends else text
    if cause.environment:
        text += f"; the environment, not the tests (it matches {cause.environment})"
    return text


def shared_causes(report: RunReport) -> list[CauseText]:
    """The causes that failed more than one test, widest first, as sentences."""
    found = []
    for cause in report.causes:
        if len(cause.tests) < 2:
            break  # widest first: the rest hit one test each
        tests = cause.tests
        found.append(
            CauseText(
                cause.id,
                describe(cause, report),
                tests[:MAX_TESTS_NAMED],
                max(0, len(tests) - MAX_TESTS_NAMED),
            )
        )
    return found[:MAX_SHOWN]
