"""Which runs a score is computed over: the window, its branch, and the runs it leaves out.

The rate is a default-branch figure: pull-request runs are selected apart (a PR
under work fails for its own reasons), and a run in which more than a share of
the tests failed on their first attempt is left out and counted (the suite fell
over, not the test).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from flakewarden.model.environment import DEFAULT_PATTERNS
from flakewarden.model.history import HistoryRun
from flakewarden.model.scores import TestScore, WindowInfo

if TYPE_CHECKING:
    from flakewarden.history.store import HistoryStore

PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
DEFAULT_RUNS = 50
DEFAULT_FELL_OVER_SHARE = 0.30
FALLBACK_BRANCH = "main"


@dataclasses.dataclass(frozen=True)
class WindowOptions:
    """The window as asked for: a number of runs, a number of days, or both (the narrower)."""

    runs: Optional[int] = DEFAULT_RUNS
    days: Optional[float] = None
    fell_over_share: float = DEFAULT_FELL_OVER_SHARE


def resolve_branch(
    option: Optional[str], configured: Optional[str], repository_default: Optional[str]
) -> tuple[str, str]:
    """The default branch and where it came from (a key of ``BRANCH_SOURCES``).

    An empty ``--branch ''`` is kept: it selects the runs with no branch recorded (made
    outside GitHub Actions)."""
    if option is not None:
        return option, "option"
    if configured:
        return configured, "config"
    if repository_default:
        return repository_default, "repository"
    return FALLBACK_BRANCH, "fallback"


def is_pull_request(run: HistoryRun) -> bool:
    return run.context.is_pull_request


def fell_over(run: HistoryRun, share: float) -> bool:
    """More than ``share`` of the run's tests failed their first attempt, it ran none, or it
    stopped at ``--max-failures`` (nothing was rerun, so a flake cannot be told from a break)."""
    if run.tests <= 0 or run.cutoff:
        return True
    return bool(run.first_attempt_failures / run.tests > share)


@dataclasses.dataclass(frozen=True)
class Selection:
    """The runs of one window, newest first, and the window before it (for the trend)."""

    info: WindowInfo
    runs: list[HistoryRun]
    excluded: list[HistoryRun]
    pull_requests: list[HistoryRun]
    previous: list[HistoryRun]
    # The window before's runs that fell over: a cause's trend counts every run it hit.
    previous_excluded: list[HistoryRun] = dataclasses.field(default_factory=list)


def _since(now: dt.datetime, days: Optional[float], factor: int = 1) -> Optional[dt.datetime]:
    return None if days is None else now - dt.timedelta(days=days * factor)


def _started(run: HistoryRun) -> str:
    return str(run.context.started_at or "")


def select(
    store: HistoryStore,
    options: WindowOptions,
    branch: str,
    branch_source: str,
    now: Optional[dt.datetime] = None,
    with_previous: bool = False,
) -> Selection:
    """The scored runs of ``branch``, the excluded ones, the pull-request runs, and
    (``with_previous``) the window of the same size just before."""
    now = now or dt.datetime.now(dt.timezone.utc)
    factor = 2 if with_previous else 1
    pushed = [
        r
        for r in store.runs(branch=branch, since=_since(now, options.days, factor))
        if not is_pull_request(r)
    ]
    if options.days is not None:
        boundary = _iso(now - dt.timedelta(days=options.days))
        current = [r for r in pushed if _started(r) >= boundary]
        current = current[: options.runs] if options.runs is not None else current
        older = [r for r in pushed if _started(r) < boundary]
        previous = older[: options.runs] if options.runs is not None else older
    else:
        size = options.runs if options.runs is not None else len(pushed)
        current, previous = pushed[:size], pushed[size : size * 2]
    if not with_previous:
        previous = []
    share = options.fell_over_share
    scored = [r for r in current if not fell_over(r, share)]
    excluded = [r for r in current if fell_over(r, share)]
    pulls = store.runs(events=list(PULL_REQUEST_EVENTS), since=_since(now, options.days))
    # A pull request's runs count when it targets the branch (or its base is unknown).
    pulls = [r for r in pulls if r.context.base_branch in ("", branch)][: options.runs]
    pulls = [r for r in pulls if not fell_over(r, share)]
    info = WindowInfo(
        branch=branch,
        branch_source=branch_source,
        runs=len(scored),
        excluded=len(excluded),
        pull_request_runs=len(pulls),
        limit_runs=options.runs,
        limit_days=options.days,
        oldest=_started(scored[-1]) if scored else "",
        newest=_started(scored[0]) if scored else "",
    )
    return Selection(
        info,
        scored,
        excluded,
        pulls,
        [r for r in previous if not fell_over(r, share)],
        [r for r in previous if fell_over(r, share)],
    )


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def score_window(
    store: HistoryStore,
    options: WindowOptions,
    branch: str,
    branch_source: str,
    min_runs: int,
    *,
    with_previous: bool = False,
    now: Optional[dt.datetime] = None,
    environment: Optional[Sequence[str]] = None,
) -> tuple[Selection, dict[str, TestScore]]:
    """Select the window's runs from ``store`` and score every test seen in them.

    ``environment``: the patterns of the environment's causes (the built-in list when None);
    a run every failure of which was one of those is not counted toward a test's score.
    """
    from flakewarden.history.tallies import score_tallies
    from flakewarden.history.tally_query import tally_store, test_names

    chosen = select(store, options, branch, branch_source, now, with_previous)
    names = test_names(store)
    apart = DEFAULT_PATTERNS if environment is None else tuple(environment)
    scores = score_tallies(
        chosen.runs,
        tally_store(store, chosen.runs, names, apart),
        min_runs=min_runs,
        window=chosen.info.describe(),
        pull_runs=chosen.pull_requests,
        pulls=tally_store(store, chosen.pull_requests, names, apart),
        previous=tally_store(store, chosen.previous, names, apart) if with_previous else None,
    )
    return chosen, scores
