"""``flakewarden burn-in [options] -- <pytest command>``: stress what a change adds or changes."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Optional, TypeVar

from flakewarden.actions import runtime
from flakewarden.burn_in import BurnIn, BurnInOptions, run_burn_in
from flakewarden.burn_in.report import (
    MARKDOWN_FILE,
    plan_annotations,
    render_markdown,
    write_report,
)
from flakewarden.burn_in.run import COLLECTION_DIR, TESTS_DIR
from flakewarden.commands.argtypes import number, whole_number
from flakewarden.config import load as load_config
from flakewarden.console import complain, plural, say
from flakewarden.errors import UsageError
from flakewarden.reports.report_dir import claim_directory, record_written

HELP = "stress the tests a change adds or changes, within a budget; a new flaky test fails"
WHO = "flakewarden burn-in"
OWNED = ("burn-in.json", MARKDOWN_FILE, TESTS_DIR, COLLECTION_DIR)
T = TypeVar("T")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "burn-in",
        help=HELP,
        description=f"{HELP.capitalize()}. Put the test command after --, e.g. "
        "flakewarden burn-in --base origin/main -- python -m pytest",
    )
    parser.add_argument(
        "--base",
        metavar="REF",
        help="compare HEAD with its merge base with REF (default: the pull request's base "
        "branch on GitHub Actions, else origin/HEAD)",
    )
    parser.add_argument(
        "--budget-seconds",
        type=number(0, 24 * 3600, low_open=True, what="seconds"),
        default=None,
        help="seconds for all the selected tests together (default: the config's "
        "burn_in.budget_seconds, 120)",
    )
    parser.add_argument(
        "--cap",
        type=whole_number(1, 10_000),
        default=None,
        help="stress at most N tests, the most recently changed first (default: the "
        "config's burn_in.cap, 40)",
    )
    parser.add_argument(
        "--history",
        type=Path,
        metavar="DB",
        help="the flake history: a collected test the base branch never ran counts as new",
    )
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=Path("flakewarden-burn-in"),
        help="where burn-in.json, burn-in.md and each test's stress files go "
        "(default flakewarden-burn-in/)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        help="configuration file (default .github/flakewarden.yml when present)",
    )
    parser.set_defaults(handler=handle)


def _say(message: str) -> None:
    say(message, WHO)


def _progress(message: str) -> None:
    complain(message, WHO)


def _pick(given: Optional[T], configured: T) -> T:
    return configured if given is None else given


def handle(args: argparse.Namespace) -> int:
    if not args.test_command:
        raise UsageError(
            "no test command: put it after --, e.g. flakewarden burn-in -- python -m pytest"
        )
    if args.history is not None and not args.history.is_file():
        raise UsageError(f"--history: no such file: {args.history}")
    cwd = Path(os.getcwd())
    settings = load_config(args.config, cwd).burn_in
    report_dir: Path = args.report_dir.resolve()
    options = BurnInOptions(
        command=list(args.test_command),
        cwd=cwd,
        report_dir=report_dir,
        base=args.base,
        budget_seconds=_pick(args.budget_seconds, settings.budget_seconds),
        cap=_pick(args.cap, settings.cap),
        history=args.history,
        fail_on_flaky=settings.fail_on_flaky,
    )
    claim_directory(report_dir, OWNED)
    result = run_burn_in(options, _say, _progress)
    write_report(result, report_dir)
    record_written(report_dir)
    _finish(result, args.report_dir)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        runtime.emit_annotations(plan_annotations(result, os.environ.get("GITHUB_WORKSPACE")))
        runtime.append_step_summary(render_markdown(result))
    return result.exit_code


def _finish(result: BurnIn, report_dir: Path) -> None:
    if result.unavailable is not None:
        runtime.warn(f"burn-in ran nothing: no diff to select tests from: {result.unavailable}")
        _say("nothing run (no diff); exit 0")
        return
    if result.selection is None or not result.outcomes:
        for note in result.notes if result.selection is None else ():
            _say(note)
        if not result.collect_errors:
            _say("nothing to burn in; exit 0")
    if result.interrupted:
        _say("interrupted: the report holds the verdicts reached so far")
    if result.outcomes:
        counts: dict[str, int] = {}
        for outcome in result.outcomes:
            counts[outcome.verdict] = counts.get(outcome.verdict, 0) + 1
        shown = ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
        _say(f"{plural(len(result.outcomes), 'test')} burned in in {result.seconds:.0f} s: {shown}")
    failing = result.failing
    if failing:
        consequence = (
            "the check fails"
            if result.options.fail_on_flaky
            else "a warning only (burn_in.fail_on_flaky: false)"
        )
        _say(f"{plural(len(failing), 'new flaky or broken test')}: {consequence}")
        for outcome in failing:
            _say(f"  {outcome.node_id}: {outcome.verdict}; reproduce: {outcome.reproduce}")
    if result.collect_errors:
        _say(f"{plural(len(result.collect_errors), 'collection error')}: the check fails")
    _say(f"report: {report_dir / MARKDOWN_FILE}")
