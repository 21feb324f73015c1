"""The timing phase's stopping rule: valid at any number of looks, ended by evidence or budget.

Each knob is compared with the interleaved baseline round by round, and two
questions stay open until the evidence answers one of them:

- **Does the knob raise the failure rate?** Each knob process of a round is
  paired with a baseline process of the same round; when the knob changes
  nothing, which of the two failed the larger share of its runs is a fair
  coin (ties dropped), whatever the runs inside one process share. The
  product over pairs of the likelihood ratio of a coin that favours the knob
  with chance theta against a fair one is a test martingale, and so is its
  average over a grid of theta. By Ville's inequality it ever reaches
  ``knobs / alpha`` with probability at most ``alpha / knobs``: a race is
  declared then, however many rounds were looked at and however the runs were
  allocated (each round's allocation is chosen before the round runs).
- **How much could the knob raise it?** An anytime-valid upper bound on the
  knob arm's failure rate: the smallest rate q that a plug-in likelihood ratio
  test martingale rejects at level ``beta`` (predictable estimate from earlier
  rounds against q). A knob whose rate exceeded the bound would have been seen
  with probability at least ``1 - beta``. The knob is *bounded* when the bound
  minus the baseline's rate is within the margin (``bounds``).

Sampling ends when a knob is a race, or when every knob is bounded; otherwise
the budget ends it and the question stays open (``inconclusive``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Optional

from flakewarden.model.binomial import ALPHA, binomial_cdf, lower_bound, upper_bound
from flakewarden.stress.bounds import (
    BETA,
    DEFAULT_MARGIN,
    MARGIN,
    RELATIVE_MARGIN,
    Counts,
    KnobBound,
    Margin,
    RateBound,
    ShareBound,
    anytime_upper_bound,
)
from flakewarden.stress.signs import (
    THETA_GRID,
    mixture_log,
    paired_signs,
    wins_to_cross,
    with_signs,
)

__all__ = [
    "BETA",
    "BOUNDED",
    "DEFAULT_MARGIN",
    "MARGIN",
    "OPEN",
    "RACE",
    "RELATIVE_MARGIN",
    "THETA_GRID",
    "Counts",
    "KnobBound",
    "Margin",
    "RateBound",
    "Sequential",
    "anytime_upper_bound",
    "paired_signs",
]

# The increase is measured from what the baseline's rate is at least (one-sided
# Clopper-Pearson), so a baseline that failed more often than usual by chance
# neither hides an increase nor widens the margin.
BASELINE_CONFIDENCE = 0.95
# The tail below which clean processes count as clustered: checked at every round, so a
# looser test would fire on independent runs by chance and slow their bound for nothing;
# real clustering sits far beyond it.
CLUSTERED_P = 0.005

RACE = "race"
BOUNDED = "bounded"
OPEN = "open"


def _total(processes: Sequence[Counts]) -> Counts:
    return Counts(sum(p.runs for p in processes), sum(p.failures for p in processes))


def _shares(processes: Sequence[Counts]) -> list[float]:
    """Processes as the units: each one's share of failing runs."""
    return [p.failures / p.runs for p in processes if p.runs]


