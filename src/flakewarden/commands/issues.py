"""``flakewarden issues``: keep one GitHub issue per flaky test in report.json.

Fail-open: every ``FLAKY-TEST-DETECTED`` line is printed before GitHub is
touched (unless ``flakewarden run`` printed them in this same job), any GitHub
failure becomes one warning, and the exit code stays 0. All of it happens within
one deadline (``--deadline``, config ``issues_deadline``): an outage costs the job
at most that long.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from pathlib import Path
from typing import Any, Optional

from flakewarden.commands.github_access import (
    add_deadline_options,
    add_github_options,
    fail_open_access,
    warn,
)
from flakewarden.config import Config
from flakewarden.config import load as load_config
from flakewarden.console import one_line, plural
from flakewarden.github.api import GitHubClient
from flakewarden.issues import notify, owners
from flakewarden.issues.cause_issues import file_storms, storms
from flakewarden.issues.filing import file_flakes
from flakewarden.issues.hit_ledger import Evidence
from flakewarden.issues.marker import parse_time
from flakewarden.issues.owners import Ownership
from flakewarden.issues.records import FilingResult, RunContext, iso
from flakewarden.model import ExitCode, Outcome, RunReport, TestResult
from flakewarden.quarantine.counts import count_quarantined
from flakewarden.reports.report_dir import written_in_this_job
from flakewarden.reports.report_json import REPORT_JSON, read_report

DEFAULT_REPORT_DIR = "flakewarden-report"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "issues",
        help="file or update one GitHub issue per flaky test in report.json",
        description=(
            "Find each flaky test's issue (label flaky-test) by its hidden marker; create it, "
            "count a recurrence, or reopen it when a fix did not hold. Never fails the build."
        ),
    )
    add_github_options(parser)
    parser.add_argument(
        "--report-dir",
        default=DEFAULT_REPORT_DIR,
        metavar="DIR",
        help=f"where `flakewarden run` wrote report.json (default: {DEFAULT_REPORT_DIR})",
    )
    add_deadline_options(
        parser, "warning and exiting 0", "issues_deadline from the config file, else 60"
    )
    parser.set_defaults(handler=run)


def load_report(report_dir: str) -> RunReport:
    return read_report(Path(report_dir) / REPORT_JSON)


def flakes_of(report: RunReport, count_retried: bool = False) -> list[TestResult]:
    """The tests to file: the flaky ones, and with ``retry.count_as_flaky`` the tests that
    passed only after ``flakewarden.retry`` retried inside them."""
    return [
        t
        for t in report.tests
        if t.outcome is Outcome.FLAKY
        or (count_retried and t.outcome is Outcome.PASSED and t.retries)
    ]


def detected_line(test: TestResult) -> str:
    if test.outcome is Outcome.FLAKY:
        done = f"{len(test.failures)}/{len(test.attempts)} attempts failed, then passed"
    else:
        done = f"passed only after retries inside the test: {test.retried_inside}"
    return f"FLAKY-TEST-DETECTED: {one_line(test.id)} ({one_line(done)})\n"


def evidence_of(report: RunReport, count_retried: bool = False) -> dict[str, Evidence]:
    """The run each flaky test of ``report`` was seen in, for its issue's hit record.

    No record of a run can predate its start; an hour's slack covers a runner's clock.
    """
    started = parse_time(report.started_at)
    floor = started - dt.timedelta(hours=1) if started else None
    not_before = iso(floor) if floor else ""
    return {
        t.id: Evidence(report.evidence_key(t.id), not_before)
        for t in flakes_of(report, count_retried)
    }


def _notify(
    config: Config, client: GitHubClient, repository: str, result: FilingResult
) -> list[str]:
    """One webhook message per issue opened by this run (fail-open, within the deadline)."""
    url = notify.webhook_url(config.webhook_url)
    created = [f for f in result.filed if f.action == "created"]
    if not url or not created:
        return []
    messages = [
        notify.Message("new-flake", f.test_id, f.url, f.number, f.owners, f.hits, None, repository)
        for f in created
    ]
    return notify.send(url, messages, client.remaining)


def repository_root(start: Path) -> Path:
    """The checkout ``start`` lies in (the nearest folder holding ``.git``), else ``start``."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return start


