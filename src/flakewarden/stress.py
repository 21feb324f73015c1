"""Stress-running one test until the evidence supports a verdict.

The phases, in order, each one only when the previous ones left the question open:

1. probe: the user's command once, selecting the test: can it run at all, is
   pytest-randomly in use, what did pytest parse as positional arguments.
2. isolation: fixed order and seed; every one of the first runs failing is a
   real break (``deterministic``), decided early.
3. order (``--order-from``, isolation clean): replay the test's predecessors in
   the recorded order and bisect to the polluter.
4. seed (pytest-randomly in use): sweep seeds, then confirm that a failing seed
   fails every time and a passing seed never does.
5. timing: interleaved rounds of baseline, switch interval 1e-5 and CPU burners
   at 1x and 2x the cores, compared with a group-sequential rule (``stats``).

Each run's outcome comes from the plugin's per-test records, never from an
exit code: a collection or plugin error is not a test failure.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import os
import platform
import shlex
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Callable, Optional

from . import __version__, pytest_args, stats
from .errors import UsageError
from .model import AttemptOutcome, RunReport, TestRecord, first_line
from .process import plugin_dir, plugin_env, resolve_executable
from .results import ProcessResults, read_results
from .stress_pool import ChildSpec, burners, run_all
from .verdict import (
    DETERMINISTIC,
    ERROR,
    FLAKY,
    KNOB_DESCRIPTIONS,
    NOT_REPRODUCIBLE,
    ORDER_DEPENDENT,
    RACE,
    SEED_DEPENDENT,
    Arm,
    Failure,
    Verdict,
)

SWITCH_INTERVAL = "1e-05"
ISOLATION_PROCESSES = 2
ISOLATION_REPEAT = 5
SEEDS_TO_SWEEP = 20
SEED_REPEAT = 2
SEED_CONFIRM_PROCESSES = 4
ORDER_REPLAYS = 2
ORDER_CONFIRM = 5
MAX_REPEAT = 20
MIN_REPEAT = 5
TARGET_PROCESS_SECONDS = 2.0
NO_RANDOMLY = ["-p", "no:randomly"]
# Options that would change what one stress process runs: our plugin repeats and selects.
STRESS_DROP = {
    "-n": True,
    "--numprocesses": True,
    "--dist": True,
    "--maxprocesses": True,
    "--count": True,
    "--repeat-scope": True,
    "--reruns": True,
    "--reruns-delay": True,
    "--only-rerun": True,
    "--randomly-seed": True,
    "--tb": True,
}

Say = Callable[[str], None]


@dataclasses.dataclass
class StressOptions:
    test_id: str
    command: list[str]
    cwd: Path
    report_dir: Path
    runs: int = 200
    budget_seconds: float = 600.0
    order_from: Optional[Path] = None
    cores: int = dataclasses.field(default_factory=lambda: os.cpu_count() or 1)


@dataclasses.dataclass
class Job:
    """One fresh process of the test command."""

    phase: str
    knob: str
    ids: list[str]
    repeat: int = 1
    args: list[str] = dataclasses.field(default_factory=list)
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    ordered: bool = False


@dataclasses.dataclass
class JobResult:
    job: Job
    number: int
    directory: Path
    results: ProcessResults
    records: list[TestRecord]  # the target's records only
    exit_code: Optional[int]
    timed_out: bool

    @property
    def died(self) -> bool:
        """The process started the target's iterations but did not finish them."""
        return self.results.started and (self.timed_out or len(self.records) < self.job.repeat)


def _strip(args: Sequence[str], table: dict[str, bool]) -> list[str]:
    kept: list[str] = []
    skip = False
    for token in args:
        if skip:
            skip = False
            continue
        name = token.split("=", 1)[0] if token.startswith("--") else token[:2]
        if name in table:
            inline = "=" in token if token.startswith("--") else len(token) > 2
            skip = table[name] and not inline
            continue
        kept.append(token)
    return kept


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def environment(cores: int, probe: Optional[ProcessResults]) -> dict[str, object]:
    config = (probe.config if probe else None) or {}
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "python": sys.version.split()[0],
        "tested_python": config.get("python", ""),
        "pytest": config.get("pytest", ""),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cores": cores,
        "load_average": None if load is None else [round(v, 2) for v in load],
        "runner": os.environ.get("FLAKEWARDEN_RUNNER") or os.environ.get("RUNNER_NAME") or "",
    }


