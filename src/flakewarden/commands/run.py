"""``flakewarden run [options] -- <test command>``."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional, TypeVar

from flakewarden.actions.fence import output_fence
from flakewarden.commands.argtypes import (
    add_gate_options,
    add_xunit1_option,
    number,
    rerun_pattern,
    whole_number,
)
from flakewarden.commands.blame_options import add_blame_options, blame_for
from flakewarden.commands.shard_options import add_shard_options, durations_from
from flakewarden.config import load as load_config
from flakewarden.config_values import MAX_ATTEMPT_TIMEOUT
from flakewarden.console import one_line, say
from flakewarden.errors import UsageError
from flakewarden.model import ExitCode, Outcome, timings
from flakewarden.runner.reruns import run_attempts
from flakewarden.runner.run_options import RunOptions

if TYPE_CHECKING:
    from flakewarden.config import Config
    from flakewarden.model import RerunPolicy, RunReport

HELP = "run the tests, rerun only the failed ones in fresh processes, write the reports"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help=HELP,
        description=f"{HELP.capitalize()}. Put the test command after --, "
        "e.g. flakewarden run -- python -m pytest",
    )
    parser.add_argument(
        "--reruns",
        type=whole_number(0, 100),
        default=None,
        help="reruns of failed tests (default 2)",
    )
    parser.add_argument(
        "--max-failures",
        type=whole_number(0),
        default=None,
        help="more failed tests than this is a real break: no reruns (default 10)",
    )
    for name, key in (("only", "only"), ("except", "exclude")):
        parser.add_argument(
            f"--rerun-{name}",
            dest=f"rerun_{key}",
            action="append",
            type=rerun_pattern,
            default=None,
            metavar="PATTERN",
            help=(
                "rerun a failed test only when what it raised matches PATTERN"
                if name == "only"
                else "never rerun a failed test when what it raised matches PATTERN"
            )
            + ": an exception type by name (TimeoutError, requests.exceptions.ReadTimeout; "
            "base classes and the __cause__/__context__ chain count) or a regular expression "
            "on its 'type: message'; type:NAME or message:REGEX for one of the two; "
            f"repeatable (default: the config's rerun.{name})",
        )
    parser.add_argument(
        "--attempt-timeout",
        type=number(0, MAX_ATTEMPT_TIMEOUT, low_open=True, what="a number of seconds"),
        default=None,
        metavar="SECONDS",
        help="stop a test process still running after SECONDS: the test it was running "
        "crashed (timed out), the rest run in a fresh process (default: no limit)",
    )
    parser.add_argument(
        "--fork-reruns",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="fork each rerun from a warm pytest where that is safe; --no-fork-reruns starts "
        "every rerun as a new process (default: the config's fork_reruns, on)",
    )
    parser.add_argument(
        "--coverage",
        action="store_true",
        help="measure coverage by wrapping the command in coverage run",
    )
    add_gate_options(parser)
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=None,
        help="where the reports go (default flakewarden-report)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="configuration file (default .github/flakewarden.yml when present)",
    )
    parser.add_argument(
        "--quarantine-from-github",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="read the quarantined tests (open issues labelled flaky-test and quarantined) "
        "before the first attempt (default: on when GITHUB_TOKEN and GITHUB_REPOSITORY are "
        "set and no --quarantined-file is given)",
    )
    parser.add_argument(
        "--quarantined-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="quarantined test ids, offline: a JSON list or one id per line",
    )
    parser.add_argument(
        "--artifact-name", default=None, help="the artifact name the summary mentions"
    )
    parser.add_argument(
        "--job-name",
        default=None,
        metavar="NAME",
        help="the matrix entry this run is, recorded in report.json for the history "
        "(default FLAKEWARDEN_JOB_NAME, or the matrix the action passes)",
    )
    add_shard_options(parser)
    add_blame_options(parser)
    add_xunit1_option(parser)
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="do not echo the test command's output"
    )
    parser.set_defaults(handler=run)


T = TypeVar("T")


def _pick(given: Optional[T], configured: T) -> T:
    """The command line wins over the configuration file."""
    return configured if given is None else given


def run(args: argparse.Namespace) -> int:
    command = list(args.test_command)
    if not command:
        raise UsageError(
            "no test command: put it after --, e.g. flakewarden run -- python -m pytest"
        )
    # What is loaded now (modules, classes) lives for the whole run: out of the cyclic
    # collector's sight, its collections (and the one at exit) walk only what the run makes.
    gc.freeze()
    cwd = Path.cwd()
    with timings.phase("config"):
        config = load_config(args.config, cwd)
    shown_dir = args.report_dir or Path(config.report_dir)
    report_dir = shown_dir if shown_dir.is_absolute() else cwd / shown_dir
    on_actions = os.environ.get("GITHUB_ACTIONS") == "true"
    local_git: list[tuple[str, str]] = []

    blame = blame_for(args, config, cwd=cwd, report_dir=report_dir, command=command, say=say)

    def beside_first_attempt() -> None:
        if blame is not None:
            blame.prepare()  # the diff, while pytest starts (at once if attempt 1 measures it)
        _import_report_writers()
        from flakewarden.history.context import git_branch_and_commit

        if not on_actions:  # a laptop's branch and commit, read while the tests run
            local_git.append(git_branch_and_commit(cwd))

    options = RunOptions(
        command=command,
        cwd=cwd,
        report_dir=report_dir,
        reruns=_pick(args.reruns, config.reruns),
        max_failures=_pick(args.max_failures, config.max_failures),
        coverage=args.coverage,
        cov_fail_under=_pick(args.cov_fail_under, config.cov_fail_under),
        fail_on_flaky=_pick(args.fail_on_flaky, config.fail_on_flaky),
        quarantined=quarantined_set(args, config.quarantine_read_deadline),
        echo=None if args.quiet else sys.stdout.buffer,
        attempt_timeout=_pick(args.attempt_timeout, config.attempt_timeout),
        fork_reruns=_pick(args.fork_reruns, config.fork_reruns),
        while_first_runs=beside_first_attempt,
        shard=args.shard,
        shard_durations=durations_from(args.shard_durations) if args.shard_durations else None,
        rerun_policy=_rerun_policy(args, config),
        part_env=None if blame is None else blame.part_env,
        judge=None if blame is None else blame.judge,
        environment=config.causes.environment,
        environment_rerun_limit=config.causes.environment_rerun_limit,
    )
    sys.stdout.flush()
    # The tests' output is data: nothing it prints may act as a workflow command.
    with output_fence(options.echo, active=on_actions) as echo:
        report, rendered = run_attempts(options._replace(echo=echo), say)
    from flakewarden.history.context import collect_context
    from flakewarden.reports.report_json import write_reports

    report.environment_patterns = config.causes.environment
    with timings.phase("run context"):
        report.context = collect_context(
            os.environ,
            started_at=report.started_at,
            version=report.version,
            job_name=args.job_name or "",
            cwd=None if local_git else cwd,
            git=local_git[0] if local_git else None,
        )

    write_reports(
        report,
        report_dir,
        artifact_name=args.artifact_name,
        rendered=rendered,
        xunit1=args.junit_xunit1,
    )
    with timings.phase("console summary"):
        console_summary(report, shown_dir)
    if on_actions:
        with timings.phase("github actions"):
            from flakewarden.actions import runtime

            runtime.publish(report, report_dir, artifact_name=args.artifact_name)
    return report.exit_code


def _rerun_policy(args: argparse.Namespace, config: Config) -> Optional[RerunPolicy]:
    """The rerun policy: each list from the command line, else from the config file."""
    only = tuple(args.rerun_only or config.rerun_only)
    exclude = tuple(args.rerun_exclude or config.rerun_except)
    if not only and not exclude:
        return None
    from flakewarden.model.rerun_policy import RerunPolicy

    return RerunPolicy(only, exclude)


def _import_report_writers() -> None:
    """Import the report writers (JSON, JUnit, Markdown, the page) and read the page's
    scripts: run beside attempt 1's pytest, not after the last test."""
    import flakewarden.reports.report_json  # noqa: F401
    from flakewarden.reports.html.report_page import load_assets

    load_assets()


