"""``flakewarden history show``: every test's score over the window, most urgent first.

The console lists the broken, flaky and new tests (``--all`` adds the healthy
ones); ``--json`` always holds every test. Each id is printed through
``one_line``, so no test name can form a workflow command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from flakewarden.commands.history_options import add_window_options, load_scores
from flakewarden.config import load
from flakewarden.console import json_line, one_line, plural
from flakewarden.model import ExitCode
from flakewarden.model.scores import HEALTHY, STATES, TestScore

#: What ``--json`` writes; bumped when a field changes meaning.
JSON_SCHEMA = 1
DEFAULT_DB = Path("flakewarden-history.db")


def register(subparsers: Any) -> None:
    """Registered under ``flakewarden history`` beside ``ingest``."""
    parser = subparsers.add_parser(
        "show",
        help="print each test's failure rate, interval and state over the window",
        description=(
            "Score every test over the window (default: the last 50 runs of the default "
            "branch): runs, first-attempt failures, flaky runs, hard failures, the failure "
            "rate with its exact 95% interval, first and last seen, and a state (broken, "
            "flaky, new, healthy). Runs where the suite fell over are excluded and counted; "
            "pull-request runs are scored apart."
        ),
    )
    parser.add_argument(
        "--db",
        type=Path,
        default=DEFAULT_DB,
        metavar="PATH",
        help=f"the history database (default: {DEFAULT_DB})",
    )
    parser.add_argument("--json", action="store_true", help="write JSON to standard output")
    parser.add_argument("--test", default=None, metavar="ID", help="only this test")
    parser.add_argument(
        "--all", action="store_true", help="list the healthy tests too (--json always does)"
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="configuration file (default .github/flakewarden.yml when present)",
    )
    add_window_options(parser)
    parser.set_defaults(handler=run)


def ordered(scores: Iterable[TestScore]) -> list[TestScore]:
    """Broken, flaky, new, healthy; within a state most flaky runs, highest rate, then id."""
    rank = {state: n for n, state in enumerate(STATES)}
    return sorted(
        scores, key=lambda s: (rank.get(s.state, 9), -s.flaky_runs, -s.rate, -s.runs, s.test_id)
    )


def _percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def line_of(score: TestScore) -> str:
    low, high = score.interval
    pr = score.pull_requests
    pulls = f"{pr.first_attempt_failures}/{pr.runs}" if pr.runs else "-"
    return (
        f"{score.state:<8} {_percent(score.rate):>6} [{_percent(low):>6}, {_percent(high):>6}]"
        f" {score.runs:>5} {score.first_attempt_failures:>5} {score.flaky_runs:>5}"
        f" {score.hard_failures:>5} {pulls:>9}  {score.first_seen[:10] or '?':<10}"
        f" {score.last_seen[:10] or '?':<10}  {one_line(score.test_id)}"
    )


HEADER = (
    f"{'STATE':<8} {'RATE':>6} {'95% INTERVAL':^18} {'RUNS':>5} {'FAILS':>5} {'FLAKY':>5}"
    f" {'HARD':>5} {'PR FAILS':>9}  {'FIRST SEEN':<10} {'LAST SEEN':<10}  TEST"
)


def run(args: argparse.Namespace) -> int:
    config = load(args.config, Path.cwd())
    selection, scores = load_scores(args.db, args, config)
    chosen = list(scores.values())
    if args.test is not None:
        chosen = [s for s in chosen if s.test_id == args.test]
    chosen = ordered(chosen)
    info = selection.info
    if args.json:
        document = {
            "schema": JSON_SCHEMA,
            "window": info.to_json(),
            "min_runs": config.quarantine_policy.min_runs,
            "tests": [s.to_json() for s in chosen],
        }
        sys.stdout.write(json_line(document) + "\n")
    else:
        out = [f"flakewarden: history window: {one_line(info.describe())}"]
        listed = (
            chosen
            if (args.all or args.test is not None)
            else [s for s in chosen if s.state != HEALTHY]
        )
        if listed:
            out.append(HEADER)
            out += [line_of(s) for s in listed]
        if info.runs == 0 and not info.excluded and info.branch:
            out.append(
                f"flakewarden: no run of {one_line(info.branch)} in the window; runs made "
                "outside GitHub Actions and a git branch record none: --branch '' scores them"
            )
        hidden = len(chosen) - len(listed)
        counts = {state: sum(1 for s in chosen if s.state == state) for state in STATES}
        summary = ", ".join(f"{counts[state]} {state}" for state in STATES)
        out.append(
            f"flakewarden: {plural(len(chosen), 'test')} scored ({summary})"
            + (f"; {hidden} healthy not listed (--all lists them)" if hidden else "")
        )
        sys.stdout.write("\n".join(out) + "\n")
    if args.test is not None and not chosen:
        sys.stderr.write(
            f"flakewarden: error: no runs of {one_line(args.test)} in the window "
            "(check the id, --branch and the window options)\n"
        )
        return int(ExitCode.TESTS_FAILED)
    return int(ExitCode.OK)
