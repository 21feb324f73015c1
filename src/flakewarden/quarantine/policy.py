"""The quarantine policy itself: which conditions a test must meet to be quarantined, and
the counts its release is decided from.

Pure functions of an issue's marker and the policy (no request is sent), kept apart
from ``labels.py``, which changes labels and writes comments on GitHub.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any, Optional

from flakewarden.config import QuarantinePolicy
from flakewarden.model.scores import BROKEN, TestScore
from flakewarden.model.verdicts import (
    INCONCLUSIVE,
    NEEDS_BOUND,
    NEVER_QUARANTINE,
    RACE,
    SEED_DEPENDENT,
)
from flakewarden.quarantine.known_races import race_entry, race_entry_for

# The marker keeps the last outcomes of a quarantined test ("p" passed, "f" failed), newest last.
RECENT_WINDOW = 200


def parse_time(value: Any) -> Optional[dt.datetime]:
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


@dataclasses.dataclass(frozen=True)
class Evidence:
    """A test's score from the flake history (``None`` when it has no run in the window)."""

    score: Optional[TestScore]
    window: str  # the window, described


def rate_text(score: TestScore) -> str:
    low, high = score.interval
    return (
        f"{score.rate:.1%} ({score.first_attempt_failures} first-attempt failures in "
        f"{score.runs} runs; 95% interval {low:.1%} to {high:.1%})"
    )


def history_conditions(history: Evidence, policy: QuarantinePolicy) -> list[str]:
    """The sample and the entry rate, judged on the history window."""
    score = history.score
    if score is None or score.runs == 0:
        return [f"it has no runs in the history window ({history.window})"]
    unmet = []
    if score.runs < policy.min_runs:
        unmet.append(
            f"it has {score.runs} runs in the history window; the policy needs at least "
            f"{policy.min_runs} (quarantine_policy.min_runs)"
        )
    if score.state == BROKEN:
        unmet.append(
            "it failed every attempt in its most recent runs of the history window (state "
            "broken): a real break is fixed, never quarantined"
        )
    if score.rate < policy.enter_failure_rate:
        unmet.append(
            f"its failure rate is {rate_text(score)}, below the entry rate of "
            f"{policy.enter_failure_rate:.0%} (quarantine_policy.enter_failure_rate)"
        )
    return unmet


def bound_conditions(
    verdict: str, marker: Mapping[str, Any], policy: QuarantinePolicy
) -> list[str]:
    """A flaky or not-reproducible verdict must have ruled out, knob by knob, a race.

    The marker keeps what the stress runs excluded (``verdict_bound``: the largest
    increase in failure rate any knob could still cause, and the baseline's
    rate); the policy compares it with its own margin, so a stress run given a
    wide ``--margin`` does not lower the bar.
    """
    if verdict not in NEEDS_BOUND:
        return []
    bound = marker.get("verdict_bound")
    if not isinstance(bound, Mapping) or not isinstance(bound.get("max_increase"), (int, float)):
        return [
            f"its stress verdict {verdict!r} records no bound on what the knobs could do "
            "(none was recorded, or the marker was edited): stress it again, so that absence of "
            "a failure is not taken "
            "for evidence"
        ]
    increase = float(bound["max_increase"])
    base_rate = bound.get("baseline_rate")
    base_rate = float(base_rate) if isinstance(base_rate, (int, float)) else 0.0
    margin = max(policy.max_knob_increase, policy.relative_knob_increase * base_rate)
    if increase > margin:
        return [
            f"its stress runs leave room for a knob raising the failure rate by "
            f"{100 * increase:.2f} percentage points; the policy accepts at most "
            f"{100 * margin:.2f} (quarantine_policy.max_knob_increase, "
            "relative_knob_increase): stress it with a larger budget"
        ]
    return []


