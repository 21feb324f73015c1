"""The shared vocabulary: every stage reads and writes these types.

A writer never re-parses another writer's output; it reads a ``RunReport``.
``report.json`` is the serialised ``RunReport`` (``schema`` 1) and the only
file other commands (issues, stress, quarantine) read back.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import hashlib
from typing import Any, Optional

from .coverage_figures import display_percent, fail_under_message, fails_under
from .failure_lines import first_line
from .subtests import Subtest, failure_message, failure_text

__all__ = ["Subtest", "first_line"]  # re-exported: part of the shared vocabulary

SCHEMA_VERSION = 1

#: Test ids longer than this are known by a digest wherever a whole id cannot be stored
#: (an issue's marker, the quarantined set read from it).
LONG_ID_LIMIT = 1_000


def id_key(test_id: str) -> str:
    """The key a test is known by across runs: its id, or ``sha256:<hex>`` of a long id."""
    if len(test_id) <= LONG_ID_LIMIT:
        return test_id
    return "sha256:" + hashlib.sha256(test_id.encode("utf-8", "surrogatepass")).hexdigest()


class ExitCode(enum.IntEnum):
    """Exit codes mirror pytest's so CI scripts need no translation."""

    OK = 0
    TESTS_FAILED = 1
    INTERRUPTED = 2
    INTERNAL_ERROR = 3
    USAGE_ERROR = 4
    NO_TESTS_COLLECTED = 5


class Outcome(str, enum.Enum):
    """The final outcome of one test across all attempts."""

    PASSED = "passed"
    FLAKY = "flaky"
    FAILED = "failed"
    QUARANTINED = "quarantined"
    SKIPPED = "skipped"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


class AttemptOutcome(str, enum.Enum):
    """The outcome of one test in one attempt (one process)."""

    PASSED = "passed"
    FAILED = "failed"  # the test body failed
    ERROR = "error"  # setup or teardown failed
    SKIPPED = "skipped"
    CRASHED = "crashed"  # the test process died (or timed out) while this test ran

    def __str__(self) -> str:
        return self.value

    @property
    def is_failure(self) -> bool:
        return self in (AttemptOutcome.FAILED, AttemptOutcome.ERROR, AttemptOutcome.CRASHED)


@dataclasses.dataclass
class PhaseRecord:
    """One phase (setup, call, teardown) of one test as pytest reported it."""

    when: str
    outcome: str  # pytest's: passed, failed, skipped
    duration: float
    longrepr: str = ""
    wasxfail: bool = False


@dataclasses.dataclass
class TestRecord:
    """What the plugin recorded for one test in one process (one JSON line)."""

    __test__ = False  # not a pytest test class

    id: str
    file: str
    line: Optional[int]
    phases: list[PhaseRecord]
    index: int = 0  # position in the run order of its process
    iteration: int = 0  # repetition inside the process (stress runs)
    worker: str = ""
    stdout: str = ""
    stderr: str = ""
    subtests: list[Subtest] = dataclasses.field(default_factory=list)
    unfinished: str = ""  # why the session ended while this test ran (pytest.exit, Ctrl-C)
    crash: str = ""  # how the process died while this test ran (a ``crashed`` attempt)

    @property
    def outcome(self) -> AttemptOutcome:
        """Fold the crash, phases and subtests into one outcome: a failed subtest is never a pass.

        Teardown failure is never a pass either; a call that pytest-rerunfailures
        retried in-process (``rerun``) is a failed call.
        """
        if self.crash:
            return AttemptOutcome.CRASHED
        by_when = {p.when: p for p in self.phases}
        call = by_when.get("call")
        for when in ("setup", "teardown"):
            phase = by_when.get(when)
            if phase is not None and phase.outcome in _FAILED_CALL:
                return AttemptOutcome.ERROR
        if call is not None and call.outcome in _FAILED_CALL:
            return AttemptOutcome.FAILED
        if any(sub.failed for sub in self.subtests):
            return AttemptOutcome.FAILED
        if any(p.outcome == "skipped" for p in self.phases):
            return AttemptOutcome.SKIPPED
        if call is None:
            # Setup never got to call: treat a missing call as an error.
            return AttemptOutcome.ERROR
        return AttemptOutcome.PASSED

    @property
    def failed_phase(self) -> str:
        for phase in self.phases:
            if phase.outcome in _FAILED_CALL:
                return phase.when
        if any(sub.failed for sub in self.subtests):
            return "call"
        return ""

    @property
    def longrepr(self) -> str:
        parts = [failure_text(self.subtests)]
        parts.extend(p.longrepr for p in self.phases if p.outcome in _FAILED_CALL)
        return "\n\n".join(part for part in parts if part)

    @property
    def duration(self) -> float:
        return sum(p.duration for p in self.phases)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestRecord:
        phases = [
            PhaseRecord(
                when=str(p["when"]),
                outcome=str(p["outcome"]),
                duration=float(p.get("duration", 0.0)),
                longrepr=str(p.get("longrepr") or ""),
                wasxfail=bool(p.get("wasxfail", False)),
            )
            for p in data["phases"]
        ]
        line = data.get("line")
        return cls(
            id=str(data["id"]),
            file=str(data.get("file") or ""),
            line=int(line) if line is not None else None,
            phases=phases,
            index=int(data.get("index", 0)),
            iteration=int(data.get("iteration", 0)),
            worker=str(data.get("worker") or ""),
            stdout=str(data.get("stdout") or ""),
            stderr=str(data.get("stderr") or ""),
            subtests=[Subtest.from_json(sub) for sub in data.get("subtests") or []],
            unfinished=str(data.get("unfinished") or ""),
            crash=str(data.get("crash") or ""),
        )


