"""Stress-running one test until the evidence supports a verdict.

The phases, in order, each one only when the previous ones left the question open:

1. probe (``probe``): the user's command once, selecting the test: can it run
   at all, is pytest-randomly in use, what did pytest parse as positional arguments.
2. isolation (``ISOLATION``, ``SEED_FIRST``, ``REPEATS``, ``BREAK``; module
   ``isolation``): fixed order and seed, one run in each of 10 fresh processes;
   every one of them failing is a real break (``deterministic``), unless a
   seed makes it pass or a recorded run (``--order-from``) holds a pass of it:
   then it is brittle, and its state-setter is bisected (``brittle``). Between
   the fresh runs and that decision, a few processes repeat it in-process: a
   test that passes its first run and fails its repeats leaks state into itself
   (non-idempotent), and no later phase repeats it in-process.
3. order (``ORDER``, ``--order-from``, fresh runs clean): replay the test's
   predecessors in the recorded order and bisect to the polluter (``order``);
   a polluter whose module fails the test when only collected, or a recorded
   failure the predecessors do not reproduce, is looked for among the collected
   modules' imports (``imports``).
4. seed (``SEED``, pytest-randomly in use): sweep seeds, then confirm that a
   failing seed fails every time and a passing seed never does; one run per
   process (``causes``). draws (``DRAWS``, the fresh runs hold a failure and a
   pass): replay a failing and a passing run's random and hash seeds, and swap
   them to name the one that decides (``draws``).
5. timing (``TIMING``): interleaved rounds of baseline, switch interval 1e-5,
   CPU load and a duty-cycle throttle (escalated until the test runs 4x slower),
   weighed by a rule valid at any number of looks and ended by the evidence or
   the budget (``timing``, ``timing_verdict``, ``sequential``).

After a finding, the refining phases (``REFINERS``) read it with all the
evidence and may replace it: a ``deterministic``, ``flaky`` or ``inconclusive``
finding whose failures follow a seed becomes ``seed-dependent`` (``draws``, which
first gives a test that always failed hash seeds of its own).

Processes after the probe are forked from a fork server where that is safe
(``launcher``), else spawned.

A found cause (order, seed, race) is the verdict, with any non-idempotence
noted; with none found, a non-idempotent test's verdict is ``non-idempotent``.

Each phase is a function of a read-only ``PhaseContext`` that returns what it
found (``phase``): a finding or none, its arms, notes and first failure, and the
facts a later phase reads (the isolation arm, the non-idempotence). The engine
owns the process service (``runs.StressProcesses``), runs the probe, then each
phase that applies, in the order above, until one finds the verdict, and builds
the ``Verdict`` from the results. ``run_phases`` runs a chosen list of phases on
a budget, for a caller (burn-in, verify-fix) that needs fewer than all of them.

Each run's outcome comes from the plugin's per-test records, never from an
exit code: a collection or plugin error is not a test failure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Optional

from flakewarden import __version__
from flakewarden.model.verdicts import INCONCLUSIVE, NOT_REPRODUCIBLE
from flakewarden.reports.report_json import claim_directory
from flakewarden.runner.process import plugin_dir, resolve_executable
from flakewarden.stress import imports, order
from flakewarden.stress.await_points import applies as await_points_applies
from flakewarden.stress.await_points import await_points_phase
from flakewarden.stress.causes import seed_applies, seed_first_applies, seed_phase
from flakewarden.stress.draws import draws_phase, early_applies, refine_applies
from flakewarden.stress.interleaving import applies as interleaving_applies
from flakewarden.stress.interleaving import interleaving_phase
from flakewarden.stress.isolation import break_phase, isolation_phase, repeats_phase
from flakewarden.stress.phase import Budget, Facts, Finding, Phase, PhaseContext, PhaseResult
from flakewarden.stress.probe import ProbeResult, run_probe
from flakewarden.stress.runs import Say, StressOptions, StressProcesses, environment, now_iso
from flakewarden.stress.timing import timing_phase
from flakewarden.stress.verdict import Arm, Failure, Verdict
from flakewarden.stress.where import applies as where_applies
from flakewarden.stress.where import where_phase

__all__ = [
    "BREAK",
    "DRAWS",
    "ISOLATION",
    "ORDER",
    "PHASES",
    "REFINERS",
    "REPEATS",
    "SEED",
    "SEED_FIRST",
    "TIMING",
    "StressOptions",
    "run_phases",
]

ISOLATION = Phase("isolation", isolation_phase)
# Every fresh run failed and pytest-randomly is in use: a seed that passes is no real break.
SEED_FIRST = Phase("seed-first", seed_phase, seed_first_applies, needs=("isolation",))
REPEATS = Phase("repeats", repeats_phase, needs=("isolation",))
BREAK = Phase(
    "break", break_phase, lambda ctx: ctx.facts.always_fails, needs=("isolation", "repeats")
)
ORDER = Phase("order", order.order_phase, order.applies, needs=("isolation",))
SEED = Phase("seed", seed_phase, seed_applies)
DRAWS = Phase("draws", draws_phase, early_applies, needs=("isolation",))
TIMING = Phase("timing", timing_phase)
# The phases after the probe, in the order above: what ``flakewarden stress`` runs.
PHASES = (ISOLATION, SEED_FIRST, REPEATS, BREAK, ORDER, SEED, DRAWS, TIMING)
# Run after the finding, each when it applies to it; a finding one returns replaces it.
REFINERS = (
    Phase("draws-after", draws_phase, refine_applies),
    Phase("where", where_phase, where_applies),
    Phase("interleaving", interleaving_phase, interleaving_applies),
    Phase("await-points", await_points_phase, await_points_applies),
)


def _quiet(line: str) -> None:
    pass


def run_phases(
    options: StressOptions,
    phases: Sequence[Phase] = PHASES,
    *,
    say: Say = _quiet,
    budget_seconds: Optional[float] = None,
    processes: Optional[StressProcesses] = None,
    refiners: Optional[Sequence[Phase]] = None,
) -> Verdict:
    """Probe the test, run ``phases`` in order until one finds the verdict, and return it.

    ``budget_seconds`` replaces the options' budget; ``processes`` (its plugin
    directory set up by the caller) replaces the service the engine would make.
    A list that ends without a finding (no ``TIMING``) is ``inconclusive``.
    """
    _check_needs(phases)
    if refiners is None:  # the refining phases follow the whole list, not a chosen few
        refiners = REFINERS if tuple(phases) == PHASES else ()
    if budget_seconds is not None:
        options = dataclasses.replace(options, budget_seconds=budget_seconds)
    resolve_executable(options.command, options.cwd)
    claim_directory(options.report_dir, ("processes", "verdict.json", "verdict.md"))
    if processes is not None:
        return _Engine(options, processes, say).run(phases, refiners)
    with plugin_dir() as plugin:
        return _Engine(options, StressProcesses(options, plugin), say).run(phases, refiners)


def _check_needs(phases: Sequence[Phase]) -> None:
    """A phase that reads another's facts must come after it: a caller's mistake, said early."""
    seen: set[str] = set()
    for phase in phases:
        missing = [name for name in phase.needs if name not in seen]
        if missing:
            raise ValueError(f"the {phase.name} phase needs {', '.join(missing)} before it")
        seen.add(phase.name)


class _Evidence:
    """The results so far: the arms in the order they ran, the notes, the first failure."""

    def __init__(self) -> None:
        self.arms: list[Arm] = []
        self.notes: list[str] = []
        self.first_failure: Optional[Failure] = None
        self.facts = Facts()

    def add(
        self,
        arms: Sequence[Arm],
        notes: Sequence[str],
        first_failure: Optional[Failure],
        facts: Optional[Facts] = None,
    ) -> None:
        if facts is not None:
            self._revise(facts.isolation)
            self.facts = facts
        self.arms.extend(arms)
        self.notes.extend(notes)
        if self.first_failure is None:
            self.first_failure = first_failure

    def _revise(self, isolation: Optional[Arm]) -> None:
        """A phase that added runs to the isolation arm returns it grown: it keeps its row."""
        old = self.facts.isolation
        if old is None or isolation is None or isolation is old:
            return
        index = next((i for i, arm in enumerate(self.arms) if arm is old), None)
        if index is not None:
            self.arms[index] = isolation


class _Engine:
    """One stress run of one test: the probe, then the phases, then the verdict."""

    def __init__(self, options: StressOptions, processes: StressProcesses, say: Say) -> None:
        self.options = options
        self.processes = processes
        self.say = say
        self.budget = Budget(options.budget_seconds, processes.now(), processes.now)
        self.started_at = now_iso()

    def run(self, phases: Sequence[Phase], refiners: Sequence[Phase] = ()) -> Verdict:
        evidence = _Evidence()
        with self.processes.launching():
            probed = run_probe(self.options, self.processes, self.say)
            evidence.add((), probed.notes, probed.first_failure)
            finding = probed.finding
            if finding is None:
                assert probed.probe is not None
                finding = self._phases(phases, probed, evidence)
                finding = self._refine(refiners, finding, probed, evidence)
            recorded = evidence.facts.recorded_failure
            if finding.verdict == NOT_REPRODUCIBLE and recorded:
                clause = imports.unreproduced_clause(recorded, evidence.arms)
                finding = dataclasses.replace(finding, reason=finding.reason.rstrip(".") + clause)
            return self.verdict(finding, evidence, probed)

    def _context(
        self, probed: ProbeResult, evidence: _Evidence, finding: Optional[Finding] = None
    ) -> PhaseContext:
        assert probed.probe is not None
        return PhaseContext(
            self.options,
            probed.probe,
            self.processes,
            self.budget,
            self.say,
            evidence.facts,
            tuple(evidence.arms),
            finding,
            evidence.first_failure,
        )

    def _refine(
        self, refiners: Sequence[Phase], finding: Finding, probed: ProbeResult, evidence: _Evidence
    ) -> Finding:
        """Each refining phase that applies reads the finding and may replace it."""
        for phase in refiners:
            ctx = self._context(probed, evidence, finding)
            if not phase.applies(ctx):
                continue
            result = phase.run(ctx)
            evidence.add(result.arms, result.notes, result.first_failure, result.facts)
            if result.finding is not None:
                finding = result.finding
        return finding

    def _phases(self, phases: Sequence[Phase], probed: ProbeResult, evidence: _Evidence) -> Finding:
        for phase in phases:
            ctx = self._context(probed, evidence)
            if not phase.applies(ctx):
                continue
            result: PhaseResult = phase.run(ctx)
            evidence.add(result.arms, result.notes, result.first_failure, result.facts)
            if result.finding is not None:
                return result.finding
        names = ", ".join(p.name for p in phases) or "none"
        return Finding(
            INCONCLUSIVE,
            f"no phase run ({names}) reached a verdict: the question stays open",
            "inconclusive: the phases run found no cause and bounded no knob",
        )

    def verdict(self, finding: Finding, evidence: _Evidence, probed: ProbeResult) -> Verdict:
        """The final verdict: the finding, every phase's arms and notes, and the run's record."""
        return Verdict(
            test_id=self.options.test_id,
            verdict=finding.verdict,
            reason=finding.reason,
            rule=finding.rule,
            arms=evidence.arms,
            knob=finding.knob,
            polluter=finding.polluter,
            state_setter=finding.state_setter,
            seed=finding.seed,
            statistics=dict(finding.statistics),
            order=dict(finding.order),
            seeds=dict(finding.seeds),
            non_idempotent=dict(evidence.facts.non_idempotent),
            first_failure=evidence.first_failure,
            environment=environment(
                self.options.cores, None if probed.probe is None else probed.probe.results
            ),
            command=self.options.command,
            started_at=self.started_at,
            finished_at=now_iso(),
            duration=self.budget.elapsed(),
            version=__version__,
            notes=evidence.notes,
            power=dict(finding.power),
            load=dict(finding.load),
            where=dict(finding.where),
            timing=dict(finding.timing),
            launcher=self.processes.launched(),
        )
