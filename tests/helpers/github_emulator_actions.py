"""Workflow runs, artifacts and artifact downloads for the GitHub emulator.

As on api.github.com: run and artifact lists are objects (``total_count`` and the
items) paginated with ``per_page``/``page`` and a ``link`` header; ``status``,
``branch`` and ``event`` filter runs; ``GET .../actions/artifacts/{id}/zip`` answers
``302`` with a signed ``Location`` on another host (a second loopback server, the blob
store) that expires after a minute, or ``410`` once the artifact expired. The blob
store refuses and records any request carrying an ``Authorization`` header: the API
token must never leave api.github.com (``leaked_authorization`` must stay empty).
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import http.server
import io
import json
import threading
import time
import urllib.parse
import zipfile
from pathlib import Path
from typing import Any, Callable, Optional

Answer = tuple[int, dict[str, str], Any]
_SECRET = b"emulator-blob-signing-key"


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(ts)))


def zip_directory(directory: Path) -> bytes:
    """The artifact zip upload-artifact makes of a directory: its files, relative paths."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            archive.write(path, path.relative_to(directory).as_posix())
    return buffer.getvalue()


def zip_members(members: dict[str, bytes]) -> bytes:
    """An artifact zip of exactly ``members`` (name: bytes), hostile names included."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def paged(
    items: list[dict[str, Any]], raw_query: str, page: int, per_page: int, url: str
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Page ``page`` of ``items`` and the ``link`` header api.github.com sends with it."""
    last = max(1, -(-len(items) // per_page))
    chunk = items[(page - 1) * per_page : page * per_page]
    pairs = [
        (k, v) for k, v in urllib.parse.parse_qsl(raw_query, keep_blank_values=True) if k != "page"
    ]

    def link(n: int) -> str:
        return f"<{url}?{urllib.parse.urlencode([*pairs, ('page', str(n))])}>"

    links = []
    if page > 1:
        links.append(f'{link(page - 1)}; rel="prev"')
    if page < last:
        links.append(f'{link(page + 1)}; rel="next"')
        links.append(f'{link(last)}; rel="last"')
    if page > 1:
        links.append(f'{link(1)}; rel="first"')
    return chunk, {"link": ", ".join(links)} if links else {}


def repository_object(owner: str, repo: str, repo_id: int, user: dict[str, Any]) -> dict[str, Any]:
    """A minimal repository as workflow runs embed it (every required field)."""
    api = f"https://api.github.com/repos/{owner}/{repo}"
    names = (
        "archive_url:/{archive_format}{/ref} assignees_url:/assignees{/user} "
        "blobs_url:/git/blobs{/sha} branches_url:/branches{/branch} "
        "collaborators_url:/collaborators{/collaborator} comments_url:/comments{/number} "
        "commits_url:/commits{/sha} compare_url:/compare/{base}...{head} "
        "contents_url:/contents/{+path} contributors_url:/contributors "
        "deployments_url:/deployments downloads_url:/downloads events_url:/events "
        "forks_url:/forks git_commits_url:/git/commits{/sha} git_refs_url:/git/refs{/sha} "
        "git_tags_url:/git/tags{/sha} hooks_url:/hooks "
        "issue_comment_url:/issues/comments{/number} issue_events_url:/issues/events{/number} "
        "issues_url:/issues{/number} keys_url:/keys{/key_id} labels_url:/labels{/name} "
        "languages_url:/languages merges_url:/merges milestones_url:/milestones{/number} "
        "notifications_url:/notifications{?since,all,participating} pulls_url:/pulls{/number} "
        "releases_url:/releases{/id} stargazers_url:/stargazers statuses_url:/statuses/{sha} "
        "subscribers_url:/subscribers subscription_url:/subscription tags_url:/tags "
        "teams_url:/teams trees_url:/git/trees{/sha}"
    )
    out: dict[str, Any] = {
        key: api + suffix for key, suffix in (pair.split(":", 1) for pair in names.split())
    }
    out.update(
        {
            "id": repo_id,
            "node_id": "R_kgDOAAAD6A",
            "name": repo,
            "full_name": f"{owner}/{repo}",
            "owner": copy.deepcopy(user),
            "private": False,
            "html_url": f"https://github.com/{owner}/{repo}",
            "description": None,
            "fork": False,
            "url": api,
        }
    )
    return out


def serve(server: http.server.ThreadingHTTPServer) -> threading.Thread:
    """Answer on ``server`` from daemon threads until ``close``."""
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    return thread


def close(server: http.server.ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()


def origin(server: http.server.ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}"


class ActionsState:
    """The Actions part of the emulator's state; mixed into ``GitHubEmulator``."""

    owner: str
    repo: str
    repo_id: int
    full_name: str
    clock: Callable[[], float]
    _lock: threading.RLock

    def _init_actions(self) -> None:
        self.workflow_runs: dict[int, dict[str, Any]] = {}
        self.artifacts: dict[int, dict[str, Any]] = {}
        self.artifact_runs: dict[int, int] = {}  # artifact id -> run id
        self.blobs: dict[int, bytes] = {}
        self.blob_log: list[dict[str, Any]] = []
        self.leaked_authorization: list[str] = []
        self._next_run_id = 700_000
        self.pulls: dict[int, dict[str, Any]] = {}
        self._blob_server: Optional[http.server.ThreadingHTTPServer] = None

    # -- seeding ------------------------------------------------------------------

    def add_workflow_run(
        self,
        name: str = "CI",
        path: str = ".github/workflows/ci.yml",
        workflow_id: int = 161335,
        branch: Optional[str] = "main",
        event: str = "push",
        status: str = "completed",
        conclusion: Optional[str] = "success",
        run_attempt: int = 1,
        head_sha: str = "0123456789abcdef0123456789abcdef01234567",
        created_at: Optional[float] = None,
    ) -> dict[str, Any]:
        """A workflow run; ids grow with each one, as GitHub's do."""
        from .github_emulator import USER

        with self._lock:
            self._next_run_id += 1
            run_id = self._next_run_id
            now = self.clock() if created_at is None else created_at
            api = f"https://api.github.com/repos/{self.full_name}"
            repository = repository_object(self.owner, self.repo, self.repo_id, USER)
            run = {
                "id": run_id,
                "name": name,
                "node_id": "WFR_kwLOAAAD6M4AAAAB",
                "head_branch": branch,
                "head_sha": head_sha,
                "path": path,
                "display_title": f"run {run_id}",
                "run_number": len(self.workflow_runs) + 1,
                "run_attempt": run_attempt,
                "event": event,
                "status": status,
                "conclusion": conclusion,
                "workflow_id": workflow_id,
                "url": f"{api}/actions/runs/{run_id}",
                "html_url": f"https://github.com/{self.full_name}/actions/runs/{run_id}",
                "pull_requests": [],
                "created_at": _iso(now),
                "updated_at": _iso(now),
                "run_started_at": _iso(now),
                "jobs_url": f"{api}/actions/runs/{run_id}/jobs",
                "logs_url": f"{api}/actions/runs/{run_id}/logs",
                "check_suite_url": f"{api}/check-suites/{run_id}",
                "artifacts_url": f"{api}/actions/runs/{run_id}/artifacts",
                "cancel_url": f"{api}/actions/runs/{run_id}/cancel",
                "rerun_url": f"{api}/actions/runs/{run_id}/rerun",
                "workflow_url": f"{api}/actions/workflows/{workflow_id}",
                "head_commit": {
                    "id": head_sha,
                    "tree_id": "f" * 40,
                    "message": "Change things",
                    "timestamp": _iso(now),
                    "author": {"name": "Octo Cat", "email": "octo@example.com"},
                    "committer": {"name": "Octo Cat", "email": "octo@example.com"},
                },
                "repository": repository,
                "head_repository": copy.deepcopy(repository),
            }
            self.workflow_runs[run_id] = run
            return run

    def add_pull_request(
        self, head_sha: str, head_owner: str = "fork-owner", state: str = "open"
    ) -> dict[str, Any]:
        """A pull request (its issue too, as on GitHub: they share a number) whose head is
        ``head_sha`` on ``head_owner``'s fork; GitHub's own documented example, renumbered."""
        from .github_emulator import DATA

        spec = json.loads((DATA / "openapi-excerpt.json").read_text(encoding="utf-8"))
        operation = spec["paths"]["/repos/{owner}/{repo}/pulls/{pull_number}"]["get"]
        example = operation["responses"]["200"]["content"]["application/json"]["examples"]
        pull = copy.deepcopy(example["default"]["value"])
        issue = self.add_issue(f"Pull request from {head_owner}", "the change")  # type: ignore[attr-defined]
        number = int(issue["number"])
        api = f"https://api.github.com/repos/{self.full_name}"
        issue["pull_request"] = {"url": f"{api}/pulls/{number}"}
        pull.update(
            number=number,
            state=state,
            url=f"{api}/pulls/{number}",
            html_url=f"https://github.com/{self.full_name}/pull/{number}",
            issue_url=f"{api}/issues/{number}",
        )
        # GitHub's example lists a team without the "type" its own schema requires.
        pull["requested_teams"] = []
        pull["head"]["sha"] = head_sha
        pull["head"]["label"] = f"{head_owner}:feature"
        pull["head"]["user"]["login"] = head_owner
        self.pulls[number] = pull
        return pull

    def add_artifact(
        self,
        run_id: int,
        name: str,
        data: bytes,
        expired: bool = False,
        created_at: Optional[float] = None,
    ) -> dict[str, Any]:
        """An artifact of a run holding ``data`` (a zip's bytes, or anything, to test with)."""
        with self._lock:
            artifact_id = 900_000 + len(self.artifacts) + 1
            now = self.clock() if created_at is None else created_at
            api = f"https://api.github.com/repos/{self.full_name}/actions/artifacts/{artifact_id}"
            run = self.workflow_runs[run_id]
            artifact = {
                "id": artifact_id,
                "node_id": "MDg6QXJ0aWZhY3Qx",
                "name": name,
                "size_in_bytes": len(data),
                "url": api,
                "archive_download_url": api + "/zip",
                "expired": expired,
                "created_at": _iso(now),
                "expires_at": _iso(now + 90 * 86400),
                "updated_at": _iso(now),
                "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
                "workflow_run": {
                    "id": run_id,
                    "repository_id": self.repo_id,
                    "head_repository_id": self.repo_id,
                    "head_branch": run["head_branch"] or "",
                    "head_sha": run["head_sha"],
                },
            }
            self.artifacts[artifact_id] = artifact
            self.artifact_runs[artifact_id] = run_id
            self.blobs[artifact_id] = data
            return artifact

    # -- the API side -------------------------------------------------------------

    def _route_actions(
        self, rest: str, raw_query: str, query: dict[str, list[str]], url: str
    ) -> Optional[Answer]:
        """Answer an Actions GET, or None when ``rest`` is not one of its paths."""
        parts = rest.strip("/").split("/")
        if parts[:1] != ["actions"]:
            return None
        if parts == ["actions", "runs"]:
            return self._list_runs(None, query, raw_query, url)
        if len(parts) == 3 and parts[1] == "runs":
            run = self.workflow_runs.get(int(parts[2])) if parts[2].isdigit() else None
            return (200, {}, copy.deepcopy(run)) if run is not None else _not_found()
        if len(parts) == 4 and parts[1] == "workflows" and parts[3] == "runs":
            return self._list_runs(urllib.parse.unquote(parts[2]), query, raw_query, url)
        if len(parts) == 4 and parts[1] == "runs" and parts[3] == "artifacts":
            if not parts[2].isdigit() or int(parts[2]) not in self.workflow_runs:
                return _not_found()
            run_id = int(parts[2])
            items = [a for i, a in self.artifacts.items() if self.artifact_runs[i] == run_id]
            if "name" in query:
                items = [a for a in items if a["name"] == query["name"][-1]]
            items.sort(key=lambda a: a["id"], reverse=_arg(query, "direction", "desc") == "desc")
            return self._page("artifacts", items, query, raw_query, url)
        if len(parts) == 4 and parts[1] == "artifacts" and parts[3] == "zip":
            artifact = self.artifacts.get(int(parts[2])) if parts[2].isdigit() else None
            if artifact is None:
                return _not_found()
            if artifact["expired"]:
                return 410, {}, {"message": "Artifact has expired", "status": "410"}
            expires = int(self.clock()) + 60
            signature = _sign(artifact["id"], expires)
            location = (
                f"{self.blob_origin}/artifacts/{artifact['id']}/content.zip"
                f"?urlExpires={expires}&urlSignature={signature}"
            )
            return 302, {"location": location}, None
        return _not_found()

    def _list_runs(
        self, workflow: Optional[str], query: dict[str, list[str]], raw_query: str, url: str
    ) -> Answer:
        runs = list(self.workflow_runs.values())
        if workflow is not None:
            runs = [
                r
                for r in runs
                if str(r["workflow_id"]) == workflow or r["path"].rsplit("/", 1)[-1] == workflow
            ]
            if not runs and not any(
                str(r["workflow_id"]) == workflow or r["path"].endswith("/" + workflow)
                for r in self.workflow_runs.values()
            ):
                return _not_found()
        status = _arg(query, "status", "")
        if status:
            runs = [r for r in runs if status in (r["status"], r["conclusion"])]
        for key, field in (("branch", "head_branch"), ("event", "event")):
            if key in query:
                runs = [r for r in runs if r[field] == query[key][-1]]
        runs.sort(key=lambda r: (r["created_at"], r["id"]), reverse=True)
        return self._page("workflow_runs", runs, query, raw_query, url)

    def _page(
        self,
        key: str,
        items: list[dict[str, Any]],
        query: dict[str, list[str]],
        raw_query: str,
        url: str,
    ) -> Answer:
        per_page = min(100, max(1, int(_arg(query, "per_page", "30"))))
        page = max(1, int(_arg(query, "page", "1")))
        chunk, headers = paged(items, raw_query, page, per_page, url)
        return 200, headers, {"total_count": len(items), key: copy.deepcopy(chunk)}

    # -- the blob store (another host) ---------------------------------------------

    def _start_blobs(self) -> None:
        state = self

        class Blobs(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                status, body = state._serve_blob(self.path, dict(self.headers.items()))
                self.send_response(status)
                self.send_header("content-type", "application/zip")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._blob_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Blobs)
        serve(self._blob_server)

    def _stop_blobs(self) -> None:
        if self._blob_server is not None:
            close(self._blob_server)
            self._blob_server = None

    @property
    def blob_origin(self) -> str:
        assert self._blob_server is not None
        return origin(self._blob_server)

    def _serve_blob(self, raw_path: str, headers: dict[str, str]) -> tuple[int, bytes]:
        lower = {k.lower(): v for k, v in headers.items()}
        parsed = urllib.parse.urlsplit(raw_path)
        with self._lock:
            self.blob_log.append({"path": parsed.path, "headers": lower})
            if "authorization" in lower:
                self.leaked_authorization.append(lower["authorization"])
                return 403, b"an Authorization header reached the blob store"
        parts = parsed.path.strip("/").split("/")
        query = urllib.parse.parse_qs(parsed.query)
        if len(parts) != 3 or parts[0] != "artifacts" or not parts[1].isdigit():
            return 404, b"no such blob"
        artifact_id = int(parts[1])
        expires = _arg(query, "urlExpires", "0")
        signature = _arg(query, "urlSignature", "")
        if not expires.isdigit() or not hmac.compare_digest(
            signature, _sign(artifact_id, int(expires))
        ):
            return 403, b"bad signature"
        if int(expires) < self.clock():
            return 403, b"the signed URL expired"
        data = self.blobs.get(artifact_id)
        return (200, data) if data is not None else (404, b"no such blob")


def sampled(body: Any, keep: int = 3) -> Any:
    """A list page with its long item list cut to the first and last few (schemas are large)."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    for key, value in body.items():
        if isinstance(value, list) and len(value) > 2 * keep:
            out[key] = value[:keep] + value[-keep:]
    return out


def _sign(artifact_id: int, expires: int) -> str:
    return hmac.new(_SECRET, f"{artifact_id}:{expires}".encode(), hashlib.sha256).hexdigest()


def _arg(query: dict[str, list[str]], name: str, default: str) -> str:
    return query.get(name, [default])[-1]


def _not_found() -> Answer:
    return 404, {}, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