def ownership_of(config: Config, report: RunReport, cwd: Path) -> Ownership:
    """The config's ``owners``, then the checkout's CODEOWNERS, for the tests of ``report``.

    A test's file is relative to the run's root directory; where that lies inside this
    checkout, its path in the repository is known, else the root is taken for the
    repository's (a report merged from another runner's checkout).
    """
    root = repository_root(cwd)
    file_rules, skipped = owners.load(root)
    prefix = ""
    if report.rootdir:
        try:
            prefix = Path(report.rootdir).resolve().relative_to(root.resolve()).as_posix()
        except (ValueError, OSError):
            prefix = ""
    return Ownership(
        config_rules=owners.from_config(dict(config.owners)),
        file_rules=file_rules,
        prefix="" if prefix == "." else prefix,
        triage_label=config.triage_label,
        skipped=[f"CODEOWNERS line skipped, as GitHub skips it: {s}" for s in skipped],
    )


def run(args: argparse.Namespace, client: Optional[GitHubClient] = None) -> int:
    report = load_report(args.report_dir)
    config = load_config(getattr(args, "config", None), Path.cwd())
    report.environment_patterns = config.causes.environment
    deadline = getattr(args, "deadline", None) or config.issues_deadline
    flaky = flakes_of(report, config.retry_count_as_flaky)
    if flaky and written_in_this_job(Path(args.report_dir)) and not config.retry_count_as_flaky:
        # `flakewarden run` printed them in this job's log already: once is enough.
        sys.stdout.write(
            f"flakewarden: {plural(len(flaky), 'flaky test')} in report.json "
            "(FLAKY-TEST-DETECTED above, from flakewarden run)\n"
        )
    else:
        for test in flaky:
            sys.stdout.write(detected_line(test))
    sys.stdout.flush()
    ctx = RunContext.from_env()
    repository = args.repository or ctx.repository
    if not flaky:
        sys.stdout.write("flakewarden: no flaky tests in report.json; no issues to file\n")
        if not (repository and (args.token or os.environ.get("GITHUB_TOKEN"))):
            return int(ExitCode.OK)  # quarantined runs are counted only where GitHub is set up
    access = fail_open_access(
        repository,
        args.token,
        lambda why: warn(f"flake issues not filed for {plural(len(flaky), 'flaky test')}: {why}"),
        deadline,
        client,
    )
    if access is None:
        return int(ExitCode.OK)
    repository, client = access
    ctx.repository = repository
    try:
        seen = evidence_of(report, config.retry_count_as_flaky)
        counting = count_quarantined(client, repository, report.tests, evidence=seen)
        rest = [t for t in flaky if t.id not in counting.counted | counting.skipped]
        found = [] if counting.stopped else storms(report, rest, config.causes.storm_tests)
        in_storms = {t.id for storm in found for t in storm.tests}
        rest = [t for t in rest if t.id not in in_storms]
        if counting.stopped:
            result = FilingResult(errors=counting.errors, not_filed=[t.id for t in rest])
        elif rest:
            owners = ownership_of(config, report, Path.cwd())
            result = file_flakes(client, repository, rest, ctx, evidence=seen, ownership=owners)
            result.errors += owners.skipped[:1]
            result.errors += _notify(config, client, repository, result)
        else:
            result = FilingResult()
            result.errors[:0] = counting.errors
        if found:
            now = dt.datetime.now(dt.timezone.utc)
            caused = file_storms(client, repository, found, ctx, seen, now)
            result.filed += caused.filed
            result.errors += caused.errors
            result.not_filed += caused.not_filed
    except Exception as exc:  # fail-open: bookkeeping never turns a build red
        warn(
            f"flake issues not filed: unexpected {type(exc).__name__}: {exc}; "
            "please report this to flakewarden"
        )
        return int(ExitCode.OK)
    finally:
        client.close()
    if counting.counted:
        sys.stdout.write(
            f"flakewarden: counted this run of {len(counting.counted)} quarantined test(s)\n"
        )
    for filed in result.filed:
        what = {
            "created": "opened",
            "recurred": "recurred in",
            "reopened": "reopened (the fix did not hold)",
            "merged": "merged into",
            "counted": "already counted this run in",
        }[filed.action]
        sys.stdout.write(
            f"flakewarden: {one_line(filed.test_id)}: {what} #{filed.number} "
            f"({filed.hits} hits) {filed.url}\n"
        )
    message = result.warning(len(flaky))
    if message:
        warn(message)
    return int(ExitCode.OK)
