"""``flakewarden digest``: rewrite the rolling issue that ranks the open flaky tests.

Unlike ``flakewarden issues`` this is its own scheduled job, so a failure is
reported with a non-zero exit code: a digest that silently stops updating
would be worse than a red scheduled run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional

from flakewarden.commands.github_access import (
    add_github_options,
    github_client,
    require_repository,
)
from flakewarden.commands.history_options import add_history_option, open_history, scores_in
from flakewarden.console import one_line
from flakewarden.github.api import GitHubClient
from flakewarden.issues.digest.ranking import build_digest
from flakewarden.model import ExitCode


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "digest",
        help="rank the open flaky-test issues into one rolling digest issue",
        description=(
            "List the open issues labelled flaky-test, rank them by hits (then most recent) "
            "and rewrite the ranking in the issue labelled flake-digest, creating it when absent."
        ),
    )
    add_github_options(parser)
    add_history_option(parser, "the open issues are ranked by their hits")
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="configuration file (default .github/flakewarden.yml when present)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, client: Optional[GitHubClient] = None) -> int:
    repository = require_repository(args.repository)
    history = None
    if getattr(args, "history", None) is not None:
        history = _from_history(args)
    with github_client(args.token, client=client) as github:
        result = build_digest(github, repository, history=history)
    verb = "created" if result.created else "updated"
    source = f"; ranked from the flake history {one_line(args.history)}" if history else ""
    sys.stdout.write(
        f"flakewarden: {verb} the flake digest #{result.number} "
        f"({result.entries} open flaky tests{source}) {result.url}\n"
    )
    return int(ExitCode.OK)


def _from_history(args: argparse.Namespace) -> Any:
    """The history's window: every test's score, and each cause's trend against the window
    before (every run of the branch a cause hit counts, those that fell over too)."""
    from flakewarden.config import load
    from flakewarden.history.failures import cause_runs
    from flakewarden.issues.digest.causes import trends
    from flakewarden.issues.digest.history import HistoryDigest

    config = load(args.config, Path.cwd())
    store = open_history(args.history)
    try:
        selection, scores = scores_in(store, args, config, with_previous=True)
        current = [r.run_key for r in (*selection.runs, *selection.excluded)]
        previous = [r.run_key for r in (*selection.previous, *selection.previous_excluded)]
        hits = cause_runs(store, current + previous)
    finally:
        store.close()
    return HistoryDigest(
        selection.info.describe(), list(scores.values()), trends(current, previous, hits)
    )