def unmet_conditions(
    test_id: str,
    marker: Mapping[str, Any],
    policy: QuarantinePolicy,
    races: Mapping[str, str],
    now: dt.datetime,
    race_file: str = "known-race-patterns.md",
    history: Optional[Evidence] = None,
) -> list[str]:
    """Every condition of the policy this test does not meet; empty means it may be quarantined.

    With ``history`` the evidence is the window's failure rate and sample; without
    it, the issue's hits. ``require_stress_verdict: false`` relaxes only the
    verdict's presence, age and allowed list: a recorded race or real break
    refuses whatever the file says.
    """
    unmet = []
    if history is not None:
        unmet += history_conditions(history, policy)
    else:
        hits = int(marker.get("hits") or 0)
        if hits < policy.min_failures:
            unmet.append(
                f"it has {hits} recorded hit(s); the policy needs at least {policy.min_failures} "
                "(quarantine_policy.min_failures)"
            )
    verdict = marker.get("verdict")
    verdict = verdict if isinstance(verdict, str) and verdict else None
    if verdict == INCONCLUSIVE:
        unmet.append(
            "its stress verdict is 'inconclusive': the runs ended before a knob's effect was "
            "found or ruled out; stress it again with the budget its verdict names"
        )
    elif verdict in NEVER_QUARANTINE:
        unmet.append(
            f"its stress verdict is {verdict!r}: a race or a real break is fixed, never quarantined"
        )
        if verdict == RACE and race_entry_for(test_id, races) is None:
            entry = race_entry(
                test_id,
                marker.get("verdict_knob"),
                str(marker.get("verdict_at")),
                marker.get("verdict_url"),
            )
            unmet.append(f"record it in {race_file}:\n{entry.rstrip()}")
    elif policy.require_stress_verdict:
        if verdict is None:
            unmet.append(
                "no stress verdict is recorded on its issue; run `flakewarden stress "
                f"{test_id} --comment -- python -m pytest` (or the stress workflow) first"
            )
        else:
            if verdict not in policy.allowed_verdicts:
                allowed = ", ".join(policy.allowed_verdicts)
                unmet.append(
                    f"its stress verdict {verdict!r} is not one the policy allows ({allowed}; "
                    "quarantine_policy.allowed_verdicts)"
                )
            at = parse_time(marker.get("verdict_at"))
            if at is None:
                unmet.append("its stress verdict has no readable date (verdict_at)")
            else:
                age = (now - at).total_seconds() / 86400
                if age > policy.verdict_max_age_days:
                    unmet.append(
                        f"its stress verdict is {age:.0f} days old; the policy accepts at most "
                        f"{policy.verdict_max_age_days:g} (quarantine_policy.verdict_max_age_days)"
                        "; stress it again"
                    )
    if verdict == SEED_DEPENDENT and marker.get("verdict_quarantine_allowed") is False:
        unmet.append(
            "its stress verdict is 'seed-dependent' on the random or hash seed: it replays from "
            "its seed every time, a bug in the code or the test to fix, never quarantined"
        )
    if verdict is not None:
        # Relaxing the verdict's presence never admits a recorded one that bounds nothing.
        unmet += bound_conditions(verdict, marker, policy)
    listed = race_entry_for(test_id, races)
    if listed is not None:
        unmet.append(f"it is listed as a known race in {race_file}:\n{listed}")
    return unmet


def recent_rate(marker: Mapping[str, Any], policy: QuarantinePolicy) -> tuple[int, int]:
    """(runs, failures) the release decision uses: the recent window, or every run since
    quarantine when ``min_runs_to_release`` is larger than the window."""
    recent = str(marker.get("recent") or "")
    if policy.min_runs_to_release <= RECENT_WINDOW:
        return len(recent), recent.count("f")
    return int(marker.get("runs") or 0), int(marker.get("failures") or 0)


def count_outcome(marker: dict[str, Any], failed: bool) -> None:
    """Count one run of a quarantined test in its marker (``runs``, ``failures``, ``recent``)."""
    marker["runs"] = int(marker.get("runs") or 0) + 1
    marker["failures"] = int(marker.get("failures") or 0) + int(failed)
    marker["recent"] = (str(marker.get("recent") or "") + ("f" if failed else "p"))[-RECENT_WINDOW:]
