"""A whole run: its attempts, totals and the report every writer reads."""

from __future__ import annotations

import collections
import dataclasses
import hashlib
from typing import Any, Optional

from flakewarden.model.attempts import Attempt
from flakewarden.model.blame import BlameRun
from flakewarden.model.causes import Cause, run_causes
from flakewarden.model.coverage import CoverageSummary
from flakewarden.model.environment import DEFAULT_PATTERNS
from flakewarden.model.history import RunContext
from flakewarden.model.outcomes import SCHEMA_VERSION, Outcome
from flakewarden.model.results import TestResult


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
    shard: Optional[str] = None  # "K/N" when the run was one shard of the suite
    merged_from: list[str] = dataclasses.field(default_factory=list)  # the shards merged
    # What names this run's evidence: a fresh random id per `flakewarden run`, a digest of
    # the shards' ids for a merge. Publishing one report twice gives the same keys.
    uid: str = ""
    origins: dict[str, str] = dataclasses.field(default_factory=dict)  # test id -> shard's uid
    # The JUnit XML files another runner wrote, when the report was built from them.
    junit_from: list[str] = dataclasses.field(default_factory=list)
    # ``flakewarden run --base``: the change each failed test was judged against.
    blame: Optional[BlameRun] = None
    # What tells a cause of the environment's (``causes.environment`` in the configuration);
    # not kept in report.json: a command that reads the report sets its own configuration's.
    environment_patterns: tuple[str, ...] = DEFAULT_PATTERNS

    @property
    def totals(self) -> Totals:
        counts = collections.Counter(test.outcome for test in self.tests)
        return Totals(
            tests=len(self.tests),
            **{outcome.value: counts[outcome] for outcome in Outcome},
        )

    def evidence_key(self, test_id: str) -> str:
        """The key of the run that produced ``test_id``'s result (the shard's, in a merge).

        A flake issue counts one hit per key, so a report published again (a re-run
        merge job, a retried step) is not counted twice.
        """
        if test_id in self.origins:
            return self.origins[test_id]
        if self.uid:
            return self.uid
        # A report older than ``uid``: the run's coordinates and start time stand for it.
        ctx = self.context
        coordinates = [self.started_at, self.rootdir, self.shard or ""]
        if ctx is not None:
            coordinates += [ctx.repository, str(ctx.run_id), str(ctx.run_attempt), ctx.job]
            coordinates.append(ctx.job_name)
        digest = hashlib.sha256("\0".join(coordinates).encode("utf-8", "replace"))
        return "r-" + digest.hexdigest()[:32]

    def with_outcome(self, *outcomes: Outcome) -> list[TestResult]:
        return [t for t in self.tests if t.outcome in outcomes]

    @property
    def causes(self) -> list[Cause]:
        """The run's failed attempts grouped by signature, widest first."""
        return run_causes(self.tests, self.environment_patterns)

    @property
    def rerun_tests(self) -> list[TestResult]:
        return [t for t in self.tests if len(t.attempts) > 1]

    def to_json(self, with_tests: bool = True) -> dict[str, Any]:
        """The report as ``report.json`` holds it; ``with_tests=False`` leaves ``tests`` empty
        (for a writer that has each test's item encoded already)."""
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
            "shard": self.shard,
            "merged_from": self.merged_from,
            "uid": self.uid,
            "origins": self.origins,
            **({"junit_from": self.junit_from} if self.junit_from else {}),
            **({"blame": self.blame.to_json()} if self.blame is not None else {}),
            "totals": self.totals.to_json(),
            "coverage": None if self.coverage is None else self.coverage.to_json(),
            "causes": [c.to_json() for c in self.causes],
            "attempts": [a.to_json() for a in self.attempts],
            "tests": [t.to_json() for t in self.tests] if with_tests else [],
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
            shard=None if data.get("shard") is None else str(data["shard"]),
            merged_from=[str(m) for m in data.get("merged_from", [])],
            uid=str(data.get("uid") or ""),
            origins=_origins(data.get("origins")),
            junit_from=[str(j) for j in data.get("junit_from") or []],
            blame=BlameRun.from_json(data.get("blame")),
        )


def _origins(value: Any) -> dict[str, str]:
    """``origins`` as written; anything but an object of strings reads as none."""
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str) and v}
