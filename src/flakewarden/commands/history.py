"""``flakewarden history``: the flake history; this module owns the group and ``ingest``.

``flakewarden history ingest REPORT_DIR... [--from-github]`` adds runs to the SQLite
history (docs/history.md). Other ``history`` subcommands live in modules of their
own, named in ``SUBCOMMAND_MODULES``: each exposes ``register(subparsers)`` and is
registered here when it exists.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from typing import Any

from flakewarden.commands.argtypes import whole_number
from flakewarden.commands.github_access import add_github_options
from flakewarden.console import complain, say
from flakewarden.errors import ReportError
from flakewarden.history.store import HistoryStore
from flakewarden.model import ExitCode
from flakewarden.reports.report_json import read_report

DEFAULT_DB = "flakewarden-history.db"
#: ``flakewarden history`` subcommands defined elsewhere (``commands/<name>.py``).
SUBCOMMAND_MODULES: tuple[str, ...] = ("history_show",)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "history",
        help="the flake history: ingest runs into a SQLite file, show failure rates",
        description="Keep every run's per-test results in one SQLite file (see docs/history.md).",
    )
    group = parser.add_subparsers(
        dest="history_command", metavar="SUBCOMMAND", parser_class=type(parser)
    )
    group.required = True
    register_ingest(group)
    for name in SUBCOMMAND_MODULES:
        module = f"{__package__}.{name}"
        if importlib.util.find_spec(module) is not None:
            importlib.import_module(module).register(group)


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        type=Path,
        default=Path(DEFAULT_DB),
        metavar="PATH",
        help=f"the history database (default {DEFAULT_DB}; created when absent)",
    )


def register_ingest(group: Any) -> None:
    parser = group.add_parser(
        "ingest",
        help="add runs to the history: report directories, or artifacts from GitHub",
        description=(
            "Add each REPORT_DIR's report.json to the history, and with --from-github every "
            "completed workflow run's flakewarden report artifacts not ingested yet. A run "
            "already in is left as it is. Expired artifacts and unreadable reports are "
            "counted and named, never fatal."
        ),
    )
    parser.add_argument("report_dirs", nargs="*", type=Path, metavar="REPORT_DIR")
    add_db_option(parser)
    parser.add_argument(
        "--from-github",
        action="store_true",
        help="download the report artifacts of the completed runs not looked at yet "
        "(needs only actions: read)",
    )
    add_github_options(parser, what="repository whose runs to read")
    parser.add_argument(
        "--workflow",
        default="",
        metavar="FILE",
        help="only this workflow's runs: its file name (ci.yml) or id (default: every workflow)",
    )
    parser.add_argument("--branch", default="", help="only runs on this branch (default: all)")
    parser.add_argument("--event", default="", help="only runs of this event (default: all)")
    parser.add_argument(
        "--artifact-prefix",
        default="flakewarden-",
        metavar="PREFIX",
        help="read artifacts whose name starts with this (default flakewarden-, the action's)",
    )
    parser.add_argument(
        "--max-runs",
        type=whole_number(1, 100_000),
        default=1000,
        metavar="N",
        help="look at most at the N newest new runs (default 1000)",
    )
    parser.set_defaults(handler=run_ingest)


def run_ingest(args: argparse.Namespace) -> int:
    if not args.report_dirs and not args.from_github:
        from flakewarden.errors import UsageError

        raise UsageError("nothing to ingest: name report directories, or pass --from-github")
    unreadable = 0
    with HistoryStore.open(args.db) as store:
        added = already = 0
        for directory in args.report_dirs:
            try:
                report = read_report(directory)
            except ReportError as exc:
                unreadable += 1
                complain(f"unreadable report, skipped: {exc}")
                continue
            if store.ingest(report, str(directory)):
                added += 1
            else:
                already += 1
        if args.report_dirs:
            say(
                f"{added} run(s) ingested from {len(args.report_dirs)} report dir(s), "
                f"{already} already in, {unreadable} unreadable"
            )
        if args.from_github:
            from flakewarden.commands.history_github import ingest_from_github

            ingest_from_github(store, args, say, complain)
        runs, tests, entries = store.counts()
    say(f"{args.db}: {runs} run(s), {tests} test(s), {entries} entries")
    return int(ExitCode.TESTS_FAILED if unreadable else ExitCode.OK)
