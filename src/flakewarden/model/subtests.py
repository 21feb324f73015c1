"""Subtests: the parts of one test that pytest reports on their own.

pytest 9's ``subtests`` fixture, ``unittest.TestCase.subTest`` and the
``pytest-subtests`` plugin each send one report per subtest before the test's
own call report. A failed subtest fails its test even when the test's own call
passed (a ``TestCase`` method reports its call as passed), so the attempt's
outcome is folded from both. This module holds the shared type; ``model``
re-exports it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from flakewarden.model.failure_lines import first_line
from flakewarden.model.raised import InTestRetry, Raised

SUBTEST_FAILED = "failed"


@dataclasses.dataclass
class Subtest:
    """One subtest of one test in one attempt, as pytest reported it."""

    description: str  # pytest's own words: "[msg] (i=1)", as in its SUBFAILED line
    outcome: str  # pytest's: passed, failed, skipped
    duration: float = 0.0
    longrepr: str = ""  # the failure (or skip reason) text
    wasxfail: bool = False
    stdout: str = ""
    stderr: str = ""
    raised: tuple[Raised, ...] = ()
    retries: tuple[InTestRetry, ...] = ()

    @property
    def failed(self) -> bool:
        return self.outcome == SUBTEST_FAILED

    @property
    def message(self) -> str:
        return first_line(self.longrepr)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "description": self.description,
            "outcome": self.outcome,
            "duration": round(self.duration, 6),
            "message": self.message,
        }
        if self.longrepr:
            data["longrepr"] = self.longrepr
        if self.wasxfail:
            data["wasxfail"] = True
        if self.stdout:
            data["stdout"] = self.stdout
        if self.stderr:
            data["stderr"] = self.stderr
        if self.raised:
            data["raised"] = [r.to_json() for r in self.raised]
        if self.retries:
            data["retries"] = [r.to_json() for r in self.retries]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Subtest:
        return cls(
            description=str(data.get("description") or ""),
            outcome=str(data.get("outcome") or ""),
            duration=float(data.get("duration", 0.0) or 0.0),
            longrepr=str(data.get("longrepr") or ""),
            wasxfail=bool(data.get("wasxfail", False)),
            stdout=str(data.get("stdout") or ""),
            stderr=str(data.get("stderr") or ""),
            raised=tuple(Raised.from_json(r) for r in data.get("raised") or ()),
            retries=tuple(InTestRetry.from_json(r) for r in data.get("retries") or ()),
        )


def failure_text(subtests: list[Subtest]) -> str:
    """The failed subtests' tracebacks, each headed by pytest's description of it."""
    return "\n\n".join(
        f"SUBFAILED {sub.description}\n{sub.longrepr}".rstrip() for sub in subtests if sub.failed
    )


def failure_message(subtests: list[Subtest]) -> str:
    """The first failed subtest, named: ``subtest (i=1) failed: AssertionError: ...``."""
    failed = [sub for sub in subtests if sub.failed]
    if not failed:
        return ""
    first = failed[0]
    more = f" (and {len(failed) - 1} more subtests)" if len(failed) > 1 else ""
    text = f"subtest {first.description} failed{more}"
    return f"{text}: {first.message}" if first.message else text


@dataclasses.dataclass
class SubtestHistory:
    """One subtest across a test's attempts: what readers need to name a flaky subtest."""

    description: str
    outcomes: list[str]  # per attempt, "" where the attempt did not run it
    message: str  # the first failure's line

    @property
    def text(self) -> str:
        return ", ".join(outcome or "not run" for outcome in self.outcomes)


def failed_histories(attempts: list[Any]) -> list[SubtestHistory]:
    """The subtests that failed in any of ``attempts`` (``AttemptResult``s), in first-seen order.

    Subtests are matched across attempts by pytest's description; one repeated
    inside an attempt (same description twice) keeps its worst outcome there.
    """
    histories: dict[str, SubtestHistory] = {}
    for index, attempt in enumerate(attempts):
        for sub in attempt.subtests:
            history = histories.get(sub.description)
            if history is None:
                history = SubtestHistory(sub.description, [""] * len(attempts), "")
                histories[sub.description] = history
            if history.outcomes[index] != SUBTEST_FAILED:
                history.outcomes[index] = sub.outcome
            if sub.failed and not history.message:
                history.message = sub.message
    return [h for h in histories.values() if SUBTEST_FAILED in h.outcomes]
