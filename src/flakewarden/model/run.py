"""A whole run: its attempts, totals and the report every writer reads."""

from __future__ import annotations

import collections
import dataclasses
from typing import Any, Optional

from flakewarden.model.coverage import CoverageSummary
from flakewarden.model.history import RunContext
from flakewarden.model.outcomes import SCHEMA_VERSION, Outcome
from flakewarden.model.results import TestResult


@dataclasses.dataclass
class Continuation:
    """A fresh process that ran the tests a crashed process of the same attempt never reached."""

    command: list[str]
    reason: str
    selected: int = 0  # how many tests it was given (the list is in its select.json)
    exit_code: Optional[int] = None
    duration: float = 0.0
    crash: str = ""  # how this process died, when it did too
    directory: str = ""  # attempts/N/continuation-K relative to the report dir

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "reason": self.reason,
            "selected": self.selected,
            "exit_code": self.exit_code,
            "duration": round(self.duration, 6),
            "crash": self.crash,
            "directory": self.directory,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Continuation:
        return cls(
            command=[str(c) for c in data.get("command", [])],
            reason=str(data.get("reason") or ""),
            selected=int(data.get("selected", 0)),
            exit_code=data.get("exit_code"),
            duration=float(data.get("duration", 0.0)),
            crash=str(data.get("crash") or ""),
            directory=str(data.get("directory") or ""),
        )


@dataclasses.dataclass
class Attempt:
    """One process: the user's command (attempt 1) or a rerun of failed tests.

    When that process crashed, the tests it never reached ran in ``continuations``,
    still counted as this attempt.
    """

    number: int
    command: list[str]
    reason: str
    exit_code: Optional[int] = None
    duration: float = 0.0
    selected: list[str] = dataclasses.field(default_factory=list)
    collection_errors: list[str] = dataclasses.field(default_factory=list)
    directory: str = ""  # attempts/N relative to the report dir
    # What pytest's own summary line counted (None: not available), and every way
    # flakewarden's records of this attempt disagree with it (consistency.py).
    pytest_summary: Optional[dict[str, int]] = None
    disagreements: list[str] = dataclasses.field(default_factory=list)
    crash: str = ""  # how its process died before the session finished, when it did
    continuations: list[Continuation] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "command": self.command,
            "reason": self.reason,
            "exit_code": self.exit_code,
            "duration": round(self.duration, 6),
            "selected": self.selected,
            "collection_errors": self.collection_errors,
            "directory": self.directory,
            "pytest_summary": self.pytest_summary,
            "disagreements": self.disagreements,
            "crash": self.crash,
            "continuations": [c.to_json() for c in self.continuations],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attempt:
        return cls(
            number=int(data["number"]),
            command=[str(c) for c in data.get("command", [])],
            reason=str(data.get("reason") or ""),
            exit_code=data.get("exit_code"),
            duration=float(data.get("duration", 0.0)),
            selected=[str(s) for s in data.get("selected", [])],
            collection_errors=[str(s) for s in data.get("collection_errors", [])],
            directory=str(data.get("directory") or ""),
            pytest_summary=_counts(data.get("pytest_summary")),
            disagreements=[str(s) for s in data.get("disagreements") or []],
            crash=str(data.get("crash") or ""),
            continuations=[Continuation.from_json(c) for c in data.get("continuations", [])],
        )


def _counts(data: Any) -> Optional[dict[str, int]]:
    if not isinstance(data, dict):
        return None
    return {str(key): int(value) for key, value in data.items()}


@dataclasses.dataclass
class Totals:
    tests: int = 0
    passed: int = 0
    flaky: int = 0
    failed: int = 0
    quarantined: int = 0
    skipped: int = 0
    error: int = 0

    def to_json(self) -> dict[str, int]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class RunReport:
    """Everything one ``flakewarden run`` learned; serialised as ``report.json``."""

    command: list[str]
    rootdir: str
    tests: list[TestResult]
    attempts: list[Attempt]
    order: list[str]
    exit_code: int
    started_at: str
    finished_at: str
    duration: float
    version: str
    coverage: Optional[CoverageSummary] = None
    cutoff: bool = False  # more failures than --max-failures: no reruns
    interrupted: bool = False
    problems: list[str] = dataclasses.field(default_factory=list)
    max_failures: int = 10
    reruns: int = 2
    quarantine_known: list[str] = dataclasses.field(default_factory=list)  # the set in force
    context: Optional[RunContext] = None  # where it ran; None in older reports

    @property
    def totals(self) -> Totals:
        counts = collections.Counter(test.outcome for test in self.tests)
        return Totals(
            tests=len(self.tests),
            **{outcome.value: counts[outcome] for outcome in Outcome},
        )

    def with_outcome(self, *outcomes: Outcome) -> list[TestResult]:
        return [t for t in self.tests if t.outcome in outcomes]

    @property
    def rerun_tests(self) -> list[TestResult]:
        return [t for t in self.tests if len(t.attempts) > 1]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "tool": {"name": "flakewarden", "version": self.version},
            "command": self.command,
            "rootdir": self.rootdir,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration": round(self.duration, 6),
            "exit_code": self.exit_code,
            "reruns": self.reruns,
            "max_failures": self.max_failures,
            "cutoff": self.cutoff,
            "interrupted": self.interrupted,
            "problems": self.problems,
            "quarantine_known": self.quarantine_known,
            "context": None if self.context is None else self.context.to_json(),
            "totals": self.totals.to_json(),
            "coverage": None if self.coverage is None else self.coverage.to_json(),
            "attempts": [a.to_json() for a in self.attempts],
            "tests": [t.to_json() for t in self.tests],
            "order": self.order,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunReport:
        if data.get("schema") != SCHEMA_VERSION:
            raise ValueError(
                f"report.json schema {data.get('schema')!r} is not {SCHEMA_VERSION}; "
                "re-run it with this version of flakewarden"
            )
        coverage = data.get("coverage")
        return cls(
            command=[str(c) for c in data.get("command", [])],
            rootdir=str(data.get("rootdir") or ""),
            tests=[TestResult.from_json(t) for t in data.get("tests", [])],
            attempts=[Attempt.from_json(a) for a in data.get("attempts", [])],
            order=[str(o) for o in data.get("order", [])],
            exit_code=int(data.get("exit_code", 0)),
            started_at=str(data.get("started_at") or ""),
            finished_at=str(data.get("finished_at") or ""),
            duration=float(data.get("duration", 0.0)),
            version=str(data.get("tool", {}).get("version") or ""),
            coverage=None if coverage is None else CoverageSummary.from_json(coverage),
            cutoff=bool(data.get("cutoff", False)),
            interrupted=bool(data.get("interrupted", False)),
            problems=[str(p) for p in data.get("problems", [])],
            max_failures=int(data.get("max_failures", 10)),
            reruns=int(data.get("reruns", 2)),
            quarantine_known=[str(i) for i in data.get("quarantine_known", [])],
            context=None if data.get("context") is None else RunContext.from_json(data["context"]),
        )
