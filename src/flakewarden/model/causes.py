"""Causes: failed attempts grouped by their signature, in one run or across the history.

One thing going wrong (a database that refused connections, a shared fixture's race)
fails many tests with one signature. Reports, issues and the dashboard speak of that
thing once, as a cause with the tests it hit, instead of as a flake of each test.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flakewarden.model.environment import DEFAULT_PATTERNS, environment_pattern
from flakewarden.model.signatures import Signature

if TYPE_CHECKING:
    from flakewarden.model.results import TestResult


def cause_id(signature: Signature) -> str:
    """The id of a signature's cause: the same in every run, shard and machine."""
    digest = hashlib.sha256(signature.key.encode("utf-8", "replace")).hexdigest()
    return "c" + digest[:12]


@dataclasses.dataclass(frozen=True)
class Cause:
    """One signature and the failed attempts of one run that share it."""

    signature: Signature
    attempts: tuple[tuple[str, int], ...]  # (test id, attempt number), in the report's order
    environment: str = ""  # the environment pattern it matched: the environment's, not a test's

    @property
    def id(self) -> str:
        return cause_id(self.signature)

    @property
    def tests(self) -> tuple[str, ...]:
        """The tests it hit, each once, in the report's order."""
        return tuple(dict.fromkeys(test for test, _ in self.attempts))

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "signature": self.signature.key,
            **self.signature.to_json(),
            "environment": bool(self.environment),
            **({"environment_pattern": self.environment} if self.environment else {}),
            "tests": list(self.tests),
            "attempts": [{"test": test, "attempt": number} for test, number in self.attempts],
        }


def run_causes(
    tests: Sequence[TestResult], environment: Sequence[str] = DEFAULT_PATTERNS
) -> list[Cause]:
    """The causes of a run's failed attempts, widest first (most tests, then attempts).

    ``environment``: the patterns that tell a cause of the environment's.
    """
    found: dict[str, tuple[Signature, list[tuple[str, int]]]] = {}
    for test in tests:
        for attempt in test.attempts:
            sig = attempt.signature
            if sig is not None:
                found.setdefault(sig.key, (sig, []))[1].append((test.id, attempt.attempt))
    causes = [
        Cause(sig, tuple(attempts), environment_pattern(sig, environment))
        for sig, attempts in found.values()
    ]
    causes.sort(key=lambda c: (-len(c.tests), -len(c.attempts), c.signature.key))
    return causes


def environment_only(causes: Sequence[Cause]) -> dict[str, Cause]:
    """The tests every failed attempt of which was the environment's, each with that cause.

    Such a test did nothing wrong: it is not counted toward its flake rate or quarantine.
    """
    found: dict[str, Cause] = {}
    other: set[str] = set()
    for cause in causes:
        for test in cause.tests:
            if cause.environment:
                found.setdefault(test, cause)
            else:
                other.add(test)
    return {test: cause for test, cause in found.items() if test not in other}


@dataclasses.dataclass(frozen=True)
class FailureGroup:
    """A cause across the history's runs, as the dashboard shows it."""

    signature: Signature
    example: str  # one traceback of it (its end)
    failures: int
    runs: int
    tests: tuple[tuple[str, int], ...]  # (test, failures), the most failures first
    tests_total: int
    first: str  # when it was first and last seen (the runs' start times)
    last: str
    messages: tuple[str, ...]  # a few of its unmasked first lines
    recent: tuple[tuple[str, str], ...]  # (start time, link) of its newest runs
    environment: str = ""  # the environment pattern it matches, when it is the environment's
    # ``rising``, ``falling`` or ``steady`` (runs hit among the newest against those before),
    # or ``stopped``: not seen in the newest runs; and that said in words.
    trend: str = ""
    trend_text: str = ""

    @property
    def id(self) -> str:
        return cause_id(self.signature)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.signature.to_json(),
            "id": self.id,
            "key": self.signature.key,
            "example": self.example,
            "failures": self.failures,
            "runs": self.runs,
            "tests": [[name, count] for name, count in self.tests],
            "tests_total": self.tests_total,
            "first": self.first,
            "last": self.last,
            "messages": list(self.messages),
            "recent": [list(run) for run in self.recent],
            "environment": bool(self.environment),
            "trend": self.trend,
            "trend_text": self.trend_text,
        }
