"""``flakewarden comment``: one pull-request comment, edited in place, with the run's
flaky and failed tests.

Opt-in (the action's ``comment: true``); needs ``pull-requests: write``. Fail-open
like ``issues``: GitHub trouble is one warning and exit 0, within one deadline.
Outside a pull request it says so and does nothing.
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
    fail_open_access,
    pull_request_of,
)
from flakewarden.config import load as load_config
from flakewarden.errors import GitHubError
from flakewarden.github.api import GitHubClient
from flakewarden.issues.pr_comment import check_name, describe, post
from flakewarden.issues.records import RunContext
from flakewarden.model import ExitCode
from flakewarden.reports.report_json import REPORT_JSON, read_report


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "comment",
        help="keep one pull-request comment with the run's flaky and failed tests",
        description=(
            "Create the pull request's flakewarden comment, or edit it in place: never a new "
            "comment per push. A run with no flaky or failed tests edits an existing comment "
            "and creates none. Never fails the build."
        ),
    )
    add_github_options(parser, "repository of the pull request")
    add_pull_request_options(parser)
    parser.add_argument(
        "--name",
        default="flakewarden",
        help="which comment: one per name and pull request (default: flakewarden)",
    )
    add_deadline_options(
        parser, "warning and exiting 0", "issues_deadline from the config file, else 60"
    )
    parser.set_defaults(handler=run)


def _warn(message: str) -> None:
    runtime.warn(message, "flakewarden comment")


def run(args: argparse.Namespace, client: Optional[GitHubClient] = None) -> int:
    check_name(args.name)
    report = read_report(Path(args.report_dir) / REPORT_JSON)
    config = load_config(getattr(args, "config", None), Path.cwd())
    deadline = getattr(args, "deadline", None) or config.issues_deadline
    pr = args.pr or pull_request_of(report)
    if pr is None:
        sys.stdout.write("flakewarden: not a pull request run; no comment to keep\n")
        return int(ExitCode.OK)
    ctx = RunContext.from_env()
    access = fail_open_access(
        args.repository or ctx.repository,
        args.token,
        lambda why: _warn(f"pull request comment not posted: {why}"),
        deadline,
        client,
    )
    if access is None:
        return int(ExitCode.OK)
    repository, client = access
    ctx.repository = repository
    try:
        posted = post(client, repository, pr, report, ctx, args.name)
    except GitHubError as exc:
        _warn(f"pull request comment on #{pr} not posted: {exc}")
        return int(ExitCode.OK)
    except Exception as exc:  # fail-open: bookkeeping never turns a build red
        _warn(
            f"pull request comment not posted: unexpected {type(exc).__name__}: {exc}; "
            "please report this to flakewarden"
        )
        return int(ExitCode.OK)
    finally:
        client.close()
    url = f" {posted.url}" if posted.url else ""
    sys.stdout.write(f"flakewarden: {describe(posted)} pull request #{pr}{url}\n")
    return int(ExitCode.OK)
