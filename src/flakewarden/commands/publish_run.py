"""``flakewarden publish-run RUN_ID``: publish a pull request run's report from a trusted
``workflow_run`` job, treating the run's artifact as hostile.

A pull request from a fork gets a read-only token, so its test workflow can annotate
and summarise but not comment. The publisher (``on: workflow_run``) holds the write
token and runs none of the pull request's code: it downloads the run's report artifact
and reads it without trusting it. Nothing is extracted to disk; only ``report.json``
is read, inflated under a size limit, through the validating reader; a zip with an
escaping, linked, encrypted or repeated member is refused whole. The run, its commit
and its event come from the API, and the pull request the report names must have the
run's commit as its head. Then it keeps the pull request's one flakewarden comment.

Exit codes: 0 published (or nothing to publish: not a pull request run, no artifact);
3 the artifact or the pull request it names was refused, or GitHub failed; 4 usage.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Optional

from flakewarden.actions import runtime
from flakewarden.commands.argtypes import whole_number
from flakewarden.commands.github_access import (
    add_deadline_options,
    add_github_options,
    require_repository,
)
from flakewarden.config import load as load_config
from flakewarden.console import say
from flakewarden.errors import ReportError
from flakewarden.github.api import GitHubClient
from flakewarden.github.artifacts import ArtifactExpired, download_artifact, report_artifacts
from flakewarden.github.download import TokenlessDownloader
from flakewarden.github.pull_check import (
    PULL_REQUEST_EVENTS,
    run_facts,
    verified_pull_request,
)
from flakewarden.history.artifact_zip import reports_in_zip
from flakewarden.issues.pr_comment import check_name, describe, post
from flakewarden.issues.records import RunContext
from flakewarden.model import ExitCode, RunReport

DEFAULT_ARTIFACT = "flakewarden-report"
MAX_ZIP_BYTES = 64 * 1024 * 1024
MAX_REPORT_BYTES = 64 * 1024 * 1024


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "publish-run",
        help="publish a pull request run's report artifact from a workflow_run job",
        description=(
            "Download RUN_ID's report artifact, validate it without trusting it, check the "
            "pull request it names against GitHub, and keep that pull request's comment."
        ),
    )
    parser.add_argument("run_id", type=whole_number(1), metavar="RUN_ID")
    add_github_options(parser, "repository of the run")
    parser.add_argument(
        "--artifact",
        default=DEFAULT_ARTIFACT,
        metavar="NAME",
        help=f"the report artifact's exact name (default: {DEFAULT_ARTIFACT})",
    )
    parser.add_argument(
        "--name",
        default="flakewarden",
        help="which pull request comment: one per name (default: flakewarden)",
    )
    parser.add_argument(
        "--max-bytes",
        type=whole_number(1024),
        default=MAX_ZIP_BYTES,
        metavar="N",
        help="refuse an artifact zip, or a report.json inflated, larger than this many "
        f"bytes (default {MAX_ZIP_BYTES:,})",
    )
    add_deadline_options(parser, "exiting 3", "issues_deadline from the config file, else 60")
    parser.set_defaults(handler=run)


def _one_report(data: bytes, limit: int, name: str) -> RunReport:
    """The artifact's one ``report.json``; ``ReportError`` (exit 3) for anything else."""
    found = reports_in_zip(data, max_report_bytes=limit)
    if not found:
        raise ReportError(f"artifact {name} holds no report.json: not publishing it")
    if len(found) > 1:
        shown = ", ".join(entry.member[:100] for entry in found[:5])
        raise ReportError(f"artifact {name} holds {len(found)} report.json files ({shown})")
    (entry,) = found
    if entry.report is None:
        raise ReportError(f"artifact {name}: {entry.error}")
    return entry.report


def run(args: argparse.Namespace, client: Optional[GitHubClient] = None) -> int:
    check_name(args.name)
    ctx = RunContext.from_env()
    repository = require_repository(args.repository or ctx.repository)
    config = load_config(getattr(args, "config", None), Path.cwd())
    deadline = getattr(args, "deadline", None) or config.issues_deadline
    client = client or GitHubClient.from_env(args.token, deadline=deadline)
    downloader = TokenlessDownloader(client)
    try:
        facts = run_facts(client, repository, args.run_id)
        if facts.event not in PULL_REQUEST_EVENTS:
            say(f"run {facts.id} ran on {facts.event or 'an unknown event'}, not a pull request")
            return int(ExitCode.OK)
        listed = report_artifacts(client, repository, facts.id, args.artifact)
        named = [a for a in listed if a.name == args.artifact]
        if not named:
            runtime.warn(
                f"run {facts.id} has no artifact {args.artifact}: its tests did not get as far "
                "as uploading a report; nothing to publish",
                "flakewarden publish-run",
            )
            return int(ExitCode.OK)
        data = download_artifact(client, downloader, repository, named[-1], args.max_bytes)
        report = _one_report(data, args.max_bytes, args.artifact)
        claimed = report.context.pr_number if report.context is not None else None
        if not claimed:
            raise ReportError(
                f"artifact {args.artifact} names no pull request: it was not written by "
                "`flakewarden run` in a pull_request workflow"
            )
        pr = verified_pull_request(client, repository, claimed, facts)
        where = RunContext(
            repository=repository,
            server_url=ctx.server_url,
            run_id=str(facts.id),
            run_attempt=str(facts.attempt),
            sha=facts.head_sha,
            ref_name=facts.head_branch,
        )
        posted = post(client, repository, pr, report, where, args.name)
    except ArtifactExpired as exc:
        runtime.warn(f"{exc}; nothing to publish", "flakewarden publish-run")
        return int(ExitCode.OK)
    finally:
        downloader.close()
        client.close()
    say(f"{describe(posted)} pull request #{pr} for run {facts.id}")
    return int(ExitCode.OK)
