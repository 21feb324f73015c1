"""What the dashboard shows, read from the history store.

- every week's runs, and how many of them had a flaky test (the chart);
- the window's scores (the same window ``history show`` and the quarantine policy use):
  the tests that failed a first attempt in it, flakiest first, with their rate and
  exact interval;
- for those tests, their last ``STRIP_RUNS`` runs of the branch, one letter each, and
  their first-attempt failure rate per week over the last ``TREND_WEEKS`` weeks;
- whether each is quarantined now and since which run, and a link to its flake issue;
- the failures of every test grouped by signature (``groups``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import urllib.parse
from collections.abc import Sequence
from typing import Any, Optional

from flakewarden.dashboard.groups import group_failures
from flakewarden.history import failures, timeline
from flakewarden.history.store import HistoryStore
from flakewarden.history.window import WindowOptions, fell_over, is_pull_request, score_window
from flakewarden.model import id_key
from flakewarden.model.history import HistoryRun
from flakewarden.model.scores import BROKEN, FLAKY, NEW, TestScore

STRIP_RUNS = 100
TREND_WEEKS = 12
CHART_WEEKS = 52
MAX_TESTS = 500
_RANK = {BROKEN: 0, FLAKY: 1, NEW: 2}


@dataclasses.dataclass(frozen=True)
class DashboardOptions:
    window: WindowOptions
    branch: str
    branch_source: str
    min_runs: int
    now: Optional[dt.datetime] = None


def _week(started: str) -> str:
    """The Monday of the ISO week ``started`` falls in, ``YYYY-MM-DD``; "" when unknown."""
    try:
        moment = dt.datetime.fromisoformat(started.replace("Z", "+00:00"))
    except ValueError:
        return ""
    return (moment.date() - dt.timedelta(days=moment.weekday())).isoformat()


def run_url(run: HistoryRun) -> str:
    ctx = run.context
    if not ctx.on_github:
        return ""
    return f"https://github.com/{ctx.repository}/actions/runs/{ctx.run_id}"


def issue_url(repository: str, test_id: str) -> str:
    """A search for the test's flake issue (its title is ``flake: <id>``), open or closed."""
    if not repository:
        return ""
    query = f'is:issue label:flaky-test in:title "flake: {test_id}"'
    return f"https://github.com/{repository}/issues?q={urllib.parse.quote(query)}"


def weeks(runs: Sequence[HistoryRun], share: float) -> list[dict[str, Any]]:
    """Per week (newest last, at most ``CHART_WEEKS``): runs, runs with a flaky test,
    flaky tests over them, and runs where the suite fell over."""
    found: dict[str, dict[str, Any]] = {}
    for run in runs:
        week = _week(run.context.started_at)
        if not week:
            continue
        row = found.setdefault(
            week, {"week": week, "runs": 0, "flaky_runs": 0, "flaky_tests": 0, "fell_over": 0}
        )
        row["runs"] += 1
        row["flaky_tests"] += run.flaky
        row["flaky_runs"] += 1 if run.flaky else 0
        row["fell_over"] += 1 if fell_over(run, share) else 0
    return [found[week] for week in sorted(found)][-CHART_WEEKS:]


def _ranked(scores: dict[str, TestScore]) -> list[TestScore]:
    chosen = [
        s
        for s in scores.values()
        if s.first_attempt_failures or s.pull_requests.first_attempt_failures
    ]
    return sorted(
        chosen,
        key=lambda s: (
            -s.flaky_runs,
            -s.rate,
            _RANK.get(s.state, 9),
            -s.hard_failures,
            s.test_id,
        ),
    )


def _since_quarantined(store: HistoryStore, strip: Sequence[int], keys: set[str]) -> dict[str, int]:
    """Per id key quarantined in the newest run: how many runs in a row it has been."""
    streak: dict[str, int] = {}
    alive = set(keys)
    for run in reversed(strip):  # newest first
        if not alive or run < 0:
            break
        now = failures.quarantined(store, run) & alive
        for key in now:
            streak[key] = streak.get(key, 0) + 1
        alive = now
    return streak


@dataclasses.dataclass(frozen=True)
class _Shown:
    """The runs the dashboard shows: the branch's strip (oldest first) and trend weeks."""

    every: list[HistoryRun]  # every run, newest first
    repository: str
    strip: list[HistoryRun]
    trend: list[HistoryRun]
    trend_weeks: list[str]


def _shown(store: HistoryStore, branch: str) -> _Shown:
    every = store.runs()  # newest first
    branch_runs = [r for r in every if r.context.branch == branch and not is_pull_request(r)]
    repository = every[0].context.repository if every else ""
    trend_start = ""
    if branch_runs:
        last = _week(branch_runs[0].context.started_at)
        if last:
            start = dt.date.fromisoformat(last) - dt.timedelta(weeks=TREND_WEEKS - 1)
            trend_start = start.isoformat()
    trend = [r for r in branch_runs if _week(r.context.started_at) >= trend_start]
    trend_weeks = sorted({_week(r.context.started_at) for r in trend} - {""})
    strip = list(reversed(branch_runs[:STRIP_RUNS]))  # oldest first
    return _Shown(every, repository, strip, trend, trend_weeks)


