"""``history ingest --from-github``: the runs' report artifacts into the history.

The runs not looked at yet are listed newest first, then handled oldest first, each
marked as looked at once it is done, so an ingest cut short (a deadline, GitHub
down) resumes where it stopped and a second ingest downloads only new runs. An
expired artifact, a zip that is refused or a report that cannot be read is counted,
named, recorded in the history and never stops the ingest: each artifact, and each
report in it, is ingested or skipped on its own. Each report is stored under the run
GitHub listed it in (its id, branch, commit, event and workflow), whatever it claims
(``history.claims``); a claim that differs is said in one line and kept as detail.
GitHub trouble while downloading stops the ingest there, and the next ingest picks up
from that run; an artifact whose own download keeps failing is skipped on its third try,
so no artifact holds the history at its run for good.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Callable, Optional

from flakewarden.commands.github_access import require_repository
from flakewarden.errors import GitHubError, ReportError
from flakewarden.github.api import GitHubClient
from flakewarden.github.api_errors import GitHubRequestError, TooBig
from flakewarden.github.artifacts import (
    Artifact,
    ArtifactExpired,
    WorkflowRun,
    completed_runs,
    download_artifact,
    report_artifacts,
)
from flakewarden.github.download import TokenlessDownloader
from flakewarden.history.artifact_zip import reports_in_zip
from flakewarden.history.claims import stamp_run
from flakewarden.history.store import HistoryStore
from flakewarden.model import RunContext

Say = Callable[[str], None]

#: How many ingests try an artifact whose download fails before it is skipped for good.
MAX_ARTIFACT_TRIES = 3
#: Answers that would fail every download alike: unreachable or the deadline spent (0), the
#: token refused (401, 403), a rate limit (429).
_NOT_THE_ARTIFACT = frozenset({0, 401, 403, 429})


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
    """Ingest one run's report artifacts, each on its own; what the run held (``ingested``,
    ``expired``, ...). ``GitHubError`` only when GitHub, not an artifact, failed: the next
    ingest resumes from this run."""
    artifacts = report_artifacts(client, repository, run.id, args.artifact_prefix)
    if not artifacts:
        done.no_report += 1
        return "no-report"
    results = [
        _one_artifact(store, client, downloader, repository, run, artifact, done, complain)
        for artifact in artifacts
    ]
    return "ingested" if "ingested" in results else results[0]


def _one_artifact(
    store: HistoryStore,
    client: GitHubClient,
    downloader: TokenlessDownloader,
    repository: str,
    run: WorkflowRun,
    artifact: Artifact,
    done: GitHubIngest,
    complain: Say,
) -> str:
    """Ingest one artifact's reports, or skip it (or one report) with a line saying why;
    ``ingested``, ``expired`` or ``unreadable``."""
    done.artifacts += 1
    name = f"{artifact.name} (run {run.id}, artifact {artifact.id})"

    def skip(why: str, member: str = "") -> None:
        """One line naming what is skipped and why, and a row so it is never retried."""
        done.unreadable.append(f"{name} {member}".rstrip())
        complain(f"unreadable {'report' if member else 'artifact'}, skipped: {name}: {why}")
        why = f"{member}: {why}" if member else why
        store.record_artifact(
            repository, artifact.id, run.id, run.attempt, artifact.name, "skipped", why
        )

    try:
        data = download_artifact(client, downloader, repository, artifact)
    except ArtifactExpired:
        done.expired.append(name)
        complain(f"expired artifact, skipped: {name}")
        return "expired"
    except TooBig as exc:
        skip(f"cannot be downloaded: {exc}")
        return "unreadable"
    except GitHubError as exc:
        if not _artifact_failed(exc):
            raise
        tries = store.artifact_tries(repository, artifact.id) + 1
        if tries < MAX_ARTIFACT_TRIES:
            store.record_artifact(
                repository, artifact.id, run.id, run.attempt, artifact.name, "failed", str(exc)
            )
            raise
        skip(f"its download failed {tries} times, last: {exc}")
        return "unreadable"
    if store.artifact_tries(repository, artifact.id):
        store.forget_artifact(repository, artifact.id)  # downloaded at last
    source = f"github:run/{run.id}/artifact/{artifact.id}"
    listed = RunContext(
        repository=repository,
        workflow=run.workflow,
        run_id=run.id,
        run_attempt=run.attempt,
        event=run.event,
        branch=run.branch,
        commit=run.commit,
        pr_number=run.pr_number,
    )

    def claims(member: str, claimed: str) -> None:
        complain(
            f"report {name} {member} claims another run ({claimed}): stored under run "
            f"{run.id} ({run.event} on {run.branch or 'no branch'} at {run.commit[:12] or '?'})"
        )

    ingested = _ingest_zip(store, data, source, listed, done, skip, claims)
    return "ingested" if ingested else "unreadable"


def _artifact_failed(exc: GitHubError) -> bool:
    """Whether a failed download is the artifact's own (tried again a few times, then
    skipped), not GitHub unreachable, the token refused, a rate limit or the deadline spent
    (which would fail every download the same way, so the ingest stops and resumes later)."""
    if isinstance(exc, GitHubRequestError) and exc.final:
        return exc.status not in _NOT_THE_ARTIFACT
    return True


def _ingest_zip(
    store: HistoryStore,
    data: bytes,
    source: str,
    listed: RunContext,
    done: GitHubIngest,
    skip: Callable[[str, str], None],
    claims: Callable[[str, str], None],
) -> bool:
    """Every report in the artifact's zip into the store under the ``listed`` run, each
    refused one skipped alone; whether any was kept (ingested now or before)."""
    try:
        zipped = reports_in_zip(data)
    except ReportError as exc:
        skip(str(exc), "")
        return False
    if not zipped:
        skip("it holds no report.json", "")
        return False
    kept = False
    for entry in zipped:
        where = source if entry.member == "report.json" else f"{source}/{entry.member}"
        if entry.report is None:
            skip(entry.error, entry.member)
            continue
        stamped = stamp_run(entry.report, listed)
        try:
            added = store.ingest(stamped.report, where, stamped.claimed)
        except ReportError as exc:
            skip(str(exc), entry.member)
            continue
        kept = True
        if stamped.claimed and added:
            claims(entry.member, stamped.claimed)
        if added:
            done.ingested += 1
        else:
            done.already += 1
    return kept
