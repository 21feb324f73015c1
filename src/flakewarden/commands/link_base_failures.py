"""``flakewarden link-base-failures``: tell a test's flake issue that main is broken, not the PR.

For each test of a pull request's run that failed every attempt and fails on the merge base
too (``tests[].base.verdict == "fails"``, ``flakewarden run --check-base``), the test's open
``flaky-test`` issue gets one comment linking the run, edited in place when the same run
reports again. No issue is ever opened and no hit is counted.

Fail-open like ``issues``: GitHub trouble is one warning and exit 0, within one deadline.
Outside a pull request, or with no test failing on the base, GitHub is not asked anything.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional

from flakewarden.actions import runtime
from flakewarden.commands.github_access import (
    add_deadline_options,
    add_github_options,
    add_pull_request_options,
    event_payload,
    fail_open_access,
    pull_request_of,
)
from flakewarden.config import load as load_config
from flakewarden.console import one_line, plural
from flakewarden.github.api import GitHubClient
from flakewarden.issues.base_failures import PullRun, failing_on_base, tell
from flakewarden.issues.records import RunContext
from flakewarden.model import ExitCode, RunReport
from flakewarden.reports.report_json import REPORT_JSON, read_report

TITLE = "flakewarden link-base-failures"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "link-base-failures",
        help="comment on the flake issue of each failed test that fails on the base too",
        description=(
            "For a pull request's run: each test that failed every attempt and fails on the "
            "merge base too (run --check-base) gets one comment on its open flake issue, "
            "linking the run; edited in place, never a new issue. Never fails the build."
        ),
    )
    add_github_options(parser, "repository of the flake issues")
    add_pull_request_options(parser)
    add_deadline_options(
        parser, "warning and exiting 0", "issues_deadline from the config file, else 60"
    )
    parser.set_defaults(handler=run)


def _warn(message: str) -> None:
    runtime.warn(message, TITLE)


def pull_run(report: RunReport, pr: int, env_ctx: RunContext) -> PullRun:
    """The run to link: the report's own coordinates, else this job's environment's.

    The key is the workflow run's id, shared by every job and attempt of it, so a matrix
    and a re-run attempt edit one comment; a run outside GitHub Actions keys on its uid.
    """
    ctx = report.context
    if ctx is not None and ctx.repository and ctx.run_id is not None:
        where = RunContext(
            repository=ctx.repository,
            server_url=env_ctx.server_url,
            run_id=str(ctx.run_id),
            run_attempt=str(ctx.run_attempt or ""),
        )
    else:
        where = env_ctx
    base = ctx.base_branch if ctx is not None else ""
    if not base:
        pull = event_payload().get("pull_request")
        ref = pull.get("base", {}).get("ref") if isinstance(pull, dict) else None
        base = ref if isinstance(ref, str) else ""
    key = where.run_id or report.evidence_key("")
    return PullRun(
        pr=pr,
        key=f"run-{key}" if where.run_id else f"local-{key}",
        run_url=where.run_url,
        run_label=f"run {where.run_id}" if where.run_id else "",
        base_branch=base[:200],
    )


def run(args: argparse.Namespace, client: Optional[GitHubClient] = None) -> int:
    report = read_report(Path(args.report_dir) / REPORT_JSON)
    config = load_config(getattr(args, "config", None), Path.cwd())
    deadline = getattr(args, "deadline", None) or config.issues_deadline
    tests = failing_on_base(report)
    if not tests:
        sys.stdout.write("flakewarden: no failed test fails on the base too; no issue to tell\n")
        return int(ExitCode.OK)
    pr = args.pr or pull_request_of(report)
    if pr is None:
        sys.stdout.write("flakewarden: not a pull request run; no flake issue to tell\n")
        return int(ExitCode.OK)
    ctx = RunContext.from_env()
    what = plural(len(tests), "test")
    access = fail_open_access(
        args.repository or ctx.repository,
        args.token,
        lambda why: _warn(f"flake issues not told of {what} failing on the base too: {why}"),
        deadline,
        client,
    )
    if access is None:
        return int(ExitCode.OK)
    repository, client = access
    try:
        result = tell(client, repository, tests, pull_run(report, pr, ctx))
    except Exception as exc:  # fail-open: bookkeeping never turns a build red
        _warn(
            f"flake issues not told: unexpected {type(exc).__name__}: {exc}; "
            "please report this to flakewarden"
        )
        return int(ExitCode.OK)
    finally:
        client.close()
    done = {"created": "commented on", "updated": "updated the comment on"}
    for told in result.told:
        action = done.get(told.action, "the comment is up to date on")
        sys.stdout.write(
            f"flakewarden: {one_line(told.test_id)} fails on the base too: {action} "
            f"#{told.number} {told.url}\n"
        )
    for test_id in result.no_issue:
        sys.stdout.write(
            f"flakewarden: {one_line(test_id)} fails on the base too; it has no open flake "
            "issue, and none is opened (a test that fails every attempt is not a flake)\n"
        )
    message = result.warning(len(tests))
    if message:
        _warn(message)
    return int(ExitCode.OK)