def quarantined_set(args: argparse.Namespace, deadline: float = 15.0) -> frozenset[str]:
    """The tests whose failures do not fail this run; none when the set cannot be read."""
    found: frozenset[str] = frozenset()
    if args.quarantined_file is not None:
        from flakewarden.quarantine.labels import read_quarantined_file

        found = read_quarantined_file(args.quarantined_file)
    # On a laptop the token comes from GITHUB_TOKEN. The action never gives this process a
    # token: it reads the set in a step before the tests and passes --quarantined-file.
    token = os.environ.get("GITHUB_TOKEN")
    repository = os.environ.get("GITHUB_REPOSITORY")
    use_github = args.quarantine_from_github
    if use_github is None:
        use_github = bool(token and repository) and args.quarantined_file is None
    if use_github:
        from flakewarden.commands.quarantined import read_from_github

        from_github = read_from_github(repository, token, deadline)
        if from_github is None:
            return frozenset()
        found |= from_github
    if found:
        say(f"{len(found)} quarantined test(s): they run, and their failures do not fail the job")
    return found


def console_summary(report: RunReport, shown_dir: Path) -> None:
    for problem in report.problems:
        sys.stderr.write(f"flakewarden: {one_line(problem)}\n")
    if report.coverage is not None:
        for error in report.coverage.errors:
            sys.stderr.write(f"flakewarden: coverage: {one_line(error)}\n")
    for test in report.with_outcome(Outcome.FLAKY):
        failed = len(test.failures)
        print(
            f"FLAKY-TEST-DETECTED: {one_line(test.id)} "
            f"({failed}/{len(test.attempts)} attempts failed, then passed)"
        )
    for test in report.with_outcome(Outcome.QUARANTINED):
        print(f"QUARANTINED-TEST-FAILED: {one_line(test.id)} (does not fail the job)")
    for test in report.tests:
        if test.not_rerun:
            print(f"NOT-RERUN: {one_line(test.id)} ({one_line(test.not_rerun)})")
        elif test.outcome == Outcome.PASSED and test.retries:
            print(f"RETRIED-INSIDE: {one_line(test.id)} ({one_line(test.outcome_text)})")
    if report.blame is not None:
        from flakewarden.reports.blame_lines import blame_lines

        for line in blame_lines(report):
            print(line)
    totals = report.totals
    extra = []
    if report.coverage is not None and report.coverage.percent is not None:
        line = f"coverage {report.coverage.percent_display}% (merged over every attempt)"
        if report.coverage.below_threshold:
            line += f", below --cov-fail-under {report.coverage.fail_under:g}"
            if report.coverage.gate_message:
                line += f": {report.coverage.gate_message}"
        extra.append(line)
    if report.cutoff:
        extra.append("no reruns: too many failures")
    attempts = len(report.attempts)
    done = f"{attempts} attempt{'s' if attempts != 1 else ''}"
    if report.junit_from:
        done = f"read {len(report.junit_from)} JUnit XML file(s)"
    say(f"{done}; report in {shown_dir}" + ("".join(f"; {e}" for e in extra)))
    say(
        f"{totals.passed} passed, {totals.failed} failed, {totals.skipped} skipped, "
        f"{totals.flaky} flaky, {totals.error} error, {totals.quarantined} quarantined"
    )
    if report.exit_code not in (ExitCode.OK, ExitCode.TESTS_FAILED) and report.problems:
        # The one line a user acts on, last.
        sys.stderr.write(f"flakewarden: error: {one_line(report.problems[0])}\n")