def _score_fields(score: TestScore) -> dict[str, Any]:
    low, high = score.interval
    pr = score.pull_requests
    return {
        "state": score.state,
        "rate": round(score.rate, 6),
        "lo": round(low, 6),
        "hi": round(high, 6),
        "runs": score.runs,
        "fa": score.first_attempt_failures,
        "flaky": score.flaky_runs,
        "hard": score.hard_failures,
        "pr": [pr.first_attempt_failures, pr.runs],
        "first_seen": score.first_seen,
        "last_seen": score.last_seen,
        "rose": score.rose,
    }


def _trend(own: dict[int, str], week_of: dict[int, str], weeks: list[str]) -> list[list[int]]:
    """Per trend week: [first attempts failed, runs] of one test (skips left out)."""
    trend: dict[str, list[int]] = {w: [0, 0] for w in weeks}
    for run, letter in own.items():
        week = week_of.get(run)
        if week in trend and letter != "s":
            trend[week][1] += 1
            trend[week][0] += letter in "xfq"
    return [trend[w] for w in weeks]


def _test_rows(
    store: HistoryStore,
    shown: _Shown,
    scores: dict[str, TestScore],
    names: dict[str, int],
) -> list[dict[str, Any]]:
    """One row per test shown: the flakiest scored, then the quarantined ones."""
    ranked = _ranked(scores)
    strip_ids = timeline.run_numbers(store, shown.strip)
    quarantined_now = failures.quarantined(store, strip_ids[-1]) if strip_ids else set()
    wanted = [s.test_id for s in ranked]
    by_key = {id_key(name): name for name in names}
    wanted += [
        by_key[k] for k in sorted(quarantined_now) if k in by_key and by_key[k] not in wanted
    ]
    wanted = wanted[:MAX_TESTS]
    numbers = [names[t] for t in wanted if t in names]
    run_map = {r.run_key: r for r in [*shown.strip, *shown.trend]}
    all_runs = list(run_map.values())
    id_of = dict(zip([r.run_key for r in all_runs], timeline.run_numbers(store, all_runs)))
    letters = timeline.cells(store, list(id_of.values()), numbers)
    streaks = _since_quarantined(store, strip_ids, quarantined_now)
    week_of = {id_of[r.run_key]: _week(r.context.started_at) for r in shown.trend}
    rows = []
    for test_id in wanted:
        number = names.get(test_id)
        own = letters.get(number, {}) if number is not None else {}
        row: dict[str, Any] = {
            "i": test_id,
            "strip": "".join(own.get(run, "n") for run in strip_ids),
            "trend": _trend(own, week_of, shown.trend_weeks),
            "issue": issue_url(shown.repository, test_id),
        }
        score = scores.get(test_id)
        if score is not None:
            row.update(_score_fields(score))
        key = id_key(test_id)
        if key in streaks:
            first = shown.strip[len(shown.strip) - streaks[key]]
            row["quarantined"] = {"runs": streaks[key], "since": first.context.started_at}
        rows.append(row)
    return rows


def _groups(store: HistoryStore, names: dict[str, int]) -> tuple[list[dict[str, Any]], int]:
    """The failures of every test grouped by signature, and how many failures were kept."""
    run_info = {
        number: (str(started or ""), _url(repository_of, run_id))
        for number, started, repository_of, run_id in store.read(
            "SELECT id, started_at, repository, run_id FROM runs"
        )
    }
    found = failures.failures(store)
    groups = group_failures(
        found,
        failures.signatures(store, (f.signature for f in found)),
        {number: name for name, number in names.items()},
        run_info,
    )
    return [group.to_json() for group in groups], len(found)


def collect(store: HistoryStore, options: DashboardOptions) -> dict[str, Any]:
    """The dashboard's data, plain and JSON-able."""
    selection, scores = score_window(
        store,
        options.window,
        options.branch,
        options.branch_source,
        options.min_runs,
        now=options.now,
    )
    shown = _shown(store, options.branch)
    names = timeline.test_numbers(store)
    groups, kept = _groups(store, names)
    counts = store.counts()
    share = options.window.fell_over_share
    return {
        "repository": shown.repository,
        "branch": options.branch,
        "generated_at": (options.now or dt.datetime.now(dt.timezone.utc)).isoformat(
            timespec="seconds"
        ),
        "window": selection.info.to_json(),
        "counts": {"runs": counts[0], "tests": counts[1], "entries": counts[2]},
        "weeks": weeks(shown.every, share),
        "strip_runs": [
            {
                "at": r.context.started_at,
                "url": run_url(r),
                "commit": r.context.commit[:10],
                "fell_over": fell_over(r, share),
            }
            for r in shown.strip
        ],
        "trend_weeks": shown.trend_weeks,
        "tests": _test_rows(store, shown, scores, names),
        "scored": len(scores),
        "groups": groups,
        "failures_kept": kept,
    }


def _url(repository: str, run_id: Optional[int]) -> str:
    if not repository or not run_id:
        return ""
    return f"https://github.com/{repository}/actions/runs/{run_id}"