class Sequential:
    """The evidence so far on each knob against the baseline, and what it decides."""

    def __init__(
        self,
        knobs: Sequence[str],
        *,
        alpha: float = ALPHA,
        beta: float = BETA,
        margin: Optional[Margin] = None,
    ) -> None:
        self.knobs = list(knobs)
        self.alpha, self.beta = alpha, beta
        self.margin = DEFAULT_MARGIN if margin is None else margin
        self.base = Counts(0, 0)
        self.totals: dict[str, Counts] = {k: Counts(0, 0) for k in self.knobs}
        # a load knob's runs at the levels before its last (its bound starts afresh at each)
        self.earlier: dict[str, Counts] = {k: Counts(0, 0) for k in self.knobs}
        self.log_lr: dict[str, list[float]] = {k: [0.0] * len(THETA_GRID) for k in self.knobs}
        # pairs each knob's process failed more (fewer) of its runs than its baseline's did
        self.signs: dict[str, tuple[int, int]] = {k: (0, 0) for k in self.knobs}
        self.rate_bounds: dict[str, RateBound] = {}
        # the rate per run with processes as the units: what clustered failures are bounded by
        self.process_bounds: dict[str, ShareBound] = {}
        self.baseline_floor = ShareBound(1 - BASELINE_CONFIDENCE)
        # every process's (runs, failures), per arm: what the clustering check reads
        self.processes: dict[str, list[Counts]] = {}
        self.seen_clustered: set[str] = set()  # arms whose failures clustered at some look
        self._bounds: dict[str, KnobBound] = {}
        self._clustered: dict[str, bool] = {}
        for arm in ("baseline", *self.knobs):
            self.reset(arm)

    @property
    def threshold(self) -> float:
        """The e-value a knob must reach: Bonferroni over the knobs on Ville's bound."""
        return len(self.knobs) / self.alpha

    def reset(self, arm: str) -> None:
        """Forget an arm's bound and counts (a load knob escalated: a new rate to bound).

        The race evidence is kept: it stays a test martingale across levels.
        """
        self.rate_bounds[arm] = RateBound(self.beta)
        self.process_bounds[arm] = ShareBound(self.beta)
        if arm == "baseline":
            self.baseline_floor = ShareBound(1 - BASELINE_CONFIDENCE)
        self.processes[arm] = []
        self.seen_clustered.discard(arm)
        if arm in self.totals:
            done, total = self.earlier[arm], self.totals[arm]
            self.earlier[arm] = Counts(done.runs + total.runs, done.failures + total.failures)
            self.totals[arm] = Counts(0, 0)
        self._bounds, self._clustered = {}, {}

    def add_round(self, rounds: Mapping[str, Sequence[Counts]]) -> None:
        """One round: for the baseline and each sampled knob, every process's runs and failures.

        The race evidence counts *processes that failed*, not runs: runs repeated
        in one process share its state (a module fixture, a poisoned cache), so
        they are not independent, while processes are. The bound counts runs,
        unless the failures cluster by process (``clustered``).
        """
        self._bounds, self._clustered = {}, {}
        base_processes = rounds.get("baseline", [])
        base = _total(base_processes)
        self.base = Counts(self.base.runs + base.runs, self.base.failures + base.failures)
        self._record("baseline", base_processes)
        for knob in self.knobs:
            processes = rounds.get(knob, [])
            counts = _total(processes)
            if counts.runs == 0:
                continue
            self._record(knob, processes)
            total = self.totals[knob]
            self.totals[knob] = Counts(total.runs + counts.runs, total.failures + counts.failures)
            higher, lower = paired_signs(base_processes, processes)
            won, lost = self.signs[knob]
            self.signs[knob] = (won + higher, lost + lower)
            self.log_lr[knob] = with_signs(self.log_lr[knob], higher, lower)

    def crossing(self, rounds: Mapping[str, Sequence[Counts]]) -> str:
        """The first knob that this round's processes so far (not yet added) would make a
        race, or ``""``: its pairs so far are evidence as the whole round's would be."""
        base = rounds.get("baseline", [])
        for knob in self.knobs:
            higher, lower = paired_signs(base, rounds.get(knob, []))
            logs = with_signs(self.log_lr[knob], higher, lower)
            if (higher or lower) and mixture_log(logs) >= math.log(self.threshold):
                return knob
        return ""

    def _record(self, arm: str, processes: Sequence[Counts]) -> None:
        if not processes:
            return
        self.rate_bounds[arm].add(_total(processes))
        for share in _shares(processes):
            self.process_bounds[arm].add(share)
            if arm == "baseline":
                self.baseline_floor.add(share)
        self.processes[arm].extend(processes)

    def clustered(self, arm: str) -> bool:
        """The arm's failures bunch into fewer processes than independent runs would give.

        Under independent runs at the arm's observed rate, each process fails none of its
        runs with a known chance, and the processes that fail none are a sum of such
        coins: at most as spread as a binomial with their mean chance, whose exact upper
        tail (Hoeffding, 1956) is then a valid p-value. More clean processes than a tail
        of ``CLUSTERED_P`` allows says the runs of a process share their fate, and the
        bound then takes processes as its units. Exact, because clean processes are rare
        at high rates, where a normal approximation fires by chance.
        """
        if arm in self.seen_clustered:
            return True  # once seen, for good: runs that shared their fate once may again
        cached = self._clustered.get(arm)
        if cached is not None:
            return cached
        self._clustered[arm] = found = self._clusters(self.processes[arm])
        if found:
            self.seen_clustered.add(arm)
        return found

    @staticmethod
    def _clusters(processes: Sequence[Counts]) -> bool:
        ran = [p for p in processes if p.runs]
        total = _total(ran)
        if total.failures < 2:
            return False
        rate = total.failures / total.runs
        chance = math.fsum((1 - rate) ** p.runs for p in ran) / len(ran)
        clean = sum(1 for p in ran if not p.failures)
        if not clean:
            return False
        return 1.0 - binomial_cdf(clean - 1, len(ran), chance) < CLUSTERED_P

    def all_levels(self, knob: str) -> Counts:
        """The knob's runs and failures at every level, as its arm in the evidence counts them."""
        done, total = self.earlier[knob], self.totals[knob]
        return Counts(done.runs + total.runs, done.failures + total.failures)

    def counts_text(self, knob: str) -> str:
        """``failures/runs``, saying which level it counts when the knob escalated."""
        total, overall = self.totals[knob], self.all_levels(knob)
        if overall.runs == total.runs:
            return f"{total.failures}/{total.runs}"
        return (
            f"{total.failures}/{total.runs} at its last level "
            f"({overall.failures}/{overall.runs} over all its levels)"
        )

    def e_value(self, knob: str) -> float:
        """The mixture martingale's value: evidence that the knob raises the rate."""
        log_mean = mixture_log(self.log_lr[knob])
        return math.exp(min(log_mean, 700.0))

    def p_value(self, knob: str) -> float:
        """The always-valid p-value 1 / e (capped at 1), before the knobs' correction."""
        return min(1.0, 1.0 / max(self.e_value(knob), 1e-300))

    @property
    def baseline_rate(self) -> float:
        return self.base.failures / self.base.runs if self.base.runs else 0.0

    def bound(self, knob: str) -> KnobBound:
        cached = self._bounds.get(knob)
        if cached is None:
            if self.clustered(knob) or self.clustered("baseline"):
                # The per-run rate still, with each process one unit: runs that share
                # their fate are not independent evidence.
                upper = self.process_bounds[knob].upper()
                base = self.baseline_floor.lower()
                unit = "processes"
                count = len(self.processes[knob])
            else:
                upper = self.rate_bounds[knob].upper()
                base = lower_bound(self.base.failures, self.base.runs, BASELINE_CONFIDENCE)
                unit = "runs"
                count = self.totals[knob].runs
            cached = KnobBound(
                upper,
                base,
                max(0.0, upper - base),
                self.margin.at(base),
                count,
                unit,
                self.all_levels(knob).runs,
            )
            self._bounds[knob] = cached
        return cached

    def state(self, knob: str) -> str:
        if self.e_value(knob) >= self.threshold:
            return RACE
        if self.base.runs and self.bound(knob).met:
            return BOUNDED
        return OPEN

    def leans(self, knob: str) -> bool:
        """The knob's rate is above the baseline's and the evidence grew: signal, not proof."""
        total = self.totals[knob]
        rate = total.failures / total.runs if total.runs else 0.0
        return total.failures > 0 and rate > self.baseline_rate and self.e_value(knob) > 1.0

    def races(self) -> list[str]:
        """Knobs that crossed the race threshold, strongest evidence first."""
        hits = [k for k in self.knobs if self.e_value(k) >= self.threshold]
        return sorted(hits, key=self.e_value, reverse=True)

    def settled(self) -> bool:
        """A race was found, or every knob is bounded within the margin."""
        return bool(self.races()) or all(self.state(k) == BOUNDED for k in self.knobs)

    def allocation(self, unit: int = 1) -> dict[str, int]:
        """Processes per arm for the next round: nothing more for a knob already bounded.

        ``unit``: the processes each share stands for (a test run only in fresh processes
        gets many a share), which a sweeping knob's pairs are divided by.

        A bounded knob's budget goes to the knobs still open (and to the
        baseline they are compared with); a knob that leans toward a race gets
        twice an open knob's share, since its question is the nearest to an
        answer, and four times once its evidence is halfway to the threshold (on
        the log scale: its square root), so that a round of slow load arms is not
        run for every pair a near race still needs. A knob whose bound slips past
        the margin again (the baseline's rate moved) is sampled again.
        """
        halfway = math.sqrt(self.threshold)
        shares = {
            k: (
                0
                if self.state(k) == BOUNDED
                else max(4 if self.e_value(k) >= halfway else 2, -(-self._sweep(k) // unit))
                if self.leans(k)
                else 1
            )
            for k in self.knobs
        }
        shares["baseline"] = max([1, *shares.values()])
        return shares

    def _sweep(self, knob: str) -> int:
        """For a knob that won every pair it did not tie: the pairs that would make it a race
        were it to win each (at most ``SWEEP_PAIRS``), so a strong race is decided in the
        next round instead of three rounds on; 0 for any other knob. A knob that changes
        nothing sweeps its first pairs by chance, and its extra processes count toward its
        bound as any would (the allocation is chosen before the round: still valid)."""
        won, lost = self.signs[knob]
        if lost or not won:
            return 0
        return wins_to_cross(self.log_lr[knob], self.threshold)

    def runs_to_settle(self, knob: str) -> Optional[int]:
        """About how many more runs of this knob (and as many of the baseline) would settle it.

        None when more runs at the rates seen so far would settle nothing: even at the
        pooled rate, known exactly, the widened bound would stay above the margin.
        """
        total = self.totals[knob]
        if total.runs == 0:
            # No run of this knob yet (the cap or the budget ended the rounds before its
            # turn): project at the baseline's rate, with the widest widening of the bound.
            if self.base.runs == 0:
                return None
            return self._runs_to_bound(self.base.failures / self.base.runs, 1.3, 0, self.base.runs)
        if self.leans(knob):
            log_e = math.log(max(self.e_value(knob), 1.0 + 1e-9))
            need = math.log(self.threshold)
            return max(1, math.ceil(total.runs * (need / log_e - 1)))
        # Bounding settles a knob that does nothing: its rate is then the baseline's, and
        # the pooled rate of the two arms is the best estimate of that rate, for both arms:
        # the projected bound compares the knob's upper bound with the baseline's lower
        # bound (what the baseline's rate is at least), each at the pooled rate.
        rate = (total.failures + self.base.failures) / (total.runs + self.base.runs)
        fixed_now = upper_bound(total.failures, total.runs, 1 - self.beta)
        # The fixed-sample bound at the same rate, widened for any number of looks by the
        # ratio the anytime bound has to it now (at most 1.3, what it tends to with runs).
        widen = min(1.3, max(1.0, self.bound(knob).upper / max(fixed_now, 1e-12)))
        return self._runs_to_bound(rate, widen, total.runs, total.runs)

    def _runs_to_bound(self, rate: float, widen: float, done: int, start: int) -> Optional[int]:
        """More runs (beyond ``done``) after which the widened bound at ``rate`` is within
        the margin of the baseline's lower bound; None when no number of runs would do."""
        if widen * rate >= rate + self.margin.at(rate):
            return None  # even exact rates would leave the widened bound above the margin
        if rate + self.margin.at(rate) >= 1.0:
            return None  # no bound within that margin could rule anything out
        n = start
        for _ in range(20):  # up to a million times the runs so far
            n *= 2
            failures = round(rate * n)
            # The normal approximation past a few thousand failures: the exact bounds
            # cost time in proportion to the failures.
            if failures > 2000:
                spread = math.sqrt(rate * (1 - rate) / n)
                upper, lower = rate + 1.2816 * spread, rate - 1.6449 * spread
            else:
                upper = upper_bound(failures, n, 1 - self.beta)
                lower = lower_bound(failures, n, BASELINE_CONFIDENCE)
            if widen * upper <= lower + self.margin.at(lower):
                return max(0, n - done)
        return None

    def describe(self) -> str:
        return (
            f"each knob against the interleaved baseline: each knob process paired with a "
            f"baseline process of its round, a sign test of which failed the larger share of "
            f"its runs (a fair coin when the knob changes nothing), its likelihood ratio "
            f"averaged over chances {', '.join(f'{t:g}' for t in THETA_GRID)}, a test "
            f"martingale; race when it reaches "
            f"{len(self.knobs)}/{self.alpha:g} = {self.threshold:g} (Ville's inequality, "
            f"Bonferroni over {len(self.knobs)} knobs), valid at any number of looks; a knob "
            f"is bounded when its anytime-valid {100 * (1 - self.beta):.0f}% upper bound "
            f"exceeds the baseline's rate by at most {self.margin.describe()}"
        )
