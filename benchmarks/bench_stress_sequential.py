"""How often each stress verdict comes out for simulated tests of known rates, and at what cost.

The timing phase's own stopping rule and allocation (``stress.sequential``)
decide; only the runs are simulated: each arm's runs fail independently at
the case's rate for that arm. A round gives every arm its allocated processes,
each of ``--repeat`` runs, and costs ``--process-seconds`` per process plus
``--test-seconds`` per run, on ``--parallel`` processes at a time; the phase
ends on the evidence or when no further round fits in ``--budget-seconds``.

    python benchmarks/bench_stress_sequential.py [--trials 200] [--seed 1]

Prints, per case, the share of trials ending in each verdict and the median
runs and simulated seconds, then checks the targets:

- a flat-rate test is called ``race`` in at most 5% of trials;
- a knob-only race at 1.5% is called ``race`` in at least 90% of trials;
- no knob-only race is ``flaky``/``not-reproducible`` with quarantine allowed
  in more than 5% of trials;
- a knob that raises the rate past the margin (at 2%, at 70%, and with failures
  that cluster by process) allows quarantine in at most 10% of trials (beta).

Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from flakewarden.stress.sequential import Counts, Margin, Sequential

KNOBS = ("switch-interval", "cpu-load", "throttle")


class Case(NamedTuple):
    name: str
    baseline: float
    knobs: dict[str, float]  # a knob's rate where it differs from the baseline
    kind: str  # "flat", "knob-only" or "knob-raises"
    # When set, the runs of a process share their fate: each process draws its own rate
    # from a beta distribution with the arm's rate as its mean and this concentration
    # (20: per-process rates spread by about 7 points around 13%; 2: most processes
    # near 0% and a few near 100%).
    clustered: float = 0.0


CASES = [
    Case("flat 1%", 0.01, {}, "flat"),
    Case("flat 5%", 0.05, {}, "flat"),
    Case("flat 20%", 0.20, {}, "flat"),
    Case("never fails", 0.0, {}, "flat"),
    Case("knob-only 0.5%", 0.0, {"switch-interval": 0.005}, "knob-only"),
    Case("knob-only 1.5%", 0.0, {"switch-interval": 0.015}, "knob-only"),
    Case("knob-only 5%", 0.0, {"cpu-load": 0.05}, "knob-only"),
    Case("knob doubles 2%", 0.02, {"cpu-load": 0.04}, "knob-raises"),
    Case("flat 70%", 0.70, {}, "flat"),
    Case("knob 70% to 90%", 0.70, {"cpu-load": 0.90}, "knob-raises"),
    Case("clustered 13%", 0.13, {}, "flat", clustered=20.0),
    Case("clustered 13% to 30%", 0.13, {"cpu-load": 0.30}, "knob-raises", clustered=20.0),
    Case("bunched 13%", 0.13, {}, "flat", clustered=2.0),
    Case("bunched 13% to 30%", 0.13, {"cpu-load": 0.30}, "knob-raises", clustered=2.0),
]


def process_counts(case: Case, rate: float, repeat: int, rng: random.Random) -> Counts:
    if case.clustered and 0.0 < rate < 1.0:
        rate = rng.betavariate(rate * case.clustered, (1 - rate) * case.clustered)
    return Counts(repeat, sum(rng.random() < rate for _ in range(repeat)))


class Outcome(NamedTuple):
    verdict: str
    allowed: bool
    runs: int
    seconds: float


def simulate(case: Case, rng: random.Random, args: argparse.Namespace) -> Outcome:
    margin = Margin(args.margin, args.relative_margin)
    sequential = Sequential(KNOBS, margin=margin)
    seconds = 0.0
    runs = 0
    longest = 0.0
    while True:
        if seconds + longest > args.budget_seconds:
            break
        shares = sequential.allocation()
        round_seconds = 0.0
        counts: dict[str, list[Counts]] = {}
        for arm, processes in shares.items():
            rate = case.knobs.get(arm, case.baseline)
            counts[arm] = [process_counts(case, rate, args.repeat, rng) for _ in range(processes)]
            runs += processes * args.repeat
            round_seconds += processes * (args.process_seconds + args.repeat * args.test_seconds)
        round_seconds /= args.parallel
        seconds += round_seconds
        longest = max(longest, round_seconds)
        sequential.add_round(counts)
        if sequential.races():
            return Outcome("race", False, runs, seconds)
        if sequential.settled():
            failed = sequential.base.failures + sum(c.failures for c in sequential.totals.values())
            return Outcome("flaky" if failed else "not-reproducible", True, runs, seconds)
    failed = sequential.base.failures + sum(c.failures for c in sequential.totals.values())
    verdict = "inconclusive" if failed else "not-reproducible"
    return Outcome(verdict, False, runs, seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--budget-seconds", type=float, default=600.0)
    parser.add_argument("--repeat", type=int, default=20, help="runs per process")
    parser.add_argument("--process-seconds", type=float, default=0.15)
    parser.add_argument("--test-seconds", type=float, default=0.01)
    parser.add_argument("--parallel", type=float, default=1.0)
    parser.add_argument("--margin", type=float, default=Margin().absolute)
    parser.add_argument("--relative-margin", type=float, default=Margin().relative)
    parser.add_argument("--case", action="append", default=[], help="only these cases")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    missed: list[str] = []
    print(
        f"{args.trials} trials per case; budget {args.budget_seconds:g} s; "
        f"{args.repeat} runs per process; "
        f"margin {Margin(args.margin, args.relative_margin).describe()}"
    )
    header = "case                  race   flaky  not-rep  allowed  inconcl  median runs  median s"
    print(header)
    for case in CASES:
        if args.case and case.name not in args.case:
            continue
        outcomes = [simulate(case, rng, args) for _ in range(args.trials)]
        share = {
            v: sum(o.verdict == v for o in outcomes) / len(outcomes)
            for v in ("race", "flaky", "not-reproducible", "inconclusive")
        }
        allowed = sum(o.allowed for o in outcomes) / len(outcomes)
        print(
            f"{case.name:<20} {100 * share['race']:5.1f}% {100 * share['flaky']:5.1f}% "
            f"{100 * share['not-reproducible']:7.1f}% {100 * allowed:7.1f}% "
            f"{100 * share['inconclusive']:7.1f}% "
            f"{statistics.median(o.runs for o in outcomes):12.0f} "
            f"{statistics.median(o.seconds for o in outcomes):9.1f}"
        )
        if case.kind == "flat" and share["race"] > 0.05:
            missed.append(f"{case.name}: race in {100 * share['race']:.1f}% of trials (> 5%)")
        if case.name == "knob-only 1.5%" and share["race"] < 0.90:
            missed.append(f"{case.name}: race in {100 * share['race']:.1f}% of trials (< 90%)")
        if case.kind == "knob-only" and allowed > 0.05:
            missed.append(f"{case.name}: quarantine allowed in {100 * allowed:.1f}% (> 5%)")
        if case.kind == "knob-raises" and allowed > 0.10:
            # a raise past the margin hides under a bound in at most beta of trials
            missed.append(f"{case.name}: quarantine allowed in {100 * allowed:.1f}% (> 10%)")
    for line in missed:
        print(f"MISSED: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