#: A phase outcome that is a failure: pytest's, or pytest-rerunfailures' retried failure.
_FAILED_CALL = ("failed", "rerun")


@dataclasses.dataclass
class AttemptResult:
    """One test in one attempt, as reports show it."""

    attempt: int
    outcome: AttemptOutcome
    duration: float
    phase: str = ""  # the phase that failed, when one did
    message: str = ""  # the first line a human reads
    longrepr: str = ""  # the full failure text
    stdout: str = ""
    stderr: str = ""
    subtests: list[Subtest] = dataclasses.field(default_factory=list)
    # (phase, failure text) per failed phase, when more than one failed (a call and
    # its teardown): JUnit writes one element each, as pytest does.
    phase_failures: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    @property
    def failed_subtests(self) -> list[Subtest]:
        return [sub for sub in self.subtests if sub.failed]

    @classmethod
    def from_record(cls, attempt: int, record: TestRecord) -> AttemptResult:
        longrepr = record.longrepr
        outcome = record.outcome
        message = ""
        if record.crash:
            message = record.crash
        elif outcome.is_failure:
            message = first_line(longrepr)
            own = [p for p in record.phases if p.when == record.failed_phase]
            if record.failed_phase == "call" and any(s.failed for s in record.subtests):
                # Name the subtest, not pytest's "contains 1 failed subtest".
                message = failure_message(record.subtests)
            elif not longrepr and record.unfinished:
                message = f"the session ended during this test: {first_line(record.unfinished)}"
            elif own and own[0].outcome == "rerun":
                message = f"{message} (rerun in-process by pytest-rerunfailures)"
        elif outcome == AttemptOutcome.SKIPPED:
            # The skip reason (or xfail reason) is what a reader wants to see.
            message = next((p.longrepr for p in record.phases if p.outcome == "skipped"), "")
        return cls(
            attempt=attempt,
            outcome=outcome,
            duration=record.duration,
            phase=record.failed_phase,
            message=message,
            longrepr=longrepr if record.outcome.is_failure else "",
            stdout=record.stdout,
            stderr=record.stderr,
            subtests=list(record.subtests),
            phase_failures=[
                (p.when, p.longrepr) for p in record.phases if p.outcome in _FAILED_CALL
            ],
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "attempt": self.attempt,
            "outcome": self.outcome.value,
            "duration": round(self.duration, 6),
            "phase": self.phase,
            "message": self.message,
            "longrepr": self.longrepr,
            "stdout": self.stdout,
            "stderr": self.stderr,
        }
        if self.subtests:
            data["subtests"] = [sub.to_json() for sub in self.subtests]
        if len(self.phase_failures) > 1:
            data["phase_failures"] = [
                {"phase": phase, "longrepr": text} for phase, text in self.phase_failures
            ]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AttemptResult:
        return cls(
            attempt=int(data["attempt"]),
            outcome=AttemptOutcome(data["outcome"]),
            duration=float(data.get("duration", 0.0)),
            phase=str(data.get("phase") or ""),
            message=str(data.get("message") or ""),
            longrepr=str(data.get("longrepr") or ""),
            stdout=str(data.get("stdout") or ""),
            stderr=str(data.get("stderr") or ""),
            subtests=[Subtest.from_json(sub) for sub in data.get("subtests") or []],
            phase_failures=[
                (str(f.get("phase") or ""), str(f.get("longrepr") or ""))
                for f in data.get("phase_failures") or []
            ],
        )


