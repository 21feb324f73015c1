"""The stress verdict and its evidence: ``verdict.json`` for machines, ``verdict.md`` for review.

A verdict is only as good as the evidence a reviewer can check, so the record
carries every arm's counts and bounds, the p-values, the rule that decided,
the first failing run's full traceback and a command that reproduces each arm.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path
from typing import Any, Optional

from . import stats
from .errors import ReportError

SCHEMA_VERSION = 1

DETERMINISTIC = "deterministic"
RACE = "race"
ORDER_DEPENDENT = "order-dependent"
SEED_DEPENDENT = "seed-dependent"
FLAKY = "flaky"
NOT_REPRODUCIBLE = "not-reproducible"
ERROR = "error"
VERDICTS = (
    DETERMINISTIC,
    RACE,
    ORDER_DEPENDENT,
    SEED_DEPENDENT,
    FLAKY,
    NOT_REPRODUCIBLE,
    ERROR,
)

# Quarantine needs evidence that the failure is not a real break and not a race.
# An order or seed dependency is a found, reproducible cause outside timing; a
# flat rate that no knob moves is the flake quarantine exists for. A test that
# never failed under any knob bounds the rate of any race it hides (the verdict
# states the bound and the knobs): the policy's default allows it, and the
# quarantined test keeps running in every build. A team that wants more can drop
# it from ``quarantine_policy.allowed_verdicts``.
QUARANTINE_ALLOWED = {
    DETERMINISTIC: False,
    RACE: False,
    ORDER_DEPENDENT: True,
    SEED_DEPENDENT: True,
    FLAKY: True,
    NOT_REPRODUCIBLE: True,
    ERROR: False,
}

KNOB_DESCRIPTIONS = {
    "baseline": "no knob: fixed order (-p no:randomly), default switch interval, no extra load",
    "switch-interval": "sys.setswitchinterval(1e-05): threads switch ~500x more often",
    "burn-1x": "one CPU-burning process per core while the test runs",
    "burn-2x": "two CPU-burning processes per core while the test runs",
}


@dataclasses.dataclass
class Arm:
    """Runs of the test under one phase and knob (one row of evidence)."""

    phase: str
    knob: str
    runs: int = 0
    failures: int = 0
    processes: int = 0
    repeat: int = 1
    skipped: int = 0
    crashed: int = 0  # processes that died or hung mid-test (each counted as one failure)
    p_value: Optional[float] = None
    p_adjusted: Optional[float] = None
    command: str = ""  # reproduces one process of this arm by hand
    shard: str = ""  # the runner it ran on, after a merge

    @property
    def rate(self) -> float:
        return self.failures / self.runs if self.runs else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return stats.clopper_pearson(self.failures, self.runs)

    @property
    def upper(self) -> float:
        return stats.upper_bound(self.failures, self.runs)

    def add(self, failed: bool) -> None:
        self.runs += 1
        self.failures += int(failed)

    def to_json(self) -> dict[str, Any]:
        low, high = self.interval
        return {
            "phase": self.phase,
            "knob": self.knob,
            "runs": self.runs,
            "failures": self.failures,
            "rate": round(self.rate, 6),
            "interval95": [round(low, 6), round(high, 6)],
            "upper95": round(self.upper, 6),
            "processes": self.processes,
            "repeat": self.repeat,
            "skipped": self.skipped,
            "crashed": self.crashed,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "command": self.command,
            "shard": self.shard,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Arm:
        return cls(
            phase=str(data["phase"]),
            knob=str(data["knob"]),
            runs=int(data.get("runs", 0)),
            failures=int(data.get("failures", 0)),
            processes=int(data.get("processes", 0)),
            repeat=int(data.get("repeat", 1)),
            skipped=int(data.get("skipped", 0)),
            crashed=int(data.get("crashed", 0)),
            p_value=data.get("p_value"),
            p_adjusted=data.get("p_adjusted"),
            command=str(data.get("command") or ""),
            shard=str(data.get("shard") or ""),
        )


@dataclasses.dataclass
class Failure:
    """The first failing run: where it ran and its full (``--tb=long``) traceback."""

    phase: str
    knob: str
    process: int
    iteration: int
    message: str
    traceback: str
    log: str = ""  # the process's output file, relative to the report dir

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Failure:
        return cls(
            phase=str(data.get("phase") or ""),
            knob=str(data.get("knob") or ""),
            process=int(data.get("process", 0)),
            iteration=int(data.get("iteration", 0)),
            message=str(data.get("message") or ""),
            traceback=str(data.get("traceback") or ""),
            log=str(data.get("log") or ""),
        )


@dataclasses.dataclass
class Verdict:
    """What ``flakewarden stress`` concluded about one test, with the evidence."""

    test_id: str
    verdict: str
    reason: str
    rule: str
    arms: list[Arm] = dataclasses.field(default_factory=list)
    knob: Optional[str] = None  # race: the tightening knob that raised the rate most
    polluter: Optional[str] = None  # order-dependent: the test that must run first
    seed: Optional[int] = None  # seed-dependent: a seed that reproduces the failure
    statistics: dict[str, Any] = dataclasses.field(default_factory=dict)
    order: dict[str, Any] = dataclasses.field(default_factory=dict)
    seeds: dict[str, Any] = dataclasses.field(default_factory=dict)
    first_failure: Optional[Failure] = None
    environment: dict[str, Any] = dataclasses.field(default_factory=dict)
    command: list[str] = dataclasses.field(default_factory=list)
    started_at: str = ""
    finished_at: str = ""
    duration: float = 0.0
    version: str = ""
    notes: list[str] = dataclasses.field(default_factory=list)
    shards: list[str] = dataclasses.field(default_factory=list)

    @property
    def quarantine_allowed(self) -> bool:
        return QUARANTINE_ALLOWED[self.verdict]

    @property
    def total_runs(self) -> int:
        return sum(arm.runs for arm in self.arms)

    @property
    def total_failures(self) -> int:
        return sum(arm.failures for arm in self.arms)

    def known_race_entry(self, link: Optional[str] = None) -> Optional[str]:
        """The known-race-patterns entry to add for a race (YAML), else None."""
        if self.verdict != RACE:
            return None
        date = (self.finished_at or self.started_at)[:10]
        return (
            f"- test: {json.dumps(self.test_id)}\n"
            f"  date: {date}\n"
            f"  knob: {self.knob}\n"
            f"  link: {json.dumps(link or 'TODO: the issue or the fix')}\n"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "tool": {"name": "flakewarden", "version": self.version},
            "test_id": self.test_id,
            "verdict": self.verdict,
            "quarantine_allowed": self.quarantine_allowed,
            "reason": self.reason,
            "rule": self.rule,
            "knob": self.knob,
            "polluter": self.polluter,
            "seed": self.seed,
            "runs": self.total_runs,
            "failures": self.total_failures,
            "arms": [arm.to_json() for arm in self.arms],
            "statistics": self.statistics,
            "order": self.order,
            "seeds": self.seeds,
            "first_failure": None if self.first_failure is None else self.first_failure.to_json(),
            "known_race_entry": self.known_race_entry(),
            "environment": self.environment,
            "command": self.command,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration": round(self.duration, 3),
            "notes": self.notes,
            "shards": self.shards,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        if data.get("schema") != SCHEMA_VERSION:
            raise ValueError(f"verdict.json schema {data.get('schema')!r} is not {SCHEMA_VERSION}")
        if data.get("verdict") not in VERDICTS:
            raise ValueError(f"unknown verdict {data.get('verdict')!r}")
        first = data.get("first_failure")
        seed = data.get("seed")
        return cls(
            test_id=str(data["test_id"]),
            verdict=str(data["verdict"]),
            reason=str(data.get("reason") or ""),
            rule=str(data.get("rule") or ""),
            arms=[Arm.from_json(a) for a in data.get("arms", [])],
            knob=data.get("knob"),
            polluter=data.get("polluter"),
            seed=None if seed is None else int(seed),
            statistics=dict(data.get("statistics") or {}),
            order=dict(data.get("order") or {}),
            seeds=dict(data.get("seeds") or {}),
            first_failure=None if not first else Failure.from_json(first),
            environment=dict(data.get("environment") or {}),
            command=[str(c) for c in data.get("command", [])],
            started_at=str(data.get("started_at") or ""),
            finished_at=str(data.get("finished_at") or ""),
            duration=float(data.get("duration", 0.0)),
            version=str(data.get("tool", {}).get("version") or ""),
            notes=[str(n) for n in data.get("notes", [])],
            shards=[str(s) for s in data.get("shards", [])],
        )


def read_verdict(directory: Path) -> Verdict:
    path = directory / "verdict.json" if directory.is_dir() else directory
    try:
        return Verdict.from_json(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError as exc:
        raise ReportError(f"no verdict.json in {directory}") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise ReportError(f"cannot read {path}: {exc}") from exc


def write_verdict(verdict: Verdict, directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "verdict.json").write_text(
            json.dumps(verdict.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (directory / "verdict.md").write_text(render_markdown(verdict), encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"cannot write the verdict to {directory}: {exc}") from exc


def _percent(value: float) -> str:
    return f"{100 * value:.2f}%"


def _p(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.3g}"


def text_chart(arms: list[Arm], width: int = 30) -> str:
    """Failure rate by arm as a fixed-width bar chart (renders anywhere, diff-friendly)."""
    rows = [arm for arm in arms if arm.runs]
    if not rows:
        return "(no runs)"
    label = max(len(_arm_label(arm)) for arm in rows)
    lines = []
    for arm in rows:
        bar = "#" * round(arm.rate * width)
        lines.append(
            f"{_arm_label(arm).ljust(label)} |{bar.ljust(width)}| "
            f"{arm.failures:>4}/{arm.runs:<4} {_percent(arm.rate):>7}"
        )
    return "\n".join(lines)


def _arm_label(arm: Arm) -> str:
    name = arm.knob if arm.phase == "timing" else f"{arm.phase}:{arm.knob}"
    return f"{name}@{arm.shard}" if arm.shard else name


def render_markdown(verdict: Verdict) -> str:
    out: list[str] = []
    out.append(f"# Stress verdict: `{verdict.verdict}`\n")
    out.append(f"Test: `{verdict.test_id}`\n")
    allowed = "yes" if verdict.quarantine_allowed else "**no**"
    out.append(f"Quarantine allowed: {allowed}\n")
    out.append(f"**Why:** {verdict.reason}\n")
    out.append(f"**Rule that decided:** {verdict.rule}\n")
    if verdict.knob:
        out.append(f"**Knob:** `{verdict.knob}` — {KNOB_DESCRIPTIONS.get(verdict.knob, '')}\n")
    if verdict.polluter:
        out.append(f"**Polluter:** `{verdict.polluter}`\n")
    if verdict.seed is not None:
        out.append(f"**Seed:** `--randomly-seed={verdict.seed}`\n")
    entry = verdict.known_race_entry()
    if entry:
        out.append("## Known race pattern to record\n")
        out.append("Add this entry to the known-race-patterns list:\n")
        out.append(f"```yaml\n{entry}```\n")
    out.append("## Failure rate by arm\n")
    out.append(f"```text\n{text_chart(verdict.arms)}\n```\n")
    out.append("## Evidence\n")
    out.append(
        "| phase | knob | runs | failures | rate | 95% interval | upper bound (95%, one-sided) "
        "| p (Fisher, one-sided) | p (Holm) | processes × repeat |"
    )
    out.append("|---|---|---:|---:|---:|---|---:|---:|---:|---|")
    for arm in verdict.arms:
        low, high = arm.interval
        knob = f"{arm.knob}@{arm.shard}" if arm.shard else arm.knob
        out.append(
            f"| {arm.phase} | {knob} | {arm.runs} | {arm.failures} | {_percent(arm.rate)} "
            f"| {_percent(low)} – {_percent(high)} | {_percent(arm.upper)} "
            f"| {_p(arm.p_value)} | {_p(arm.p_adjusted)} | {arm.processes} × {arm.repeat} |"
        )
    out.append("")
    if verdict.statistics:
        out.append("## Statistics\n")
        for key, value in verdict.statistics.items():
            out.append(f"- {key}: {value}")
        out.append("")
    if verdict.order:
        out.append("## Order phase\n")
        out.append(f"```json\n{json.dumps(verdict.order, indent=2)}\n```\n")
    if verdict.seeds:
        out.append("## Seed phase\n")
        out.append(f"```json\n{json.dumps(verdict.seeds, indent=2)}\n```\n")
    if verdict.notes:
        out.append("## Notes\n")
        out.extend(f"- {note}" for note in verdict.notes)
        out.append("")
    failure = verdict.first_failure
    out.append("## First failing run\n")
    if failure is None:
        out.append("No run failed.\n")
    else:
        out.append(
            f"Phase `{failure.phase}`, knob `{failure.knob}`, process {failure.process}, "
            f"iteration {failure.iteration}: {failure.message}\n"
        )
        if failure.log:
            out.append(f"Output of that process: `{failure.log}`\n")
        out.append(f"```text\n{failure.traceback}\n```\n")
    out.append("## Reproduce by hand\n")
    out.append(
        "Each command runs the test once; the arm repeated it (processes × repeat above). "
        "Loop the command, or add `--count=N` when pytest-repeat is installed.\n"
    )
    seen: set[str] = set()
    for arm in verdict.arms:
        if arm.command and arm.command not in seen:
            seen.add(arm.command)
            out.append(f"- {arm.phase} / {arm.knob}:\n\n  ```sh\n  {arm.command}\n  ```\n")
    out.append("## Environment\n")
    for key, value in verdict.environment.items():
        out.append(f"- {key}: {value}")
    out.append(f"- started: {verdict.started_at}")
    out.append(f"- finished: {verdict.finished_at}")
    out.append(f"- duration: {verdict.duration:.1f} s")
    out.append(f"- flakewarden: {verdict.version}")
    if verdict.command:
        out.append(f"- test command: `{shlex.join(verdict.command)}`")
    if verdict.shards:
        out.append(f"- merged shards: {', '.join(verdict.shards)}")
    out.append("")
    return "\n".join(out)


_PRIORITY = (DETERMINISTIC, RACE, ORDER_DEPENDENT, SEED_DEPENDENT)


def _shard_label(verdict: Verdict, fallback: str) -> str:
    runner = str(verdict.environment.get("runner") or "")
    return runner or fallback


def merge_verdicts(shards: list[Verdict], names: list[str]) -> Verdict:
    """One verdict from several runners' shards of the same test.

    A shard that found a real break, a race, or an order/seed cause decides
    (in that order): what one runner proves is not undone by another's clean
    runs. Otherwise the timing arms are pooled per knob and, as one more
    knob, each runner's baseline is tested against the other runners'
    baselines (a rate that climbs on a smaller runner is a race); all
    comparisons share one Holm family at alpha 0.05, tested once on the pooled
    counts.
    """
    if not shards:
        raise ReportError("nothing to merge")
    test_ids = {s.test_id for s in shards}
    if len(test_ids) != 1:
        raise ReportError(f"the shards are verdicts for different tests: {sorted(test_ids)}")
    labels = [_shard_label(s, n) for s, n in zip(shards, names)]
    if len(set(labels)) != len(labels):
        labels = [f"{label}#{i + 1}" for i, label in enumerate(labels)]
    arms: list[Arm] = []
    for shard, label in zip(shards, labels):
        for arm in shard.arms:
            arms.append(dataclasses.replace(arm, shard=label))
    notes = [f"{label}: {shard.verdict}: {shard.reason}" for shard, label in zip(shards, labels)]
    usable = [(s, label) for s, label in zip(shards, labels) if s.verdict != ERROR]
    base = Verdict(
        test_id=shards[0].test_id,
        verdict=ERROR,
        reason="",
        rule="",
        arms=arms,
        first_failure=next((s.first_failure for s in shards if s.first_failure), None),
        environment={"shards": {label: s.environment for s, label in zip(shards, labels)}},
        command=shards[0].command,
        started_at=min(s.started_at for s in shards),
        finished_at=max(s.finished_at for s in shards),
        duration=sum(s.duration for s in shards),
        version=shards[0].version,
        notes=notes,
        shards=labels,
    )
    if not usable:
        base.reason = "every shard failed to run the test"
        base.rule = "error: no shard could run the test"
        return base
    for name in _PRIORITY:
        for shard, label in usable:
            if shard.verdict == name:
                base.verdict = name
                base.reason = f"on {label}: {shard.reason}"
                base.rule = f"merge: a {name} shard decides; {shard.rule}"
                base.knob = None if shard.knob is None else f"{shard.knob}@{label}"
                base.polluter, base.seed = shard.polluter, shard.seed
                base.order, base.seeds = shard.order, shard.seeds
                base.statistics = shard.statistics
                return base
    pooled: dict[str, Arm] = {}
    for arm in arms:
        if arm.phase == "timing" and any(arm.shard == label for _, label in usable):
            total = pooled.setdefault(arm.knob, Arm("timing", arm.knob, shard="pooled"))
            total.runs += arm.runs
            total.failures += arm.failures
            total.processes += arm.processes
    baseline = pooled.get("baseline", Arm("timing", "baseline", shard="pooled"))
    raw: dict[str, float] = {}
    for knob, arm in pooled.items():
        if knob != "baseline":
            raw[knob] = stats.fisher_greater(
                baseline.failures, baseline.runs, arm.failures, arm.runs
            )
    shard_baselines = [
        a for a in arms if a.phase == "timing" and a.knob == "baseline" and a.shard in labels
    ]
    if len(shard_baselines) > 1:
        for arm in shard_baselines:
            rest_runs = baseline.runs - arm.runs
            rest_failures = baseline.failures - arm.failures
            raw[f"runner:{arm.shard}"] = stats.fisher_greater(
                rest_failures, rest_runs, arm.failures, arm.runs
            )
    adjusted = stats.holm(raw) if raw else {}
    for knob, arm in pooled.items():
        arm.p_value, arm.p_adjusted = raw.get(knob), adjusted.get(knob)
    base.arms = arms + list(pooled.values())
    base.statistics = {
        "test": "one-sided Fisher exact test on counts pooled over shards",
        "multiplicity": f"Holm across {len(raw)} comparisons (knobs and runners)",
        "alpha": stats.ALPHA,
        "p_values": raw,
        "p_adjusted": adjusted,
    }
    hits = sorted((k for k, p in adjusted.items() if p < stats.ALPHA), key=lambda k: adjusted[k])
    runs = sum(a.runs for a in arms)
    failures = sum(a.failures for a in arms)
    if hits:
        knob = hits[0]
        base.verdict, base.knob = RACE, knob
        base.reason = f"pooled over {len(usable)} runners, the failure rate climbs under {knob}" + (
            " (this runner fails more often than the others)" if knob.startswith("runner:") else ""
        )
        base.rule = (
            f"merge race: Holm-adjusted one-sided Fisher p = {adjusted[knob]:.3g} < {stats.ALPHA}"
        )
    elif failures:
        base.verdict = FLAKY
        base.reason = (
            f"failed {failures} of {runs} runs over {len(usable)} runners at a flat rate; "
            "no knob and no runner raised it significantly"
        )
        base.rule = f"merge flaky: no Holm-adjusted p below {stats.ALPHA}"
    else:
        base.verdict = NOT_REPRODUCIBLE
        base.reason = (
            f"no failure in {runs} runs over {len(usable)} runners; the failure rate is below "
            f"{100 * stats.upper_bound(0, runs):.2f}% (95% one-sided Clopper-Pearson). "
            "This is not evidence that it is not a race."
        )
        base.rule = "merge not-reproducible: zero failures on every shard"
    return base
