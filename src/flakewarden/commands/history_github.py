"""``history ingest --from-github``: the runs' report artifacts into the history.

The runs not looked at yet are listed newest first, then handled oldest first, each
marked as looked at once it is done, so an ingest cut short (a deadline, GitHub
down) resumes where it stopped and a second ingest downloads only new runs. An
expired artifact, a zip that is refused or a report that cannot be read is counted,
named, and never stops the ingest; GitHub trouble while downloading stops it there,
and the next ingest picks up from that run.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Callable, Optional

from flakewarden.commands.github_access import require_repository
from flakewarden.errors import GitHubError, ReportError
from flakewarden.github.api import GitHubClient
from flakewarden.github.artifacts import (
    ArtifactExpired,
    WorkflowRun,
    completed_runs,
    download_artifact,
    report_artifacts,
)
from flakewarden.github.download import TokenlessDownloader
from flakewarden.history.artifact_zip import reports_in_zip
from flakewarden.history.store import HistoryStore

Say = Callable[[str], None]


@dataclasses.dataclass
class GitHubIngest:
    """What one ``--from-github`` ingest did, for its summary line."""

    runs: int = 0
    artifacts: int = 0
    ingested: int = 0
    already: int = 0
    expired: list[str] = dataclasses.field(default_factory=list)
    unreadable: list[str] = dataclasses.field(default_factory=list)
    no_report: int = 0
    stopped: str = ""
    api_requests: int = 0
    downloads: int = 0


def ingest_from_github(
    store: HistoryStore,
    args: argparse.Namespace,
    say: Say,
    complain: Say,
    client: Optional[GitHubClient] = None,
) -> GitHubIngest:
    repository = require_repository(args.repository)
    client = client or GitHubClient.from_env(args.token)
    downloader = TokenlessDownloader(client)
    done = GitHubIngest()
    try:
        _ingest(store, client, downloader, repository, args, done, complain)
    finally:
        done.api_requests = client.requests_sent
        done.downloads = downloader.requests_sent
        downloader.close()
        client.close()
    if done.stopped:
        complain(f"stopped early: {done.stopped}; the next ingest resumes from that run")
    say(
        f"github {repository}: {done.runs} new run(s) looked at, {done.artifacts} report "
        f"artifact(s), {done.ingested} run(s) ingested, {done.already} already in, "
        f"{len(done.expired)} expired, {len(done.unreadable)} unreadable, "
        f"{done.no_report} run(s) without a report artifact; "
        f"{done.api_requests + done.downloads} requests "
        f"({done.api_requests} to the API, {done.downloads} downloads)"
    )
    return done


def _ingest(
    store: HistoryStore,
    client: GitHubClient,
    downloader: TokenlessDownloader,
    repository: str,
    args: argparse.Namespace,
    done: GitHubIngest,
    complain: Say,
) -> None:
    after = store.last_github_run_id(repository, args.workflow, args.branch)
    runs = completed_runs(
        client,
        repository,
        workflow=args.workflow,
        branch=args.branch,
        event=args.event,
        after=after,
        limit=args.max_runs,
    )
    for run in sorted(runs, key=lambda r: r.id):
        if store.github_run_seen(repository, args.workflow, run.id, run.attempt):
            continue
        try:
            result = _one_run(store, client, downloader, repository, run, args, done, complain)
        except GitHubError as exc:
            done.stopped = f"run {run.id}: {exc}"
            return
        done.runs += 1
        store.mark_github_run(repository, args.workflow, args.branch, run.id, run.attempt, result)


def _one_run(
    store: HistoryStore,
    client: GitHubClient,
    downloader: TokenlessDownloader,
    repository: str,
    run: WorkflowRun,
    args: argparse.Namespace,
    done: GitHubIngest,
    complain: Say,
) -> str:
    """Ingest one run's report artifacts; what it held (``ingested``, ``expired``, ...)."""
    artifacts = report_artifacts(client, repository, run.id, args.artifact_prefix)
    if not artifacts:
        done.no_report += 1
        return "no-report"
    results: list[str] = []
    for artifact in artifacts:
        done.artifacts += 1
        name = f"{artifact.name} (run {run.id}, artifact {artifact.id})"
        source = f"github:run/{run.id}/artifact/{artifact.id}"
        try:
            data = download_artifact(client, downloader, repository, artifact)
        except ArtifactExpired:
            done.expired.append(name)
            complain(f"expired artifact, skipped: {name}")
            results.append("expired")
            continue
        try:
            zipped = reports_in_zip(data)
        except ReportError as exc:
            done.unreadable.append(name)
            complain(f"unreadable artifact, skipped: {name}: {exc}")
            results.append("unreadable")
            continue
        if not zipped:
            done.unreadable.append(name)
            complain(f"no report.json in artifact, skipped: {name}")
            results.append("unreadable")
        for entry in zipped:
            if entry.report is None:
                done.unreadable.append(f"{name} {entry.member}")
                complain(f"unreadable report, skipped: {name}: {entry.error}")
                results.append("unreadable")
                continue
            where = source if entry.member == "report.json" else f"{source}/{entry.member}"
            if store.ingest(entry.report, where):
                done.ingested += 1
            else:
                done.already += 1
            results.append("ingested")
    return "ingested" if "ingested" in results else results[0]
