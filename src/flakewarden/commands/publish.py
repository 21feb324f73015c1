"""``flakewarden publish``: annotate, summarise and set outputs from a saved report.

For reports produced elsewhere (another job, a container, a downloaded
artifact): the same GitHub Actions output ``flakewarden run`` gives at its end.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from flakewarden.errors import ReportMissing, UsageError
from flakewarden.github import gha
from flakewarden.model import ExitCode, RunReport
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
    report = load_report(args.report_dir)
    gha.publish(report, args.report_dir, artifact_name=args.artifact_name)
    return int(ExitCode.OK)
