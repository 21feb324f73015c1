"""One test across a run's attempts, as every report shows it."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from flakewarden.model.blame import BaseCheck, TestChange
from flakewarden.model.causes import cause_id
from flakewarden.model.failure_lines import first_line
from flakewarden.model.outcomes import AttemptOutcome, Outcome
from flakewarden.model.raised import InTestRetry, Raised, retries_text
from flakewarden.model.records import FAILED_PHASE_OUTCOMES, TestRecord
from flakewarden.model.signatures import Signature, signature
from flakewarden.model.subtests import Subtest, failure_message


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
    # What the failure raised (its exception, then its chain), when the plugin saw it.
    raised: list[Raised] = dataclasses.field(default_factory=list)
    # ``flakewarden.retry``'s retries inside the test in this attempt.
    retries: list[InTestRetry] = dataclasses.field(default_factory=list)
    # A failed attempt's signature, computed once as the attempt is recorded (or read back):
    # the run's causes, the history and the dashboard all group by it.
    signature: Optional[Signature] = dataclasses.field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.signature is None and self.outcome.is_failure:
            self.signature = signature(self.longrepr, self.message, self.raised)

    @property
    def failed_subtests(self) -> list[Subtest]:
        return [sub for sub in self.subtests if sub.failed]

    @classmethod
    def from_record(cls, attempt: int, record: TestRecord) -> AttemptResult:
        outcome = record.outcome
        failed = outcome.is_failure
        # Each derived property walks the phases and subtests: read each once.
        failed_phase = record.failed_phase
        longrepr = record.longrepr if failed else ""
        message = ""
        if record.crash:
            message = record.crash
        elif failed:
            message = first_line(longrepr)
            own = [p for p in record.phases if p.when == failed_phase]
            if failed_phase == "call" and any(s.failed for s in record.subtests):
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
            phase=failed_phase,
            message=message,
            longrepr=longrepr if failed else "",
            stdout=record.stdout,
            stderr=record.stderr,
            subtests=list(record.subtests),
            phase_failures=[
                (p.when, p.longrepr) for p in record.phases if p.outcome in FAILED_PHASE_OUTCOMES
            ],
            raised=record.raised if failed else [],
            retries=record.retries,
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
        if self.raised:
            data["raised"] = [r.to_json() for r in self.raised]
        if self.retries:
            data["retries"] = [r.to_json() for r in self.retries]
        if self.signature is not None:
            data["cause"] = cause_id(self.signature)
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
            raised=[Raised.from_json(r) for r in data.get("raised") or []],
            retries=[InTestRetry.from_json(r) for r in data.get("retries") or []],
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
    # Why a failed test was not rerun: the rerun policy (``rerun.only`` / ``rerun.except``).
    not_rerun: str = ""
    # Blame (``flakewarden run --base``): whether it ran the change, and how the base did.
    change: Optional[TestChange] = None
    base: Optional[BaseCheck] = None
    # Flaky, failing where other test modules were collected and passing in a rerun that
    # collected fewer: it may depend on what importing those modules does.
    collection_hint: bool = False
    collection_evidence: str = ""  # what in the run points at collection, when it is marked

    @property
    def retries(self) -> list[InTestRetry]:
        """Every retry ``flakewarden.retry`` made inside this test, in every attempt."""
        return [retry for attempt in self.attempts for retry in attempt.retries]

    @property
    def retried_inside(self) -> str:
        """``2 x TimeoutError in fetch_price``, or empty when nothing was retried inside."""
        return retries_text(self.retries)

    @property
    def outcome_text(self) -> str:
        """The outcome as reports show it: ``passed (retried inside: 2 x TimeoutError in f)``."""
        inside = self.retried_inside
        return f"{self.outcome.value} (retried inside: {inside})" if inside else self.outcome.value

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
            **({"not_rerun": self.not_rerun} if self.not_rerun else {}),
            **({"retried_inside": inside} if (inside := self.retried_inside) else {}),
            **({"change": self.change.to_json()} if self.change is not None else {}),
            **({"base": self.base.to_json()} if self.base is not None else {}),
            **({"collection_hint": True} if self.collection_hint else {}),
            **({"collection_evidence": self.collection_evidence} if self.collection_hint else {}),
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
            not_rerun=str(data.get("not_rerun") or ""),
            change=TestChange.from_json(data.get("change")),
            base=BaseCheck.from_json(data.get("base")),
            collection_hint=data.get("collection_hint") is True,
            collection_evidence=str(data.get("collection_evidence") or ""),
        )
