"""The plumbing of a stress run: building each process's command, running it, counting its runs.

``StressProcesses`` is the one service the engine owns and hands to every phase:
it numbers the process directories, launches through the fork server once the
probe has run, and tallies runs into arms. ``Probe`` is what the probe learned
that every later process's command is built from.

Every process runs the user's pytest command with the selection replaced
(the test's file, ``--rootdir`` pinned, exact node ids through the plugin),
``--tb=long`` for complete tracebacks, and the plugin's repeat knob. A run's
outcome is read from the plugin's per-test records, never from the exit code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import platform
import random
import shlex
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Callable, Optional

from flakewarden.model import AttemptOutcome, TestRecord, first_line
from flakewarden.outside_json import read_tail
from flakewarden.runner import pytest_args
from flakewarden.runner.process import plugin_env
from flakewarden.runner.process_results import ProcessResults, read_results
from flakewarden.stress.arm import Arm, Sample
from flakewarden.stress.knobs import (
    CONCURRENCY_VARIABLE,
    KNOB_VARIABLES,
    RANDOM_SEED_VARIABLE,
    SWITCH_INTERVAL,
)
from flakewarden.stress.launcher import SPAWN, Launcher
from flakewarden.stress.pool import ChildSpec, Throttle, burners, run_all
from flakewarden.stress.sequential import DEFAULT_MARGIN, Margin
from flakewarden.stress.verdict import Failure

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
DEFAULT_TEST_SECONDS = 0.01  # before the probe has timed the test


@dataclasses.dataclass
class StressOptions:
    test_id: str
    command: list[str]
    cwd: Path
    report_dir: Path
    runs: Optional[int] = None  # at most this many runs per timing arm; None: the budget decides
    budget_seconds: float = 600.0
    order_from: Optional[Path] = None
    margin: Margin = DEFAULT_MARGIN
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
    # The paths pytest collects (its positional arguments) instead of the ids' files, while
    # the plugin still runs only ``ids``; [] collects what pytest collects with none.
    collect: Optional[list[str]] = None


@dataclasses.dataclass
class JobResult:
    job: Job
    number: int
    directory: Path
    results: ProcessResults
    records: list[TestRecord]  # the target's records only
    exit_code: Optional[int]
    timed_out: bool
    hash_seed: Optional[int] = None  # the process's PYTHONHASHSEED, when the engine set it

    def at_iteration(self, iteration: int) -> JobResult:
        """This process as if it had run only its ``iteration``-th run (a replay's last)."""
        records = [r for r in self.records if r.iteration == iteration]
        job = dataclasses.replace(self.job, repeat=1)
        return dataclasses.replace(self, job=job, records=records)

    @property
    def died(self) -> bool:
        """The process started the target's iterations but did not finish them."""
        return self.results.started and (self.timed_out or len(self.records) < self.job.repeat)


def uses_randomly(args: Sequence[str]) -> bool:
    """The process loads pytest-randomly (``-p randomly``): its seed decides the draws then."""
    return any(a == "randomly" and b == "-p" for b, a in zip(args, args[1:]))


def now_iso() -> str:
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


@dataclasses.dataclass(frozen=True)
class Probe:
    """What the probe learned about how the command runs the test."""

    results: ProcessResults  # the probe process's session (the environment reads its config)
    rootdir: Path
    executable: str
    split: Optional[pytest_args.PytestCommand]  # None: the command does not start pytest directly
    positionals: tuple[str, ...] = ()
    base_args: tuple[str, ...] = ()  # what every process adds when the plugin selects the test
    test_seconds: float = DEFAULT_TEST_SECONDS  # the test's mean duration in the probe
    randomly: bool = False  # pytest-randomly is in use
    # Why collection was narrowed to the test's module ("" when it was not): what the
    # command collects fails to collect elsewhere.
    narrowed: str = ""

    def reproduce(
        self,
        command: Sequence[str],
        ids: Sequence[str],
        *,
        knob: str = "baseline",
        seed: Optional[int] = None,
        burners: int = 0,
        run_share: float = 0.0,
        replay: str = "",
    ) -> str:
        """A command a human can paste, from the rootdir, without flakewarden.

        ``replay`` is a seeded knob's variable (``FLAKEWARDEN_YIELD=...``): that knob is
        the plugin's, so the command loads it from the installed flakewarden package.
        """
        located = pytest_args.locate(list(command))
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
        elif replay:
            plugin = ["-p", "flakewarden.inside.plugin"]
            line = f"{replay} " + shlex.join([*python, "-m", "pytest", *plugin, *args])
        else:
            line = shlex.join([*python, "-m", "pytest", *args])
        if burners:
            line = (
                f"for i in $(seq {burners}); do python3 -c 'while True: pass' & done; "
                f"{line}; kill $(jobs -p)"
            )
        if run_share:
            period = 0.02
            on, off = period * run_share, period * (1 - run_share)
            line = (
                f"{line} & p=$!; while kill -STOP $p 2>/dev/null; do sleep {off:.4f}; "
                f"kill -CONT $p; sleep {on:.4f}; done; wait $p"
            )
        return f"cd {shlex.quote(str(self.rootdir))} && {line}"


class StressProcesses:
    """The processes of one stress run: starts them, numbers their directories, counts runs.

    The engine owns one and hands it to every phase as a service; its only state
    is the process counter and how processes were launched, never a phase's evidence.
    """

    def __init__(self, options: StressOptions, plugin: Path) -> None:
        self.options = options
        self.plugin = plugin
        self.number = 0
        # How processes start: "fork server" or "spawn" (see launcher.py), and why any spawned.
        self.launch: Optional[Launcher] = None
        self.launcher = SPAWN
        self.launcher_note = ""

    def now(self) -> float:
        """The clock the budget is measured on."""
        return time.monotonic()

    def command_for(self, job: Job, probe: Optional[Probe]) -> list[str]:
        split = None if probe is None else probe.split
        if probe is None or split is None:
            base_args = [] if probe is None else list(probe.base_args)
            return [*self.options.command, *base_args, *job.args]
        args = pytest_args.rerun_args(
            split.args,
            positionals=list(probe.positionals),
            node_ids=job.ids if job.collect is None else [],
            rootdir=probe.rootdir,
        )
        if job.collect is not None:
            args += job.collect
        return [*split.prefix, *pytest_args.drop_options(args, STRESS_DROP), "--tb=long", *job.args]

    @staticmethod
    def _process_timeout(job: Job, probe: Optional[Probe]) -> float:
        test_seconds = DEFAULT_TEST_SECONDS if probe is None else probe.test_seconds
        return max(60.0, 30 * (2.0 + job.repeat * test_seconds))

    @contextlib.contextmanager
    def launching(self) -> Iterator[None]:
        """While the block runs, processes after the probe may be forked from a fork server."""
        with Launcher() as launch:
            self.launch = launch
            try:
                yield
            finally:
                self.launch = None
                self.launcher, self.launcher_note = launch.mechanism, launch.note

    def launched(self) -> dict[str, object]:
        """How the fresh processes were started, for ``verdict.json``."""
        return {"mechanism": self.launcher, "note": self.launcher_note}

    def run_jobs(
        self,
        jobs: Sequence[Job],
        parallel: int,
        burn: int = 0,
        *,
        throttle: Optional[Throttle] = None,
        probe: Optional[Probe] = None,
    ) -> list[JobResult]:
        """Run the jobs, ``parallel`` at a time; ``probe`` is what the probe learned, if it ran."""
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
            extra = {"FLAKEWARDEN_REPEAT": str(job.repeat), CONCURRENCY_VARIABLE: "1", **job.env}
            if RANDOM_SEED_VARIABLE not in job.env and not uses_randomly(job.args):
                # Each process's generators from a seed of its own, recorded with each run.
                extra[RANDOM_SEED_VARIABLE] = str(random.SystemRandom().randrange(1, 2**31))
            if job.ordered:
                extra["FLAKEWARDEN_ORDER"] = str(ids_file)
            env = plugin_env(
                self.plugin,
                directory / "results.jsonl",
                select=None if job.ordered else ids_file,
                extra=extra,
            )
            for variable in KNOB_VARIABLES:  # a knob runs only where its arm sets it
                if variable not in extra:
                    env.pop(variable, None)
            specs.append(
                ChildSpec(
                    self.command_for(job, probe),
                    self.options.cwd,
                    env,
                    directory / "output.log",
                    self._process_timeout(job, probe),
                )
            )
            directories.append(directory)
            numbers.append(self.number)
        launch = self.launch if probe is not None and specs else None
        server = None
        if launch is not None:  # decided once the probe has shown how the command starts pytest
            assert probe is not None
            server = launch.server_for(probe.split, self.plugin, self.options.cwd, specs[0].env)
        with burners(burn) if burn else contextlib.nullcontext():
            outcomes = run_all(specs, parallel, server=server, throttle=throttle)
        if launch is not None:
            self.launcher, self.launcher_note = launch.mechanism, launch.note
        out: list[JobResult] = []
        for job, number, directory, outcome in zip(jobs, numbers, directories, outcomes):
            results = read_results(directory / "results.jsonl")
            records = [r for r in results.tests if r.id == self.options.test_id]
            out.append(
                JobResult(
                    job,
                    number,
                    directory,
                    results,
                    records,
                    outcome.exit_code,
                    outcome.timed_out,
                    outcome.hash_seed,
                )
            )
        return out

    def tally(self, arm: Arm, results: Sequence[JobResult]) -> tuple[Arm, Optional[Failure]]:
        """``arm`` grown by each finished run, and the first failing run among them.

        A process that died mid-test counts one failure. A run is a first run
        when it was the process's first iteration of the test, else an
        in-process repeat; the arm counts them apart.
        """
        first: Optional[Failure] = None
        samples: list[Sample] = []
        skipped = crashed = 0
        for result in results:
            hash_seed = result.hash_seed
            for record in result.records:
                outcome = record.outcome
                if outcome == AttemptOutcome.SKIPPED:
                    skipped += 1
                    continue
                failed = outcome.is_failure
                samples.append(
                    Sample(
                        result.number,
                        record.iteration,
                        failed,
                        record.random_seed,
                        hash_seed,
                        record.lines,
                    )
                )
                if failed and first is None:
                    first = self._failure(
                        result, record.iteration, first_line(record.longrepr), record.longrepr
                    )
            if result.died:
                crashed += 1
                samples.append(Sample(result.number, len(result.records), True, None, hash_seed))
                if first is None:
                    why = "timed out" if result.timed_out else f"exited with {result.exit_code}"
                    tail = log_tail(result.directory / "output.log")
                    first = self._failure(
                        result, len(result.records), f"the process {why} mid-test", tail
                    )
        grown = arm.grown(samples, processes=len(results), skipped=skipped, crashed=crashed)
        return grown, first

    def _failure(self, result: JobResult, iteration: int, message: str, text: str) -> Failure:
        return Failure(
            phase=result.job.phase,
            knob=result.job.knob,
            process=result.number,
            iteration=iteration,
            message=message,
            traceback=text,
            log=str((result.directory / "output.log").relative_to(self.options.report_dir)),
        )


def log_tail(path: Path, limit: int = 4000) -> str:
    """The last ``limit`` characters of a log the tests wrote to, read bounded."""
    return read_tail(path, 4 * limit)[-limit:].strip()
