"""Workflow runs and their flakewarden report artifacts, read with ``actions: read`` only.

``completed_runs`` lists a workflow's completed runs newest first
(``GET .../actions/workflows/{workflow}/runs``, or ``.../actions/runs`` for every
workflow), filtered by branch and event, stopping at the newest run already looked
at; ``report_artifacts`` lists one run's artifacts whose names start with the prefix
the action uses (``GET .../actions/runs/{id}/artifacts``); ``download_artifact``
asks for the zip (``GET .../actions/artifacts/{id}/zip``), which GitHub answers with a
``302`` to a signed URL on another host, followed without the token.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Iterator
from typing import Any, Optional

from flakewarden.errors import GitHubError
from flakewarden.github.api import GitHubClient
from flakewarden.github.api_errors import GitHubRequestError, TooBig
from flakewarden.github.download import TokenlessDownloader

#: The action names its report artifacts flakewarden-<job>-<matrix index>-attempt-<n>.
ARTIFACT_PREFIX = "flakewarden-"
#: An artifact zip bigger than this is not read (a report of 10,000 tests is a few MB).
MAX_ARTIFACT_BYTES = 256 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class WorkflowRun:
    id: int
    attempt: int
    branch: str
    event: str
    workflow: str  # the workflow's name
    path: str  # its file, .github/workflows/...
    conclusion: str
    created_at: str
    commit: str = ""  # head_sha
    pr_number: Optional[int] = None  # the first of its pull requests, when GitHub names one


@dataclasses.dataclass(frozen=True)
class Artifact:
    id: int
    name: str
    run_id: int
    size: int
    expired: bool


class ArtifactExpired(GitHubError):
    """GitHub no longer has the artifact (410 Gone, or listed with ``expired: true``)."""


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise GitHubError(f"GitHub sent {value!r} where a number was expected")
    return value


def _run(data: Any) -> WorkflowRun:
    if not isinstance(data, dict):
        raise GitHubError("GitHub sent a workflow run that is not an object")
    return WorkflowRun(
        id=_int(data.get("id")),
        attempt=int(data.get("run_attempt") or 1),
        branch=str(data.get("head_branch") or ""),
        event=str(data.get("event") or ""),
        workflow=str(data.get("name") or ""),
        path=str(data.get("path") or ""),
        conclusion=str(data.get("conclusion") or ""),
        created_at=str(data.get("created_at") or ""),
        commit=str(data.get("head_sha") or ""),
        pr_number=_pull_number(data.get("pull_requests")),
    )


def _pull_number(pulls: Any) -> Optional[int]:
    """The number of a run's first pull request; None for a fork's (GitHub lists none)."""
    if isinstance(pulls, list) and pulls and isinstance(pulls[0], dict):
        number = pulls[0].get("number")
        if isinstance(number, int) and not isinstance(number, bool) and 0 < number < 2**63:
            return number
    return None


def _pages(
    client: GitHubClient, path: str, key: str, params: dict[str, Any]
) -> Iterator[list[dict[str, Any]]]:
    """The pages of a ``{"total_count", key: [...]}`` list, ``link`` followed as given."""
    url: Optional[str] = path
    query: Optional[dict[str, Any]] = {"per_page": 100, **params}
    pages = 0
    while url is not None:
        pages += 1
        if pages > client.max_pages:
            raise GitHubError(f"GET {path} returned more than {client.max_pages} pages")
        response = client.request("GET", url, params=query)
        try:
            data = response.json()
        except ValueError:
            raise GitHubError(f"GET {path}: GitHub sent a response that is not JSON") from None
        items = data.get(key) if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise GitHubError(f"GET {path}: expected an object with {key!r}")
        yield items
        url, query = response.links.get("next", {}).get("url") or None, None


def completed_runs(
    client: GitHubClient,
    repository: str,
    *,
    workflow: str = "",
    branch: str = "",
    event: str = "",
    after: Optional[int] = None,
    limit: Optional[int] = None,
) -> list[WorkflowRun]:
    """Completed runs newer than run id ``after``, newest first, at most ``limit``.

    GitHub lists runs newest first, so paging stops at the first page reaching
    ``after``: an incremental ingest costs one request when nothing is new.
    """
    path = f"/repos/{repository}/actions/runs"
    if workflow:
        path = f"/repos/{repository}/actions/workflows/{urllib.parse.quote(workflow, safe='')}/runs"
    params: dict[str, Any] = {"status": "completed", "exclude_pull_requests": "true"}
    if branch:
        params["branch"] = branch
    if event:
        params["event"] = event
    found: list[WorkflowRun] = []
    seen: set[tuple[int, int]] = set()
    for page in _pages(client, path, "workflow_runs", params):
        runs = [_run(item) for item in page]
        older = False
        for run in runs:
            if after is not None and run.id <= after:
                older = True
                continue
            if (run.id, run.attempt) not in seen:  # a page boundary may repeat one
                seen.add((run.id, run.attempt))
                found.append(run)
        if older or (limit is not None and len(found) >= limit):
            break
    found.sort(key=lambda r: r.id, reverse=True)
    return found if limit is None else found[:limit]


def report_artifacts(
    client: GitHubClient, repository: str, run_id: int, prefix: str = ARTIFACT_PREFIX
) -> list[Artifact]:
    """The run's artifacts whose name starts with ``prefix``, expired ones included."""
    out: list[Artifact] = []
    path = f"/repos/{repository}/actions/runs/{run_id}/artifacts"
    for page in _pages(client, path, "artifacts", {}):
        for item in page:
            if not isinstance(item, dict):
                continue
            name = str(item.get("name") or "")
            if not name.startswith(prefix):
                continue
            out.append(
                Artifact(
                    id=_int(item.get("id")),
                    name=name,
                    run_id=run_id,
                    size=int(item.get("size_in_bytes") or 0),
                    expired=bool(item.get("expired")),
                )
            )
    return sorted(out, key=lambda a: a.id)


def download_artifact(
    client: GitHubClient,
    downloader: TokenlessDownloader,
    repository: str,
    artifact: Artifact,
    max_bytes: int = MAX_ARTIFACT_BYTES,
) -> bytes:
    """The artifact's zip. ``ArtifactExpired`` when GitHub answers 410 (or lists it expired),
    ``TooBig`` when it is listed or read past ``max_bytes``."""
    what = f"artifact {artifact.name} (id {artifact.id}) of run {artifact.run_id}"
    if artifact.expired:
        raise ArtifactExpired(f"{what} has expired")
    if artifact.size > max_bytes:
        raise TooBig(f"{what} is {artifact.size:,} bytes, more than {max_bytes:,}")
    path = f"/repos/{repository}/actions/artifacts/{artifact.id}/zip"
    try:
        response = client.request("GET", path, allow_redirects=False)
    except GitHubRequestError as exc:
        if exc.status == 410:
            raise ArtifactExpired(f"{what} has expired (GitHub answered 410 Gone)") from None
        raise
    if response.status_code == 200:  # served directly (GitHub Enterprise Server may)
        if len(response.content) > max_bytes:
            raise TooBig(f"{what} is more than {max_bytes:,} bytes")
        return response.content
    location = response.headers.get("location", "")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        raise GitHubError(f"{what}: GitHub answered {response.status_code} without a download URL")
    return downloader.fetch(location, max_bytes=max_bytes, what=what)
