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
from flakewarden.commands.history_options import add_history_option, load_scores
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
        from flakewarden.config import load
        from flakewarden.issues.digest.history import HistoryDigest

        selection, scores = load_scores(
            args.history, args, load(args.config, Path.cwd()), with_previous=True
        )
        history = HistoryDigest(selection.info.describe(), list(scores.values()))
    with github_client(args.token, client=client) as github:
        result = build_digest(github, repository, history=history)
    verb = "created" if result.created else "updated"
    source = f"; ranked from the flake history {one_line(args.history)}" if history else ""
    sys.stdout.write(
        f"flakewarden: {verb} the flake digest #{result.number} "
        f"({result.entries} open flaky tests{source}) {result.url}\n"
    )
    return int(ExitCode.OK)
