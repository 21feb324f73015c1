"""The quarantine policy as a table: a marker and a policy in, every unmet condition out.

``unmet_conditions`` is pure (no request is sent), so each row states a case a
reviewer can check by reading it: which conditions refuse, in which order, and
that a quarantine is allowed only when none does.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, NamedTuple, Optional

import pytest

from flakewarden.config import QuarantinePolicy
from flakewarden.model.scores import BROKEN, FLAKY, Figures, TestScore
from flakewarden.model.verdicts import NEVER_QUARANTINE, QUARANTINE_ALLOWED, VERDICTS
from flakewarden.quarantine.policy import Evidence, count_outcome, recent_rate, unmet_conditions

NOW = dt.datetime(2026, 6, 15, 12, 0, tzinfo=dt.timezone.utc)
TEST = "tests/test_a.py::test_x[1]"
FRESH = (NOW - dt.timedelta(days=2)).isoformat()
BOUNDED = {"max_increase": 0.001, "baseline_rate": 0.0}


def marker(**fields: Any) -> dict[str, Any]:
    """A marker that meets the default policy, with ``fields`` changed (None removes one)."""
    base: dict[str, Any] = {
        "hits": 3,
        "verdict": "not-reproducible",
        "verdict_at": FRESH,
        "verdict_bound": BOUNDED,
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def score(runs: int, failures: int, state: str = FLAKY) -> TestScore:
    return TestScore(
        test_id=TEST,
        window="the last 50 runs on main",
        figures=Figures(runs=runs, first_attempt_failures=failures),
        first_seen="2026-06-01",
        last_seen="2026-06-14",
        first_failure="2026-06-02",
        state=state,
    )


class Row(NamedTuple):
    marker: dict[str, Any]
    expected: tuple[str, ...]  # one fragment per unmet condition, in order; () allows
    policy: QuarantinePolicy = QuarantinePolicy()
    races: tuple[tuple[str, str], ...] = ()  # known-race entries: (test id, text)
    history: Optional[Evidence] = None


ROWS = {
    "everything met": Row(marker(), ()),
    "flaky with every knob bounded": Row(marker(verdict="flaky"), ()),
    "too few hits": Row(marker(hits=2), ("2 recorded hit(s); the policy needs at least 3",)),
    "no verdict": Row(marker(verdict=None), ("no stress verdict is recorded",)),
    "no verdict, none required": Row(
        marker(verdict=None), (), QuarantinePolicy(require_stress_verdict=False)
    ),
    "race": Row(
        marker(verdict="race", verdict_knob="throttle"),
        (
            "'race': a race or a real break is fixed",
            'record it in known-race-patterns.md:\n- test: "',
        ),
    ),
    "race already recorded": Row(
        marker(verdict="race"),
        ("'race': a race or a real break is fixed", "listed as a known race"),
        races=(("tests/test_a.py::test_x", "- test: tests/test_a.py::test_x"),),
    ),
    "a race refuses even when no verdict is required": Row(
        marker(verdict="race"),
        ("'race': a race or a real break is fixed", "record it in"),
        QuarantinePolicy(require_stress_verdict=False),
    ),
    "deterministic": Row(marker(verdict="deterministic"), ("'deterministic': a race or a real",)),
    "inconclusive": Row(marker(verdict="inconclusive"), ("'inconclusive': the runs ended",)),
    "error": Row(marker(verdict="error"), ("'error': a race or a real break",)),
    "a found cause the policy does not list": Row(
        marker(verdict="order-dependent"), ("'order-dependent' is not one the policy allows",)
    ),
    "a found cause the policy lists needs no bound": Row(
        marker(verdict="seed-dependent", verdict_bound=None),
        (),
        QuarantinePolicy(allowed_verdicts=("seed-dependent",)),
    ),
    "a seed that replays refuses even where the policy lists seed-dependent": Row(
        marker(verdict="seed-dependent", verdict_bound=None, verdict_quarantine_allowed=False),
        ("'seed-dependent' on the random or hash seed: it replays from its seed every time",),
        QuarantinePolicy(allowed_verdicts=("seed-dependent",)),
    ),
    "too old": Row(
        marker(verdict_at=(NOW - dt.timedelta(days=15)).isoformat()),
        ("15 days old; the policy accepts at most 14",),
    ),
    "unreadable date": Row(marker(verdict_at="last week"), ("no readable date (verdict_at)",)),
    "no bound": Row(marker(verdict_bound=None), ("records no bound on what the knobs could do",)),
    "a bound wider than the margin": Row(
        marker(verdict_bound={"max_increase": 0.004, "baseline_rate": 0.0}),
        ("raising the failure rate by 0.40 percentage points; the policy accepts at most 0.25",),
    ),
    "the margin is relative to a high baseline": Row(
        marker(verdict="flaky", verdict_bound={"max_increase": 0.04, "baseline_rate": 0.1}), ()
    ),
    "no verdict required still reads a recorded bound": Row(
        marker(verdict_bound=None),
        ("records no bound",),
        QuarantinePolicy(require_stress_verdict=False),
    ),
    "listed as a known race whatever the verdict": Row(
        marker(),
        ("listed as a known race",),
        races=((TEST, "- test: tests/test_a.py::test_x[1]"),),
    ),
    "every condition at once": Row(
        marker(hits=0, verdict="order-dependent", verdict_at="?"),
        ("0 recorded hit(s)", "is not one the policy allows", "no readable date"),
    ),
    "history replaces the hits": Row(
        marker(hits=0), (), history=Evidence(score(40, 10), "the last 50 runs on main")
    ),
    "history: no runs": Row(
        marker(), ("no runs in the history window (w)",), history=Evidence(None, "w")
    ),
    "history: too few runs and a low rate": Row(
        marker(),
        ("it has 10 runs in the history window; the policy needs at least 20", "below the entry"),
        history=Evidence(score(10, 1), "w"),
    ),
    "history: broken": Row(
        marker(),
        ("state broken): a real break is fixed",),
        history=Evidence(score(40, 40, BROKEN), "w"),
    ),
}


@pytest.mark.parametrize("row", ROWS.values(), ids=list(ROWS))
def test_unmet_conditions(row: Row) -> None:
    unmet = unmet_conditions(
        TEST, row.marker, row.policy, dict(row.races), NOW, history=row.history
    )
    assert len(unmet) == len(row.expected), unmet
    for condition, fragment in zip(unmet, row.expected):
        assert fragment in condition, (fragment, condition)


@pytest.mark.parametrize("verdict", VERDICTS)
def test_every_verdict_the_policy_could_list_is_allowed_only_by_the_vocabulary(
    verdict: str,
) -> None:
    """A policy listing every verdict still refuses a race, a real break, nothing found."""
    policy = QuarantinePolicy(allowed_verdicts=VERDICTS)
    unmet = unmet_conditions(TEST, marker(verdict=verdict), policy, {}, NOW)
    assert (not unmet) == QUARANTINE_ALLOWED[verdict], unmet
    assert (verdict in NEVER_QUARANTINE) == bool(unmet)


@pytest.mark.parametrize(
    ("outcomes", "policy", "expected"),
    [
        ("ppfp", QuarantinePolicy(), (4, 1)),
        ("", QuarantinePolicy(), (0, 0)),
        ("pf" * 150, QuarantinePolicy(), (200, 100)),  # the recent window keeps 200
        ("pf" * 150, QuarantinePolicy(min_runs_to_release=250), (300, 150)),  # every run
    ],
)
def test_release_counts_the_recent_window_or_every_run(
    outcomes: str, policy: QuarantinePolicy, expected: tuple[int, int]
) -> None:
    counted: dict[str, Any] = {}
    for outcome in outcomes:
        count_outcome(counted, outcome == "f")
    assert recent_rate(counted, policy) == expected
    assert counted.get("runs", 0) == len(outcomes)
