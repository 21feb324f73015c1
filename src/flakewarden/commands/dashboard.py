"""``flakewarden dashboard``: the flake history as a static site (docs/html-report.md).

``flakewarden dashboard --db HISTORY --out DIR`` writes ``DIR/index.html``: flaky runs
per week, the flakiest tests of the window with their rate, interval, trend and runs,
their quarantine state and stress verdicts, and the failures grouped by signature. A
missing or unreadable database is one line and exit code 4, never an empty site.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from flakewarden.commands.history_options import add_window_options, open_history, window_of
from flakewarden.config import load
from flakewarden.console import complain, plural, say
from flakewarden.errors import ReportError
from flakewarden.model import ExitCode

DEFAULT_DB = Path("flakewarden-history.db")
DEFAULT_OUT = Path("flakewarden-dashboard")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dashboard",
        help="build a static dashboard (one HTML page) from the flake history",
        description=(
            "Write OUT/index.html from the history database: flaky runs per week, the "
            "flakiest tests of the window (as history show scores them) with their rate, "
            "95% interval, weekly trend and run history, their quarantine state and stress "
            "verdicts, and the failures of every test grouped by signature. The page is "
            "self-contained: it opens from a file, an artifact or GitHub Pages."
        ),
    )
    parser.add_argument(
        "--db",
        type=Path,
        default=DEFAULT_DB,
        metavar="PATH",
        help=f"the history database (default: {DEFAULT_DB}); it must exist",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"where index.html goes (default: {DEFAULT_OUT}/; created when absent)",
    )
    parser.add_argument(
        "--verdicts",
        type=Path,
        nargs="*",
        default=[],
        metavar="PATH",
        help="stress report directories (or verdict.json files) whose verdicts to show",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="configuration file (default .github/flakewarden.yml when present)",
    )
    add_window_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from flakewarden.dashboard.collect import DashboardOptions, collect
    from flakewarden.dashboard.site import write_site
    from flakewarden.dashboard.verdicts import read_verdicts

    config = load(args.config, Path.cwd())
    window, branch, source = window_of(args, config)
    options = DashboardOptions(window, branch, source, config.quarantine_policy.min_runs)
    verdicts, skipped = read_verdicts(args.verdicts)
    for line in skipped:
        complain(f"not a stress verdict, skipped: {line}")
    store = open_history(args.db)
    try:
        data = collect(store, options)
    finally:
        store.close()
    data["verdicts"] = verdicts
    try:
        target = write_site(data, args.out)
    except OSError as exc:
        raise ReportError(f"cannot write the dashboard in {args.out}: {exc.strerror}") from exc
    say(
        f"dashboard: {target}: {plural(len(data['tests']), 'flaky test')} of "
        f"{data['scored']} scored, {plural(len(data['groups']), 'failure group')}, "
        f"{plural(data['counts']['runs'], 'run')} in the history"
    )
    return int(ExitCode.TESTS_FAILED if skipped else ExitCode.OK)