@dataclasses.dataclass
class TestResult:
    """One test across every attempt it ran in."""

    __test__ = False

    id: str
    file: str
    line: Optional[int]
    outcome: Outcome
    attempts: list[AttemptResult]

    @property
    def failures(self) -> list[AttemptResult]:
        return [a for a in self.attempts if a.outcome.is_failure]

    @property
    def first_failure(self) -> Optional[AttemptResult]:
        failures = self.failures
        return failures[0] if failures else None

    @property
    def duration(self) -> float:
        return sum(a.duration for a in self.attempts)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "file": self.file,
            "line": self.line,
            "outcome": self.outcome.value,
            "runs": len(self.attempts),
            "failures": len(self.failures),
            "attempts": [a.to_json() for a in self.attempts],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestResult:
        line = data.get("line")
        return cls(
            id=str(data["id"]),
            file=str(data.get("file") or ""),
            line=int(line) if line is not None else None,
            outcome=Outcome(data["outcome"]),
            attempts=[AttemptResult.from_json(a) for a in data.get("attempts", [])],
        )


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
class CoverageSummary:
    """The merged coverage of every attempt.

    ``percent`` is coverage.py's unrounded total and ``precision`` the project's ``[report]
    precision``: every place that shows the total shows ``percent_display``, what ``coverage
    report`` prints. A report.json written before the precision was kept has ``precision``
    None and a ``percent`` already rounded; it is shown with the digits it has.
    """

    percent: Optional[float]
    data_file: str = ""  # relative to the report dir
    xml_file: str = ""
    branch: bool = False
    files_combined: int = 0
    fail_under: Optional[float] = None
    errors: list[str] = dataclasses.field(default_factory=list)
    precision: Optional[int] = 0

    @property
    def percent_display(self) -> str:
        """The total as ``coverage report`` shows it (no ``%``), or "" when not measured."""
        if self.percent is None:
            return ""
        if self.precision is None:
            return f"{self.percent:g}"
        return display_percent(self.percent, self.precision)

    @property
    def below_threshold(self) -> bool:
        if self.fail_under is None or self.percent is None:
            return False
        if self.precision is None:
            return self.percent + 1e-9 < self.fail_under
        return fails_under(self.percent, self.fail_under, self.precision)

    @property
    def gate_message(self) -> str:
        """Why the gate failed, in coverage.py's words and digits; "" when it did not."""
        if not self.below_threshold or self.precision is None:
            return ""
        assert self.percent is not None and self.fail_under is not None
        return fail_under_message(self.percent, self.fail_under, self.precision)

    def to_json(self) -> dict[str, Any]:
        return {
            "percent": self.percent,
            "percent_display": self.percent_display or None,
            "precision": self.precision,
            "data_file": self.data_file,
            "xml_file": self.xml_file,
            "branch": self.branch,
            "files_combined": self.files_combined,
            "fail_under": self.fail_under,
            "errors": self.errors,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CoverageSummary:
        percent = data.get("percent")
        precision = data.get("precision")
        fail_under = data.get("fail_under")
        return cls(
            percent=None if percent is None else float(percent),
            data_file=str(data.get("data_file") or ""),
            xml_file=str(data.get("xml_file") or ""),
            branch=bool(data.get("branch", False)),
            files_combined=int(data.get("files_combined", 0)),
            fail_under=None if fail_under is None else float(fail_under),
            errors=[str(e) for e in data.get("errors", [])],
            precision=None if precision is None else int(precision),
        )


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
        )
