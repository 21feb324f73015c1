"""What the injected plugin recorded of one test in one process, folded into one outcome."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from flakewarden.model.outcomes import AttemptOutcome
from flakewarden.model.raised import InTestRetry, Raised
from flakewarden.model.state import StateChange
from flakewarden.model.subtests import Subtest, failure_text


@dataclasses.dataclass
class PhaseRecord:
    """One phase (setup, call, teardown) of one test as pytest reported it."""

    when: str
    outcome: str  # pytest's: passed, failed, skipped
    duration: float
    longrepr: str = ""
    wasxfail: bool = False
    raised: tuple[Raised, ...] = ()  # a failed phase's exception and its chain
    retries: tuple[InTestRetry, ...] = ()  # ``flakewarden.retry``'s retries in this phase


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
    # Stress runs (``FLAKEWARDEN_CONCURRENCY``): threads that ran beside the test's own, and
    # event-loop iterations, during the run; None when not recorded.
    threads: Optional[int] = None
    event_loop: Optional[int] = None
    # Stress runs (``FLAKEWARDEN_RANDOM_SEED``): the seed this run's random generators drew
    # from; None when the plugin did not seed them.
    random_seed: Optional[int] = None
    # Localisation runs (``FLAKEWARDEN_LINES``): how often each line of the project's code
    # ran, by file (relative to the rootdir) and line number; None when not counted.
    lines: Optional[dict[str, dict[int, int]]] = None
    # Localisation runs (``FLAKEWARDEN_STATE``): what the run changed in shared state, each
    # a ``StateChange``; None when not taken.
    state: Optional[list[StateChange]] = None

    @property
    def outcome(self) -> AttemptOutcome:
        """Fold the crash, phases and subtests into one outcome: a failed subtest is never a pass.

        Teardown failure is never a pass either; a call that pytest-rerunfailures
        retried in-process (``rerun``) is a failed call.
        """
        if self.crash:
            return AttemptOutcome.CRASHED
        # One pass, the last phase of each kind winning (read for every test, often).
        setup: Optional[PhaseRecord] = None
        call: Optional[PhaseRecord] = None
        teardown: Optional[PhaseRecord] = None
        skipped = False
        for phase in self.phases:
            when = phase.when
            if when == "call":
                call = phase
            elif when == "setup":
                setup = phase
            elif when == "teardown":
                teardown = phase
            skipped = skipped or phase.outcome == "skipped"
        for edge in (setup, teardown):
            if edge is not None and edge.outcome in FAILED_PHASE_OUTCOMES:
                return AttemptOutcome.ERROR
        if call is not None and call.outcome in FAILED_PHASE_OUTCOMES:
            return AttemptOutcome.FAILED
        if self.subtests and any(sub.failed for sub in self.subtests):
            return AttemptOutcome.FAILED
        if skipped:
            return AttemptOutcome.SKIPPED
        if call is None:
            # Setup never got to call: treat a missing call as an error.
            return AttemptOutcome.ERROR
        return AttemptOutcome.PASSED

    @property
    def failed_phase(self) -> str:
        for phase in self.phases:
            if phase.outcome in FAILED_PHASE_OUTCOMES:
                return phase.when
        if any(sub.failed for sub in self.subtests):
            return "call"
        return ""

    @property
    def longrepr(self) -> str:
        parts = [failure_text(self.subtests)]
        parts.extend(p.longrepr for p in self.phases if p.outcome in FAILED_PHASE_OUTCOMES)
        return "\n\n".join(part for part in parts if part)

    @property
    def duration(self) -> float:
        return sum(p.duration for p in self.phases)

    @property
    def raised(self) -> list[Raised]:
        """What the failure raised: each failed phase's and subtest's exceptions, in order."""
        found = [r for sub in self.subtests if sub.failed for r in sub.raised]
        found += [r for p in self.phases if p.outcome in FAILED_PHASE_OUTCOMES for r in p.raised]
        return found

    @property
    def retries(self) -> list[InTestRetry]:
        """``flakewarden.retry``'s retries inside this test, its subtests' included."""
        found = [r for sub in self.subtests for r in sub.retries]
        return found + [r for p in self.phases for r in p.retries]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestRecord:
        # Positional: this runs for every phase of every test a run reads.
        phases = [
            PhaseRecord(
                str(p["when"]),
                str(p["outcome"]),
                float(p.get("duration", 0.0)),
                str(p.get("longrepr") or ""),
                bool(p.get("wasxfail", False)),
                *_evidence(p),
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
            **_concurrency(data.get("concurrency")),
            random_seed=_seed(data.get("seed")),
            lines=_lines(data.get("lines")),
            state=_state(data.get("state")),
        )


def _state(data: Any) -> Optional[list[StateChange]]:
    """A run's changes to shared state, keeping only well-formed entries."""
    if not isinstance(data, list):
        return None
    return [change for change in map(StateChange.from_json, data) if change is not None]


def _lines(data: Any) -> Optional[dict[str, dict[int, int]]]:
    """A run's line counts, keeping only well-formed entries (a file name, a line, a count)."""
    if not isinstance(data, dict):
        return None
    found: dict[str, dict[int, int]] = {}
    for file, counts in data.items():
        if not isinstance(file, str) or not isinstance(counts, dict):
            continue
        for line, count in counts.items():
            if isinstance(line, str) and line.isdigit() and type(count) is int and count > 0:
                found.setdefault(file, {})[int(line)] = count
    return found


def _seed(value: Any) -> Optional[int]:
    """A run's random seed, when the plugin recorded a plain integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _concurrency(data: Any) -> dict[str, Optional[int]]:
    """The ``concurrency`` facts of a stress run's record, when it holds them (else none)."""
    if not isinstance(data, dict):
        return {}
    out: dict[str, Optional[int]] = {}
    for key in ("threads", "event_loop"):
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            out[key] = value
    return out


def _evidence(data: dict[str, Any]) -> tuple[tuple[Raised, ...], tuple[InTestRetry, ...]]:
    """A phase's (or subtest's) ``raised`` and ``retries``, when the plugin recorded any."""
    raised = data.get("raised")
    retries = data.get("retries")
    if not raised and not retries:
        return (), ()
    return (
        tuple(Raised.from_json(r) for r in raised or () if isinstance(r, dict)),
        tuple(InTestRetry.from_json(r) for r in retries or () if isinstance(r, dict)),
    )


#: A phase outcome that is a failure: pytest's, or pytest-rerunfailures' retried failure.
FAILED_PHASE_OUTCOMES = ("failed", "rerun")
