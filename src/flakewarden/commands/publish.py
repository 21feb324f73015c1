"""``flakewarden publish``: annotate, summarise and set outputs from a saved report.

For reports produced elsewhere (another job, a container, a downloaded
artifact): the same GitHub Actions output ``flakewarden run`` gives at its end.
With ``--junit``, the report is first built from another runner's JUnit XML files
(``reports.junit_import``) and written into the report directory, and the command
exits as ``flakewarden run`` would have.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from flakewarden.actions import runtime
from flakewarden.commands.argtypes import add_xunit1_option
from flakewarden.errors import ReportMissing, UsageError
from flakewarden.model import ExitCode, RunReport
from flakewarden.reports.report_dir import claim_directory
from flakewarden.reports.report_json import REPORT_JSON, read_report


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "publish",
        help="annotate and summarise a saved report in GitHub Actions",
        description=(
            "Read REPORT_DIR/report.json and write what a GitHub Actions step shows: "
            "annotations on stdout, the job summary ($GITHUB_STEP_SUMMARY) and the "
            "step outputs ($GITHUB_OUTPUT). Outside GitHub Actions only the annotation "
            "lines are printed. Exits 0 once published, whatever the tests did."
        ),
    )
    parser.add_argument(
        "--report-dir",
        default="flakewarden-report",
        type=Path,
        help="directory holding report.json (default: %(default)s)",
    )
    parser.add_argument(
        "--junit",
        nargs="+",
        default=None,
        metavar="PATH_OR_GLOB",
        help="build the report from these JUnit XML files (globs, ** recursive) that another "
        "runner wrote, write it into --report-dir, publish it and exit as flakewarden run "
        "would (0 green, flaky included; 1 failures; 5 no tests)",
    )
    parser.add_argument(
        "--quarantined-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="with --junit: quarantined test ids (a JSON list or one per line); their "
        "failures do not fail the exit code",
    )
    parser.add_argument(
        "--fail-on-flaky",
        action="store_true",
        help="with --junit: exit 1 when a test was flaky",
    )
    add_xunit1_option(parser)
    parser.add_argument(
        "--artifact-name",
        default=None,
        help="name of the artifact holding the report, named in the summary",
    )
    parser.set_defaults(handler=publish)


def load_report(report_dir: Path) -> RunReport:
    """Read ``report.json``; a missing one is a usage error (exit 4), a bad one exit 3."""
    try:
        return read_report(report_dir / REPORT_JSON)
    except ReportMissing as exc:
        raise UsageError(str(exc)) from None


def publish(args: argparse.Namespace) -> int:
    if getattr(args, "test_command", None):
        raise UsageError("publish takes no test command after `--`")
    if args.junit:
        return publish_junit(args)
    report = load_report(args.report_dir)
    runtime.publish(report, args.report_dir, artifact_name=args.artifact_name)
    return int(ExitCode.OK)


def publish_junit(args: argparse.Namespace) -> int:
    """Build the report from JUnit XML files, write it, publish it; the run's exit code."""
    from flakewarden.commands.run import console_summary
    from flakewarden.history.context import collect_context
    from flakewarden.quarantine.labels import read_quarantined_file
    from flakewarden.reports.junit_import import junit_paths, report_from_junit
    from flakewarden.reports.report_json import write_reports
    from flakewarden.runner.folding import exit_code

    cwd = Path.cwd()
    report_dir = args.report_dir if args.report_dir.is_absolute() else cwd / args.report_dir
    quarantined: frozenset[str] = frozenset()
    if args.quarantined_file is not None:
        quarantined = read_quarantined_file(args.quarantined_file)
    paths = junit_paths(args.junit, cwd)
    command = ["flakewarden", "publish", "--junit", *args.junit]
    report = report_from_junit(paths, cwd, quarantined, command)
    report.exit_code = exit_code(
        report, ended_with=None, not_green=False, fail_on_flaky=args.fail_on_flaky
    )
    report.context = collect_context(
        os.environ, started_at=report.started_at, version=report.version
    )
    claim_directory(report_dir, JUNIT_REPORT_FILES)
    write_reports(report, report_dir, artifact_name=args.artifact_name, xunit1=args.junit_xunit1)
    console_summary(report, args.report_dir)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        runtime.publish(report, report_dir, artifact_name=args.artifact_name)
    return report.exit_code


#: What a report built from JUnit files holds (no attempts, no coverage).
JUNIT_REPORT_FILES = (
    "report.json",
    "rerun-report.txt",
    "junit.xml",
    "junit-xunit1.xml",
    "summary.md",
    "report.html",
)
