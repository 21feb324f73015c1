"""The window options and the history loading that ``history show``, ``quarantine``,
``reevaluate`` and ``digest`` share.

Apart from any one command so the commands stay siblings, none importing another.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Optional

from flakewarden.commands.argtypes import number, whole_number
from flakewarden.commands.github_access import event_payload
from flakewarden.config import Config


def add_window_options(parser: argparse.ArgumentParser) -> None:
    """``--window-runs``, ``--window-days``, ``--branch``: the runs a score is computed over."""
    parser.add_argument(
        "--window-runs",
        type=whole_number(1),
        default=None,
        metavar="N",
        help="score over the last N runs of the branch (default: history.window_runs, else 50)",
    )
    parser.add_argument(
        "--window-days",
        type=number(0, 3650, low_open=True, what="a number of days"),
        default=None,
        metavar="DAYS",
        help="score over the runs of the last DAYS days (with --window-runs: the narrower)",
    )
    parser.add_argument(
        "--branch",
        default=None,
        help="the default branch whose runs are scored (default: history.default_branch, "
        "else the repository's default from the event, else main); '' for the runs made "
        "with no branch (outside GitHub Actions and any git branch)",
    )


def add_history_option(parser: argparse.ArgumentParser, instead: str) -> None:
    """``--history PATH`` and the window options, for a command that can decide from history."""
    parser.add_argument(
        "--history",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"the flake history database (from `flakewarden history ingest`); "
        f"without it, {instead}",
    )
    add_window_options(parser)


def repository_default_branch(env: Optional[dict[str, str]] = None) -> Optional[str]:
    """The repository's default branch from the GitHub Actions event payload, if any."""
    repo = event_payload(env).get("repository")
    branch = repo.get("default_branch") if isinstance(repo, dict) else None
    return branch if isinstance(branch, str) and branch else None


def window_of(args: argparse.Namespace, config: Config) -> tuple[Any, str, str]:
    """The window options, the default branch and where that branch came from."""
    from flakewarden.history.window import WindowOptions, resolve_branch

    hist = config.history
    runs = args.window_runs if args.window_runs is not None else hist.window_runs
    days = args.window_days if args.window_days is not None else hist.window_days
    if args.window_days is not None and args.window_runs is None:
        runs = None  # asked for days only: every run of those days
    options = WindowOptions(runs=runs, days=days, fell_over_share=hist.fell_over_share)
    branch, source = resolve_branch(args.branch, hist.default_branch, repository_default_branch())
    return options, branch, source


def open_history(path: Path) -> Any:
    """The store at ``path``; a missing file is an error (exit 4), never a new empty history."""
    from flakewarden.history.store import HistoryStore

    return HistoryStore.open(path, create=False)


def load_scores(
    path: Path, args: argparse.Namespace, config: Config, *, with_previous: bool = False
) -> tuple[Any, dict[str, Any]]:
    """(selection, scores by test id) over the window the options and config ask for."""
    store = open_history(path)
    try:
        return scores_in(store, args, config, with_previous=with_previous)
    finally:
        store.close()


def scores_in(
    store: Any, args: argparse.Namespace, config: Config, *, with_previous: bool = False
) -> tuple[Any, dict[str, Any]]:
    """``load_scores`` from a store the caller opened (and reads more of)."""
    from flakewarden.history.window import score_window

    options, branch, source = window_of(args, config)
    return score_window(
        store,
        options,
        branch,
        source,
        config.quarantine_policy.min_runs,
        with_previous=with_previous,
        environment=config.causes.environment,
    )
