"""``flakewarden merge DIR... --report-dir OUT``: the shards of a suite, one report."""

from __future__ import annotations

import argparse
from pathlib import Path

from flakewarden.commands.argtypes import add_gate_options, whole_number
from flakewarden.commands.shard_options import MAX_SHARDS
from flakewarden.config import load as load_config
from flakewarden.console import one_line
from flakewarden.errors import UsageError

HELP = "combine the report directories of a suite's shards into one report"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "merge",
        help=HELP,
        description=f"{HELP.capitalize()}: tests, attempts, totals and coverage (combined "
        "with the project's [paths]), judged as one run. Every expected shard must be there "
        "once and no test in two; a missing shard fails the merge.",
    )
    parser.add_argument("directories", nargs="+", type=Path, metavar="DIR")
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=None,
        help="where the merged report goes (default: the configured report_dir)",
    )
    parser.add_argument(
        "--expect",
        type=whole_number(1, MAX_SHARDS),
        default=None,
        metavar="N",
        help="the number of shards the suite was split into (default: what the reports say)",
    )
    add_gate_options(parser)
    parser.add_argument("--config", type=Path, default=None, help="configuration file")
    parser.add_argument("--artifact-name", default=None, help="the artifact the summary names")
    parser.set_defaults(handler=merge)


def merge(args: argparse.Namespace) -> int:
    if getattr(args, "test_command", None):
        raise UsageError("merge takes no test command after `--`")
    from flakewarden.reports.report_json import claim_directory, write_reports
    from flakewarden.runner import coverage_merge, shard_merge
    from flakewarden.runner.folding import exit_code
    from flakewarden.runner.run_options import REPORT_FILES

    cwd = Path.cwd()
    config = load_config(args.config, cwd)
    out = (args.report_dir or Path(config.report_dir)).absolute()
    for directory in args.directories:
        if directory.absolute() == out:
            raise UsageError(f"{directory} is both a shard and the merged report's directory")
    shards = shard_merge.read_shards(args.directories)
    problems = shard_merge.completeness(shards, args.expect)
    claim_directory(out, REPORT_FILES)
    report, ended_with, red = shard_merge.merge_reports(shards, out, problems)
    files, missing = shard_merge.coverage_inputs(shards)
    fail_under = args.cov_fail_under if args.cov_fail_under is not None else config.cov_fail_under
    if files or missing:
        report.coverage = coverage_merge.merge(files, out, cwd=cwd, fail_under=fail_under)
        report.coverage.errors = missing + report.coverage.errors
    fail_on_flaky = config.fail_on_flaky if args.fail_on_flaky is None else args.fail_on_flaky
    blame = report.blame
    forgiven = frozenset(blame.ignored if blame and blame.policy == "ignore-in-gate" else ())
    report.exit_code = exit_code(
        report,
        ended_with=ended_with,
        not_green=red,
        fail_on_flaky=fail_on_flaky,
        forgiven=forgiven,
    )
    write_reports(report, out, artifact_name=args.artifact_name)
    totals = report.totals
    print(
        one_line(
            f"flakewarden: merged {len(shards)} reports into {out}: {totals.passed} passed, "
            f"{totals.failed} failed, {totals.skipped} skipped, {totals.flaky} flaky, "
            f"{totals.error} error, {totals.quarantined} quarantined"
        )
    )
    for problem in report.problems:
        print(one_line(f"flakewarden: {problem}"))
    if report.coverage is not None and report.coverage.percent is not None:
        gate = f" ({report.coverage.gate_message})" if report.coverage.gate_message else ""
        print(one_line(f"flakewarden: merged coverage {report.coverage.percent_display}%{gate}"))
    return report.exit_code