class Stress:
    """One stress run of one test; ``run()`` returns the verdict."""

    def __init__(self, options: StressOptions, say: Say) -> None:
        self.options = options
        self.say = say
        self.started = time.monotonic()
        self.started_at = _now()
        self.number = 0
        self.arms: list[Arm] = []
        self.first_failure: Optional[Failure] = None
        self.notes: list[str] = []
        self.prefix: list[str] = list(options.command)
        self.base_args: list[str] = []
        self.rootdir = options.cwd
        self.executable = sys.executable
        self.plugin = Path()
        self.test_seconds = 0.01
        self.probe: Optional[ProcessResults] = None
        self.split: Optional[pytest_args.PytestCommand] = None
        self.positionals: list[str] = []

    # -- plumbing ---------------------------------------------------------------

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def over_budget(self) -> bool:
        return self.elapsed() > self.options.budget_seconds

    def command_for(self, job: Job) -> list[str]:
        if self.split is None:
            return [*self.prefix, *self.base_args, *job.args]
        args = pytest_args.rerun_args(
            self.split.args, positionals=self.positionals, node_ids=job.ids, rootdir=self.rootdir
        )
        return [*self.split.prefix, *_strip(args, STRESS_DROP), "--tb=long", *job.args]

    def _process_timeout(self, job: Job) -> float:
        return max(60.0, 30 * (2.0 + job.repeat * self.test_seconds))

    def run_jobs(self, jobs: Sequence[Job], parallel: int, burn: int = 0) -> list[JobResult]:
        specs: list[ChildSpec] = []
        directories: list[Path] = []
        numbers: list[int] = []
        for job in jobs:
            self.number += 1
            directory = (
                self.options.report_dir / "processes" / f"{self.number:04d}-{job.phase}-{job.knob}"
            )
            directory.mkdir(parents=True, exist_ok=True)
            ids_file = directory / "select.json"
            ids_file.write_text(json.dumps(job.ids, ensure_ascii=False), encoding="utf-8")
            extra = {"FLAKEWARDEN_REPEAT": str(job.repeat), **job.env}
            if job.ordered:
                extra["FLAKEWARDEN_ORDER"] = str(ids_file)
            env = plugin_env(
                self.plugin,
                directory / "results.jsonl",
                select=None if job.ordered else ids_file,
                extra=extra,
            )
            if "FLAKEWARDEN_SWITCH_INTERVAL" not in job.env:
                env.pop("FLAKEWARDEN_SWITCH_INTERVAL", None)
            specs.append(
                ChildSpec(
                    self.command_for(job),
                    self.options.cwd,
                    env,
                    directory / "output.log",
                    self._process_timeout(job),
                )
            )
            directories.append(directory)
            numbers.append(self.number)
        if burn:
            with burners(burn):
                outcomes = run_all(specs, parallel)
        else:
            outcomes = run_all(specs, parallel)
        out: list[JobResult] = []
        for job, number, directory, outcome in zip(jobs, numbers, directories, outcomes):
            results = read_results(directory / "results.jsonl")
            records = [r for r in results.tests if r.id == self.options.test_id]
            out.append(
                JobResult(
                    job, number, directory, results, records, outcome.exit_code, outcome.timed_out
                )
            )
        return out

    def tally(self, arm: Arm, results: Sequence[JobResult]) -> None:
        """Add each finished run to ``arm``; a process that died mid-test counts one failure."""
        for result in results:
            arm.processes += 1
            for record in result.records:
                outcome = record.outcome
                if outcome == AttemptOutcome.SKIPPED:
                    arm.skipped += 1
                    continue
                arm.add(outcome.is_failure)
                if outcome.is_failure:
                    self._remember(
                        result, record.iteration, first_line(record.longrepr), record.longrepr
                    )
            if result.died:
                arm.crashed += 1
                arm.add(True)
                why = "timed out" if result.timed_out else f"exited with {result.exit_code}"
                tail = _tail(result.directory / "output.log")
                self._remember(result, len(result.records), f"the process {why} mid-test", tail)

    def _remember(self, result: JobResult, iteration: int, message: str, text: str) -> None:
        if self.first_failure is not None:
            return
        self.first_failure = Failure(
            phase=result.job.phase,
            knob=result.job.knob,
            process=result.number,
            iteration=iteration,
            message=message,
            traceback=text,
            log=str((result.directory / "output.log").relative_to(self.options.report_dir)),
        )

    def reproduce(
        self, ids: Sequence[str], *, knob: str = "baseline", seed: Optional[int] = None
    ) -> str:
        """A command a human can paste, from the rootdir, without flakewarden."""
        located = pytest_args.locate(self.options.command)
        if located is not None and located.prefix[-2:] == ["-m", "pytest"]:
            python = located.prefix[:-2]
        else:
            python = [self.executable]
        randomly = (
            ["-p", "randomly", f"--randomly-seed={seed}"] if seed is not None else NO_RANDOMLY
        )
        args = [*randomly, "--tb=long", *ids]
        if knob == "switch-interval":
            code = (
                f"import sys; sys.setswitchinterval({SWITCH_INTERVAL}); import pytest; "
                "raise SystemExit(pytest.main(sys.argv[1:]))"
            )
            line = shlex.join([*python, "-c", code, *args])
        else:
            line = shlex.join([*python, "-m", "pytest", *args])
        if knob.startswith("burn-"):
            count = self.options.cores * int(knob[5:-1])
            line = (
                f"for i in $(seq {count}); do python3 -c 'while True: pass' & done; "
                f"{line}; kill $(jobs -p)"
            )
        return f"cd {shlex.quote(str(self.rootdir))} && {line}"

    def verdict(self, name: str, reason: str, rule: str, **fields: object) -> Verdict:
        result = Verdict(
            test_id=self.options.test_id,
            verdict=name,
            reason=reason,
            rule=rule,
            arms=self.arms,
            first_failure=self.first_failure,
            environment=environment(self.options.cores, self.probe),
            command=self.options.command,
            started_at=self.started_at,
            finished_at=_now(),
            duration=self.elapsed(),
            version=__version__,
            notes=self.notes,
        )
        for key, value in fields.items():
            setattr(result, key, value)
        return result

    # -- phases -------------------------------------------------------------------

    def run(self) -> Verdict:
        resolve_executable(self.options.command, self.options.cwd)
        report_dir = self.options.report_dir
        shutil.rmtree(report_dir / "processes", ignore_errors=True)
        report_dir.mkdir(parents=True, exist_ok=True)
        with plugin_dir() as plugin:
            self.plugin = plugin
            return self._phases()

    def _phases(self) -> Verdict:
        broken = self._probe()
        if broken is not None:
            return broken
        isolation = self._isolation()
        if isolation.runs and isolation.failures == isolation.runs:
            return self.verdict(
                DETERMINISTIC,
                f"failed all {isolation.runs} of its first runs in {isolation.processes} fresh "
                "processes, in a fixed order and seed: a real break, not a flake",
                f"deterministic: every one of the first {ISOLATION_PROCESSES} x "
                f"{ISOLATION_REPEAT} isolated runs failed",
            )
        if self.options.order_from is not None and isolation.failures == 0:
            found = self._order()
            if found is not None:
                return found
        assert self.probe is not None and self.probe.config is not None
        if self.probe.config.get("randomly_seed") is not None:
            found = self._seeds()
            if found is not None:
                return found
        return self._timing(isolation)

    def _probe(self) -> Optional[Verdict]:
        test_id = self.options.test_id
        self.say(f"probe: running {test_id} once with the command as given")
        [result] = self.run_jobs([Job("probe", "as-given", [test_id])], 1)
        self.probe = result.results
        config = result.results.config
        if config is None:
            tail = _tail(result.directory / "output.log")
            if result.exit_code == 4:
                raise UsageError(f"pytest rejected the command: {first_line(tail) or tail[-300:]}")
            self.first_failure = Failure(
                "probe", "as-given", result.number, 0, first_line(tail), tail
            )
            return self.verdict(
                ERROR,
                f"pytest never started its session with the flakewarden plugin "
                f"(exit code {result.exit_code}): {first_line(tail)}",
                "error: the test cannot run",
            )
        self.rootdir = Path(str(config.get("rootdir") or self.options.cwd))
        self.executable = str(config.get("executable") or sys.executable)
        self.split = pytest_args.split_with_invocation(self.options.command, config.get("args", []))
        self.positionals = [str(p) for p in config.get("file_or_dir", [])]
        if self.split is None:
            self.notes.append(
                "the command does not start pytest directly, so every process collects "
                "what the command collects and the plugin selects the test"
            )
            self.base_args = ["--tb=long"]
        if not result.records:
            if result.results.collect_errors:
                where, text = result.results.collect_errors[0]
                self.first_failure = Failure(
                    "probe", "as-given", result.number, 0, first_line(text), text
                )
                return self.verdict(
                    ERROR,
                    f"the test cannot be collected: {first_line(text)} (in {where or '.'})",
                    "error: collection failed, so no run of the test could start",
                )
            raise UsageError(
                f"{test_id} was not collected (rootdir {self.rootdir}); "
                "give the node id as pytest prints it, e.g. tests/test_x.py::test_y"
            )
        durations = [r.duration for r in result.records]
        self.test_seconds = max(0.001, sum(durations) / len(durations))
        if all(r.outcome == AttemptOutcome.SKIPPED for r in result.records):
            text = result.records[0].phases[-1].longrepr if result.records[0].phases else ""
            return self.verdict(
                ERROR,
                f"the test is skipped, so it cannot be stressed: {text}",
                "error: the test did not run",
            )
        return None

    def _isolation(self) -> Arm:
        self.say(f"isolation: {ISOLATION_PROCESSES} processes x {ISOLATION_REPEAT} runs")
        arm = Arm(
            "isolation",
            "baseline",
            repeat=ISOLATION_REPEAT,
            command=self.reproduce([self.options.test_id]),
        )
        jobs = [
            Job("isolation", "baseline", [self.options.test_id], ISOLATION_REPEAT, NO_RANDOMLY)
            for _ in range(ISOLATION_PROCESSES)
        ]
        self.tally(arm, self.run_jobs(jobs, self.options.cores))
        self.arms.append(arm)
        return arm

    # -- order ----------------------------------------------------------------------

    def _order(self) -> Optional[Verdict]:
        assert self.options.order_from is not None
        test_id = self.options.test_id
        try:
            report = RunReport.from_json(
                json.loads(self.options.order_from.read_text(encoding="utf-8"))
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"cannot read --order-from {self.options.order_from}: {exc}") from exc
        if test_id not in report.order:
            self.notes.append(
                f"order: {test_id} is not in the run order of {self.options.order_from}"
            )
            return None
        before = report.order[: report.order.index(test_id)]
        detail: dict[str, object] = {
            "source": str(self.options.order_from),
            "predecessors": len(before),
        }
        if not before:
            self.notes.append(
                "order: the test ran first in its recorded run; no predecessor to blame"
            )
            return None
        self.say(f"order: replaying {len(before)} predecessors in the recorded order")
        replay = Arm("order", "after-predecessors", command=self.reproduce([*before, test_id]))
        self.arms.append(replay)
        if not self._fails_after(before, replay, ORDER_REPLAYS + 1):
            detail["reproduced"] = False
            self.notes.append(
                f"order: replaying the {len(before)} predecessors in order did not reproduce "
                f"({replay.failures}/{replay.runs})"
            )
            return None
        candidates = list(before)
        steps: list[dict[str, object]] = []
        while len(candidates) > 1 and not self.over_budget():
            half = len(candidates) // 2
            first, second = candidates[:half], candidates[half:]
            probe_arm = Arm("order", "bisect")
            if self._fails_after(first, probe_arm, ORDER_REPLAYS):
                candidates = first
            elif self._fails_after(second, probe_arm, ORDER_REPLAYS):
                candidates = second
            else:
                steps.append({"tried": len(first) + len(second), "result": "needs both halves"})
                break
            steps.append(
                {"kept": len(candidates), "runs": probe_arm.runs, "failures": probe_arm.failures}
            )
        detail["bisection"] = steps
        polluter = " + ".join(candidates)
        confirm = Arm("order", "after-polluter", command=self.reproduce([*candidates, test_id]))
        self.arms.append(confirm)
        self._fails_after(candidates, confirm, ORDER_CONFIRM)
        isolation = next(a for a in self.arms if a.phase == "isolation")
        p = stats.fisher_greater(isolation.failures, isolation.runs, confirm.failures, confirm.runs)
        confirm.p_value = p
        detail["polluters"] = candidates
        detail["confirm"] = {"runs": confirm.runs, "failures": confirm.failures, "p_value": p}
        if p < stats.ALPHA:
            return self.verdict(
                ORDER_DEPENDENT,
                f"passes alone ({isolation.failures}/{isolation.runs} failures) but failed "
                f"{confirm.failures}/{confirm.runs} times right after {polluter}",
                "order-dependent: one-sided Fisher exact test of failures right after the "
                f"polluter against isolation, p = {p:.3g} < {stats.ALPHA}",
                polluter=polluter,
                order=detail,
            )
        self.notes.append(
            f"order: bisection ended at {polluter} but it did not confirm (p = {p:.3g})"
        )
        return None

    def _fails_after(self, before: Sequence[str], arm: Arm, processes: int) -> bool:
        ids = [*before, self.options.test_id]
        job = Job("order", arm.knob, ids, 1, NO_RANDOMLY, ordered=True)
        results = self.run_jobs([job] * processes, self.options.cores)
        failures = arm.failures
        self.tally(arm, results)
        return arm.failures > failures

    # -- seed -------------------------------------------------------------------------

    def _seed_jobs(self, seed: int, processes: int, repeat: int) -> list[Job]:
        args = ["-p", "randomly", f"--randomly-seed={seed}"]
        return [
            Job("seed", str(seed), [self.options.test_id], repeat, args) for _ in range(processes)
        ]

    def _seeds(self) -> Optional[Verdict]:
        self.say(f"seed: sweeping {SEEDS_TO_SWEEP} pytest-randomly seeds")
        seeds = list(range(1, SEEDS_TO_SWEEP + 1))
        jobs = [job for seed in seeds for job in self._seed_jobs(seed, 1, SEED_REPEAT)]
        sweep = Arm("seed", "sweep", repeat=SEED_REPEAT)
        results = self.run_jobs(jobs, self.options.cores)
        self.tally(sweep, results)
        self.arms.append(sweep)
        failing = [
            seed
            for seed, result in zip(seeds, results)
            if result.died or any(r.outcome.is_failure for r in result.records)
        ]
        passing = [s for s in seeds if s not in failing]
        detail: dict[str, object] = {"seeds_tried": seeds, "failing_seeds": failing}
        if not failing or not passing:
            self.notes.append(
                f"seed: {len(failing)} of {len(seeds)} seeds failed; "
                + ("no seed to confirm" if not failing else "every seed failed")
            )
            return None
        bad, good = failing[0], passing[0]
        self.say(f"seed: confirming seed {bad} (failed) against seed {good} (passed)")
        bad_arm = Arm(
            "seed",
            f"seed={bad}",
            repeat=SEED_REPEAT,
            command=self.reproduce([self.options.test_id], seed=bad),
        )
        good_arm = Arm(
            "seed",
            f"seed={good}",
            repeat=SEED_REPEAT,
            command=self.reproduce([self.options.test_id], seed=good),
        )
        confirm = self.run_jobs(
            [
                *self._seed_jobs(bad, SEED_CONFIRM_PROCESSES, SEED_REPEAT),
                *self._seed_jobs(good, SEED_CONFIRM_PROCESSES, SEED_REPEAT),
            ],
            self.options.cores,
        )
        self.tally(bad_arm, confirm[:SEED_CONFIRM_PROCESSES])
        self.tally(good_arm, confirm[SEED_CONFIRM_PROCESSES:])
        self.arms.extend([bad_arm, good_arm])
        p = stats.fisher_greater(good_arm.failures, good_arm.runs, bad_arm.failures, bad_arm.runs)
        bad_arm.p_value = p
        detail["confirm"] = {
            "failing_seed": bad_arm.to_json(),
            "passing_seed": good_arm.to_json(),
            "p_value": p,
        }
        if (
            bad_arm.runs
            and bad_arm.failures == bad_arm.runs
            and good_arm.failures == 0
            and p < stats.ALPHA
        ):
            return self.verdict(
                SEED_DEPENDENT,
                f"failed under {len(failing)} of {len(seeds)} pytest-randomly seeds; seed {bad} "
                f"failed {bad_arm.failures}/{bad_arm.runs} runs in fresh processes and seed "
                f"{good} passed all {good_arm.runs}",
                "seed-dependent: a failing seed failed every confirmation run and a passing "
                f"seed passed every one (one-sided Fisher p = {p:.3g} < {stats.ALPHA})",
                seed=bad,
                seeds=detail,
            )
        self.notes.append(
            f"seed: seed {bad} failed {bad_arm.failures}/{bad_arm.runs} and seed {good} failed "
            f"{good_arm.failures}/{good_arm.runs} on confirmation: "
            "the seed does not decide the outcome"
        )
        return None

    # -- timing -------------------------------------------------------------------------

    def _timing(self, isolation: Arm) -> Verdict:
        options = self.options
        repeat = int(min(MAX_REPEAT, max(MIN_REPEAT, TARGET_PROCESS_SECONDS / self.test_seconds)))
        repeat = min(repeat, max(1, options.runs))
        rounds = max(1, math.ceil(options.runs / repeat))
        plan = stats.SequentialPlan(looks=rounds)
        test_id = [options.test_id]
        knobs = ["switch-interval", "burn-1x", "burn-2x"]
        arms = {
            name: Arm("timing", name, repeat=repeat, command=self.reproduce(test_id, knob=name))
            for name in ["baseline", *knobs]
        }
        self.arms.extend(arms.values())
        cores = options.cores
        steps: list[tuple[str, Callable[[], None]]] = [
            ("unloaded", lambda: self._unloaded_step(arms, repeat)),
            ("burn-1x", lambda: self._burn_step(arms["burn-1x"], repeat, cores)),
            ("burn-2x", lambda: self._burn_step(arms["burn-2x"], repeat, 2 * cores)),
        ]
        significant: list[str] = []
        looks = 0
        self.say(f"timing: up to {rounds} interleaved rounds of {repeat} runs per knob")
        for round_number in range(rounds):
            if self.over_budget():
                self.notes.append(
                    f"timing: the {options.budget_seconds:g} s budget ended the phase "
                    f"after {looks} rounds"
                )
                break
            shift = round_number % len(steps)
            for _, step in steps[shift:] + steps[:shift]:
                step()
            looks += 1
            base = arms["baseline"]
            raw = {
                k: stats.fisher_greater(base.failures, base.runs, arms[k].failures, arms[k].runs)
                for k in knobs
            }
            adjusted = stats.holm(raw)
            for k in knobs:
                arms[k].p_value, arms[k].p_adjusted = raw[k], adjusted[k]
            significant = plan.significant(adjusted)
            if significant:
                break
        statistics: dict[str, object] = {
            "test": "one-sided Fisher exact test, each knob against the interleaved baseline",
            "multiplicity": f"Holm across {len(knobs)} knobs",
            "sequential_rule": plan.describe(),
            "alpha": plan.alpha,
            "alpha_per_look": plan.alpha_per_look,
            "looks_planned": rounds,
            "looks_taken": looks,
            "runs_per_process": repeat,
            "intervals": "two-sided 95% Clopper-Pearson; upper bounds one-sided 95%",
        }
        if significant:
            knob = significant[0]
            arm, base = arms[knob], arms["baseline"]
            others = [k for k in significant[1:]]
            return self.verdict(
                RACE,
                f"the failure rate climbs under {knob} ({KNOB_DESCRIPTIONS[knob]}): "
                f"{arm.failures}/{arm.runs} against {base.failures}/{base.runs} at baseline"
                + (f"; also significant: {', '.join(others)}" if others else ""),
                f"race: Holm-adjusted one-sided Fisher p = {arm.p_adjusted:.3g} < "
                f"{plan.alpha_per_look:.4g} (alpha {plan.alpha:g} over {rounds} planned looks) "
                f"at look {looks}",
                knob=knob,
                statistics=statistics,
            )
        timing_arms = list(arms.values())
        failures = sum(a.failures for a in self.arms)
        runs = sum(a.runs for a in self.arms)
        tried = ", ".join(a.knob for a in timing_arms)
        smallest = min((arms[k].p_adjusted or 1.0 for k in knobs), default=1.0)
        if failures:
            return self.verdict(
                FLAKY,
                f"failed {failures} of {runs} runs at a flat rate: no knob ({', '.join(knobs)}) "
                f"raised it significantly (smallest Holm-adjusted p = {smallest:.3g})",
                f"flaky: it reproduces, and no knob crossed the sequential threshold "
                f"{plan.alpha_per_look:.4g} in {looks} looks",
                statistics=statistics,
            )
        pooled = stats.upper_bound(0, runs)
        per_knob = "; ".join(
            f"{a.knob} < {100 * a.upper:.2f}% ({a.runs} runs)" for a in timing_arms
        )
        phases = ["isolation", "timing"]
        if any(a.phase == "order" for a in self.arms):
            phases.append("order")
        if any(a.phase == "seed" for a in self.arms):
            phases.append("seed")
        return self.verdict(
            NOT_REPRODUCIBLE,
            f"no failure in {runs} runs (phases: {', '.join(phases)}; knobs: {tried}); the "
            f"failure rate is below {100 * pooled:.2f}% overall and per knob {per_knob} "
            "(95% one-sided Clopper-Pearson). This is not evidence that it is not a race.",
            "not-reproducible: zero failures under every phase and knob tried",
            statistics=statistics,
        )

    def _unloaded_step(self, arms: dict[str, Arm], repeat: int) -> None:
        """Baseline and switch-interval processes, leaving half the cores idle.

        Running more at once would load the machine and raise the baseline's
        rate for exactly the timing-sensitive tests the burners are meant to
        expose, so the unloaded arms only use up to half of the cores.
        """
        per_arm = max(1, self.options.cores // 4)
        test_id = [self.options.test_id]
        jobs = [Job("timing", "baseline", test_id, repeat, NO_RANDOMLY) for _ in range(per_arm)]
        jobs += [
            Job(
                "timing",
                "switch-interval",
                test_id,
                repeat,
                NO_RANDOMLY,
                {"FLAKEWARDEN_SWITCH_INTERVAL": SWITCH_INTERVAL},
            )
            for _ in range(per_arm)
        ]
        results = self.run_jobs(jobs, max(1, self.options.cores // 2))
        self.tally(arms["baseline"], results[:per_arm])
        self.tally(arms["switch-interval"], results[per_arm:])

    def _burn_step(self, arm: Arm, repeat: int, count: int) -> None:
        """One test process while ``count`` burners hold the cores."""
        job = Job("timing", arm.knob, [self.options.test_id], repeat, NO_RANDOMLY)
        self.tally(arm, self.run_jobs([job], 1, burn=count))


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return text[-limit:].strip()
