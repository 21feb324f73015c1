"""A stateful GitHub REST API emulator served over real HTTP on loopback.

It keeps issues (and pull requests, which GitHub's issue lists also return),
comments and labels for one repository, paginates the way api.github.com does
(``link`` URLs point at ``/repositories/{id}/issues``, not at the requested
path), rejects bodies over 65,536 characters with GitHub's 422, and answers
injected faults: 5xx, slow answers (client timeouts), answers that never come
(``hang``), dropped connections, 403/429 rate limits; ``closed_port_url`` and
``UNRESOLVABLE_URL`` stand for an API nobody answers at all. Every request is
logged, and every request body and response body is checked against GitHub's
official OpenAPI schemas in ``tests/data/github-api`` (violations collect in
``schema_errors``).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import http.server
import json
import re
import socket
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any, Callable, Optional

import jsonschema

from .github_emulator_actions import ActionsState, close, origin, paged, sampled, serve

DATA = Path(__file__).resolve().parents[1] / "data" / "github-api"
BODY_LIMIT = 65_536
DOCS = "https://docs.github.com/rest"


# -- schemas -------------------------------------------------------------------


def _to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0 schema -> JSON Schema: ``nullable: true`` becomes ``anyOf [.., null]``."""
    if isinstance(node, list):
        return [_to_json_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {k: _to_json_schema(v) for k, v in value.items()}
        elif key in ("nullable", "readOnly", "writeOnly", "discriminator", "xml"):
            continue
        else:
            out[key] = _to_json_schema(value)
    if node.get("nullable") is True:
        return {"anyOf": [out, {"type": "null"}]}
    return out


class Schemas:
    """Request and response schemas of the operations in the trimmed OpenAPI excerpt."""

    def __init__(self, path: Path = DATA / "openapi-excerpt.json") -> None:
        spec = json.loads(path.read_text(encoding="utf-8"))
        self.operations: list[tuple[re.Pattern[str], str, dict[str, Any]]] = []
        for template, methods in spec["paths"].items():
            pattern = re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$")
            for method, operation in methods.items():
                self.operations.append((pattern, method.upper(), operation))
        self._validators: dict[int, jsonschema.protocols.Validator] = {}

    def operation(self, method: str, path: str) -> Optional[dict[str, Any]]:
        for pattern, op_method, operation in self.operations:
            if op_method == method and pattern.match(path):
                return operation
        return None

    def _validator(self, schema: dict[str, Any]) -> jsonschema.protocols.Validator:
        key = id(schema)
        if key not in self._validators:
            self._validators[key] = jsonschema.Draft4Validator(_to_json_schema(schema))
        return self._validators[key]

    def request_errors(self, method: str, path: str, body: Any) -> list[str]:
        operation = self.operation(method, path)
        if operation is None:
            return [f"{method} {path}: not an operation of the excerpt"]
        content = operation.get("requestBody", {}).get("content", {})
        schema = content.get("application/json", {}).get("schema")
        if schema is None:
            return [] if body is None else [f"{method} {path}: takes no body"]
        return [
            f"{method} {path} request: {e.message}"
            for e in self._validator(schema).iter_errors(body)
        ]

    def response_errors(
        self, method: str, path: str, status: int, body: Any, sample: int = 5
    ) -> list[str]:
        operation = self.operation(method, path)
        if operation is None:
            return [f"{method} {path}: not an operation of the excerpt"]
        response = operation["responses"].get(str(status))
        if response is None:
            return [f"{method} {path}: {status} is not a documented response"]
        schema = response.get("content", {}).get("application/json", {}).get("schema")
        if schema is None:
            return []
        validator = self._validator(schema)
        if isinstance(body, list) and len(body) > sample:
            # Item schemas are large; the first and last few items stand for a long page.
            body = body[: sample // 2 + 1] + body[-(sample // 2) :]
        return [
            f"{method} {path} {status} response: {e.message}" for e in validator.iter_errors(body)
        ]


_SCHEMAS: Optional[Schemas] = None


def schemas() -> Schemas:
    global _SCHEMAS
    if _SCHEMAS is None:
        _SCHEMAS = Schemas()
    return _SCHEMAS


# -- state ---------------------------------------------------------------------


@dataclasses.dataclass
class Fault:
    """An answer to give instead of the real one, ``times`` times, to matching requests.

    ``delay`` holds the answer back (a client with a shorter read timeout times
    out; with ``status=200`` and no ``body`` the real answer follows the delay);
    ``hang`` holds it back until the emulator stops (an API that accepted the
    connection and went silent); ``drop`` closes the connection without an answer.
    """

    status: int = 500
    method: str = "*"
    path: str = ""  # a regular expression searched in the request path
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    body: Any = None
    delay: float = 0.0
    hang: bool = False
    drop: bool = False
    times: int = 1

    def matches(self, method: str, path: str) -> bool:
        return (self.method in ("*", method)) and re.search(self.path, path) is not None


def secondary_rate_limit(retry_after: int = 7, **kwargs: Any) -> Fault:
    return Fault(
        status=403,
        headers={"retry-after": str(retry_after)},
        body={
            "message": "You have exceeded a secondary rate limit. Please wait a few minutes "
            "before you try again.",
            "documentation_url": DOCS + "/overview/rate-limits-for-the-rest-api",
        },
        **kwargs,
    )


def primary_rate_limit(reset_at: float, **kwargs: Any) -> Fault:
    return Fault(
        status=403,
        headers={
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": "0",
            "x-ratelimit-used": "5000",
            "x-ratelimit-reset": str(int(reset_at)),
            "x-ratelimit-resource": "core",
        },
        body={
            "message": "API rate limit exceeded for installation ID 1000.",
            "documentation_url": DOCS + "/overview/rate-limits-for-the-rest-api",
        },
        **kwargs,
    )


# A name under the reserved .invalid top-level domain never resolves (RFC 6761).
UNRESOLVABLE_URL = "http://api.flakewarden.invalid"


def closed_port_url() -> str:
    """An http URL on loopback where nothing listens: every connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@dataclasses.dataclass
class LoggedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    status: int = 0

    @property
    def is_write(self) -> bool:
        return self.method in ("POST", "PATCH", "PUT", "DELETE")


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(int(ts), dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_iso(text: str) -> float:
    return (
        dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc).timestamp()
    )


USER = {
    "login": "github-actions[bot]",
    "id": 41898282,
    "node_id": "MDM6Qm90NDE4OTgyODI=",
    "avatar_url": "https://avatars.githubusercontent.com/in/15368?v=4",
    "gravatar_id": "",
    "url": "https://api.github.com/users/github-actions%5Bbot%5D",
    "html_url": "https://github.com/apps/github-actions",
    "followers_url": "https://api.github.com/users/github-actions%5Bbot%5D/followers",
    "following_url": "https://api.github.com/users/github-actions%5Bbot%5D/following{/other_user}",
    "gists_url": "https://api.github.com/users/github-actions%5Bbot%5D/gists{/gist_id}",
    "starred_url": "https://api.github.com/users/github-actions%5Bbot%5D/starred{/owner}{/repo}",
    "subscriptions_url": "https://api.github.com/users/github-actions%5Bbot%5D/subscriptions",
    "organizations_url": "https://api.github.com/users/github-actions%5Bbot%5D/orgs",
    "repos_url": "https://api.github.com/users/github-actions%5Bbot%5D/repos",
    "events_url": "https://api.github.com/users/github-actions%5Bbot%5D/events{/privacy}",
    "received_events_url": "https://api.github.com/users/github-actions%5Bbot%5D/received_events",
    "type": "Bot",
    "site_admin": False,
}


class GitHubEmulator(ActionsState):
    """One repository's issues, comments and labels behind a real HTTP server.

    Use as a context manager; ``url`` is what ``GITHUB_API_URL`` should be.
    ``prefix`` emulates GitHub Enterprise Server's ``/api/v3``.
    """

    def __init__(
        self,
        owner: str = "octo-org",
        repo: str = "octo-repo",
        repo_id: int = 1000,
        token: str = "ghs_emulatorTOKEN0123456789abcdef",
        read_only_tokens: tuple[str, ...] = (),
        prefix: str = "",
        validate: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.owner, self.repo, self.repo_id = owner, repo, repo_id
        self.token = token
        self.read_only_tokens = set(read_only_tokens)
        self.prefix = prefix.rstrip("/")
        self.validate = validate
        self.clock = clock
        self.issues: dict[int, dict[str, Any]] = {}
        self.comments: dict[int, list[dict[str, Any]]] = {}
        # Logins an issue may be assigned to (collaborators with push access).
        self.assignable: set[str] = set()
        self.labels: dict[str, dict[str, Any]] = {}
        self.faults: list[Fault] = []
        # Called with each LoggedRequest before it is answered (to stage races in tests).
        self.before: Optional[Callable[[LoggedRequest], None]] = None
        self.log: list[LoggedRequest] = []
        self.schema_errors: list[str] = []
        self.max_concurrent_writes = 0
        self._active_writes = 0
        self._next_id = 5000
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._server: Optional[_Server] = None
        self._thread: Optional[threading.Thread] = None
        self._init_actions()

    # -- lifecycle -----------------------------------------------------------

    def __enter__(self) -> GitHubEmulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        emulator = self
        self._stopping.clear()

        class Handler(_Handler):
            pass

        Handler.emulator = emulator
        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = serve(self._server)
        self._start_blobs()

    def stop(self) -> None:
        self._stopping.set()  # releases every hanging answer
        self._stop_blobs()
        if self._server is not None:
            close(self._server)
            self._server = None

    @property
    def origin(self) -> str:
        assert self._server is not None
        return origin(self._server)

    @property
    def url(self) -> str:
        return self.origin + self.prefix

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.repo}"

    # -- seeding and inspection ------------------------------------------------

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def add_label(
        self, name: str, color: str = "ededed", description: Optional[str] = None
    ) -> dict[str, Any]:
        with self._lock:
            label = {
                "id": self._new_id(),
                "node_id": "MDU6TGFiZWwx",
                "url": f"https://api.github.com/repos/{self.full_name}/labels/{urllib.parse.quote(name)}",
                "name": name,
                "description": description,
                "color": color,
                "default": False,
            }
            self.labels[name.lower()] = label
            return label

    def add_issue(
        self,
        title: str,
        body: Optional[str] = None,
        labels: tuple[str, ...] = (),
        state: str = "open",
        pull_request: bool = False,
        created_at: Optional[float] = None,
    ) -> dict[str, Any]:
        """Put an issue (or a pull request) straight into the repository's state."""
        with self._lock:
            number = max(self.issues, default=0) + 1
            now = self.clock() if created_at is None else created_at
            base = f"https://api.github.com/repos/{self.full_name}/issues/{number}"
            issue: dict[str, Any] = {
                "url": base,
                "repository_url": f"https://api.github.com/repos/{self.full_name}",
                "labels_url": base + "/labels{/name}",
                "comments_url": base + "/comments",
                "events_url": base + "/events",
                "html_url": f"https://github.com/{self.full_name}/"
                + ("pull" if pull_request else "issues")
                + f"/{number}",
                "id": self._new_id(),
                "node_id": "I_kwDOAAAB",
                "number": number,
                "title": title,
                "user": copy.deepcopy(USER),
                "labels": [self._label_for(name) for name in labels],
                "state": state,
                "locked": False,
                "assignee": None,
                "assignees": [],
                "milestone": None,
                "comments": 0,
                "created_at": _iso(now),
                "updated_at": _iso(now),
                "closed_at": _iso(now) if state == "closed" else None,
                "author_association": "NONE",
                "active_lock_reason": None,
                "body": body,
                "timeline_url": base + "/timeline",
                "performed_via_github_app": None,
                "state_reason": "completed" if state == "closed" else None,
            }
            if pull_request:
                pr = f"https://github.com/{self.full_name}/pull/{number}"
                issue["pull_request"] = {
                    "url": f"https://api.github.com/repos/{self.full_name}/pulls/{number}",
                    "html_url": pr,
                    "diff_url": pr + ".diff",
                    "patch_url": pr + ".patch",
                    "merged_at": None,
                }
            self.issues[number] = issue
            self.comments[number] = []
            return issue

    def _label_for(self, name: str) -> dict[str, Any]:
        label = self.labels.get(name.lower())
        if label is None:
            # GitHub creates a label that an issue is given but the repository lacks.
            label = self.add_label(name)
        return copy.deepcopy(label)

    def add_comment(self, number: int, body: str) -> dict[str, Any]:
        """Add a comment to issue ``number`` as a POST would; the stored comment itself."""
        with self._lock:
            status, _, _ = self._create_comment(number, {"body": body})
            assert status == 201, status
            return self.comments[number][-1]

    def requests_for(self, method: str = "*", path: str = "") -> list[LoggedRequest]:
        return [
            r for r in self.log if method in ("*", r.method) and re.search(path, r.path) is not None
        ]

    def open_issues(self, label: Optional[str] = None) -> list[dict[str, Any]]:
        return [
            i
            for i in self.issues.values()
            if i["state"] == "open"
            and "pull_request" not in i
            and (label is None or any(lb["name"] == label for lb in i["labels"]))
        ]

    # -- request handling ------------------------------------------------------

    def handle(
        self, method: str, raw_path: str, headers: dict[str, str], raw_body: bytes
    ) -> tuple[Optional[Fault], int, dict[str, str], Any]:
        parsed = urllib.parse.urlsplit(raw_path)
        path = parsed.path
        query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        body: Any = None
        if raw_body:
            try:
                body = json.loads(raw_body)
            except ValueError:
                body = raw_body.decode("utf-8", "replace")
        entry = LoggedRequest(method, path, query, headers, body)
        with self._lock:
            self.log.append(entry)
            fault = next((f for f in self.faults if f.matches(method, path)), None)
            if fault is not None:
                fault.times -= 1
                if fault.times <= 0:
                    self.faults.remove(fault)
        if self.before is not None:
            self.before(entry)
        if fault is not None and (fault.drop or fault.status == 0):
            entry.status = 0
            return fault, 0, {}, None
        if fault is not None and fault.hang:
            self._stopping.wait()
            entry.status = 0
            return fault, 0, {}, None
        if fault is not None and fault.delay:
            time.sleep(fault.delay)
        if fault is not None and not (fault.status == 200 and fault.body is None):
            entry.status = fault.status
            return fault, fault.status, dict(fault.headers), fault.body
        status, out_headers, out = self._dispatch(method, path, parsed.query, query, headers, body)
        entry.status = status
        return None, status, out_headers, out

    def _dispatch(
        self,
        method: str,
        path: str,
        raw_query: str,
        query: dict[str, list[str]],
        headers: dict[str, str],
        body: Any,
    ) -> tuple[int, dict[str, str], Any]:
        if self.prefix:
            if not path.startswith(self.prefix + "/"):
                return _error(404, "Not Found")
            path = path[len(self.prefix) :]
        auth = headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() not in ("bearer", "token") or token not in (
            {self.token} | self.read_only_tokens
        ):
            return _error(401, "Bad credentials")
        write = method in ("POST", "PATCH", "PUT", "DELETE")
        if write and token in self.read_only_tokens:
            return _error(403, "Resource not accessible by integration")
        repo_path = f"/repos/{self.owner}/{self.repo}"
        if (
            path == f"/repositories/{self.repo_id}/issues"
            or re.fullmatch(rf"/repositories/{self.repo_id}/issues/\d+/comments", path)
            or path.startswith(f"/repositories/{self.repo_id}/actions/")
        ):
            path = repo_path + path[len(f"/repositories/{self.repo_id}") :]
        if not path.startswith(repo_path + "/"):
            return _error(404, "Not Found")
        # Validate against the schema under the templated path GitHub documents.
        schema_path = path
        rest = path[len(repo_path) :]
        if method == "GET" and rest.startswith("/actions/"):
            url = f"{self.url}/repositories/{self.repo_id}{rest}"
            with self._lock:
                answer = self._route_actions(rest, raw_query, query, url)
            if answer is not None:
                if self.validate and (answer[0] < 400 or answer[0] == 410):
                    self.schema_errors.extend(
                        schemas().response_errors(
                            method, schema_path, answer[0], sampled(answer[2])
                        )
                    )
                return answer
        if write:
            self._enter_write()
        try:
            if self.validate and write:
                self.schema_errors.extend(schemas().request_errors(method, schema_path, body))
            status, out_headers, out = self._route(method, rest, raw_query, query, body)
        finally:
            if write:
                self._leave_write()
        if self.validate and status < 300:
            self.schema_errors.extend(schemas().response_errors(method, schema_path, status, out))
        return status, out_headers, out

    def _enter_write(self) -> None:
        with self._lock:
            self._active_writes += 1
            self.max_concurrent_writes = max(self.max_concurrent_writes, self._active_writes)
        time.sleep(0.002)  # long enough for an overlapping write to be seen

    def _leave_write(self) -> None:
        with self._lock:
            self._active_writes -= 1

    def _route(
        self, method: str, rest: str, raw_query: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            if rest == "/issues" and method == "GET":
                return self._list_issues(raw_query, query)
            if rest == "/issues" and method == "POST":
                return self._create_issue(body)
            m = re.fullmatch(r"/issues/(\d+)", rest)
            if m and method in ("GET", "PATCH"):
                issue = self.issues.get(int(m.group(1)))
                if issue is None:
                    return _error(404, "Not Found")
                if method == "GET":
                    return 200, {}, copy.deepcopy(issue)
                return self._update_issue(issue, body)
            m = re.fullmatch(r"/issues/(\d+)/comments", rest)
            if m and method in ("GET", "POST"):
                number = int(m.group(1))
                if number not in self.issues:
                    return _error(404, "Not Found")
                if method == "GET":
                    return self._list_comments(number, raw_query, query)
                return self._create_comment(number, body)
            m = re.fullmatch(r"/pulls/(\d+)", rest)
            if m and method == "GET":
                pull = self.pulls.get(int(m.group(1)))
                return (200, {}, copy.deepcopy(pull)) if pull else _error(404, "Not Found")
            m = re.fullmatch(r"/issues/comments/(\d+)", rest)
            if m and method in ("GET", "PATCH", "DELETE"):
                return self._comment(method, int(m.group(1)), body)
            if rest == "/labels" and method == "GET":
                return 200, {}, [copy.deepcopy(lb) for lb in self.labels.values()]
            if rest == "/labels" and method == "POST":
                return self._create_label(body)
            m = re.fullmatch(r"/labels/([^/]+)", rest)
            if m and method == "GET":
                label = self.labels.get(urllib.parse.unquote(m.group(1)).lower())
                return (200, {}, copy.deepcopy(label)) if label else _error(404, "Not Found")
            return _error(404, "Not Found")

    def _list_issues(
        self, raw_query: str, query: dict[str, list[str]]
    ) -> tuple[int, dict[str, str], Any]:
        def arg(name: str, default: str) -> str:
            return query.get(name, [default])[-1]

        state = arg("state", "open")
        wanted = [x.strip().lower() for x in arg("labels", "").split(",") if x.strip()]
        since = arg("since", "")
        per_page = min(100, max(1, int(arg("per_page", "30"))))
        page = max(1, int(arg("page", "1")))
        items = [
            i
            for i in self.issues.values()
            if (state == "all" or i["state"] == state)
            and all(w in {lb["name"].lower() for lb in i["labels"]} for w in wanted)
            and (not since or _parse_iso(i["updated_at"]) >= _parse_iso(since))
        ]
        key = "updated_at" if arg("sort", "created") == "updated" else "created_at"
        items.sort(key=lambda i: (i[key], i["number"]), reverse=arg("direction", "desc") == "desc")
        return self._paged(items, raw_query, page, per_page, "issues")

    def _list_comments(
        self, number: int, raw_query: str, query: dict[str, list[str]]
    ) -> tuple[int, dict[str, str], Any]:
        """An issue's comments, oldest first; ``since`` filters on ``updated_at``, as GitHub."""
        since = query.get("since", [""])[-1]
        per_page = min(100, max(1, int(query.get("per_page", ["30"])[-1])))
        page = max(1, int(query.get("page", ["1"])[-1]))
        items = [
            c
            for c in self.comments[number]
            if not since or _parse_iso(c["updated_at"]) >= _parse_iso(since)
        ]
        return self._paged(items, raw_query, page, per_page, f"issues/{number}/comments")

    def _paged(
        self, items: list[dict[str, Any]], raw_query: str, page: int, per_page: int, path: str
    ) -> tuple[int, dict[str, str], Any]:
        """One page of ``items`` with the ``link`` header api.github.com sends."""
        url = f"{self.url}/repositories/{self.repo_id}/{path}"
        chunk, headers = paged(items, raw_query, page, per_page, url)
        return 200, headers, copy.deepcopy(chunk)

    def _too_long(self, resource: str, body: Any) -> Optional[tuple[int, dict[str, str], Any]]:
        text = body.get("body") if isinstance(body, dict) else None
        if isinstance(text, str) and len(text) > BODY_LIMIT:
            return (
                422,
                {},
                {
                    "message": "Validation Failed",
                    "errors": [
                        {
                            "resource": resource,
                            "code": "custom",
                            "field": "body",
                            "message": f"body is too long (maximum is {BODY_LIMIT} characters)",
                        }
                    ],
                    "documentation_url": DOCS + "/issues",
                    "status": "422",
                },
            )
        return None

    def _create_issue(self, body: Any) -> tuple[int, dict[str, str], Any]:
        if not isinstance(body, dict) or not body.get("title"):
            return _validation_error("Issue", "title", "missing_field")
        too_long = self._too_long("Issue", body)
        if too_long:
            return too_long
        labels = tuple(
            lb if isinstance(lb, str) else str(lb.get("name")) for lb in body.get("labels", [])
        )
        assignees = body.get("assignees") or []
        unknown = [a for a in assignees if a not in self.assignable]
        if unknown:  # as GitHub: one login that cannot be assigned refuses the whole issue
            return _validation_error("Issue", "assignees", "invalid")
        issue = self.add_issue(str(body["title"]), body.get("body"), labels)
        issue["assignees"] = [self._user(login) for login in assignees]
        issue["assignee"] = issue["assignees"][0] if assignees else None
        return 201, {"location": issue["url"]}, copy.deepcopy(issue)

    def _user(self, login: str) -> dict[str, Any]:
        """A user object like ``USER``, for ``login``."""
        user = copy.deepcopy(USER)
        base = "https://api.github.com/users/" + login
        user.update(login=login, id=10_000 + len(login), type="User", url=base)
        user["html_url"] = "https://github.com/" + login
        return user

    def _update_issue(self, issue: dict[str, Any], body: Any) -> tuple[int, dict[str, str], Any]:
        if not isinstance(body, dict):
            return _validation_error("Issue", "body", "invalid")
        too_long = self._too_long("Issue", body)
        if too_long:
            return too_long
        now = _iso(self.clock())
        if "title" in body:
            issue["title"] = str(body["title"])
        if "body" in body:
            issue["body"] = body["body"]
        if "labels" in body:
            issue["labels"] = [
                self._label_for(lb if isinstance(lb, str) else str(lb.get("name")))
                for lb in body["labels"]
            ]
        state = body.get("state")
        if state in ("open", "closed") and state != issue["state"]:
            issue["state"] = state
            issue["closed_at"] = now if state == "closed" else None
            reason = body.get("state_reason")
            issue["state_reason"] = reason or ("completed" if state == "closed" else "reopened")
        issue["updated_at"] = now
        return 200, {}, copy.deepcopy(issue)

    def _create_comment(self, number: int, body: Any) -> tuple[int, dict[str, str], Any]:
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            return _validation_error("IssueComment", "body", "missing_field")
        too_long = self._too_long("IssueComment", body)
        if too_long:
            return too_long
        cid = self._new_id()
        now = _iso(self.clock())
        issue = self.issues[number]
        comment = {
            "id": cid,
            "node_id": "IC_kwDOAAAB",
            "url": f"https://api.github.com/repos/{self.full_name}/issues/comments/{cid}",
            "html_url": f"{issue['html_url']}#issuecomment-{cid}",
            "issue_url": issue["url"],
            "body": body["body"],
            "user": copy.deepcopy(USER),
            "created_at": now,
            "updated_at": now,
            "author_association": "NONE",
            "performed_via_github_app": None,
        }
        self.comments[number].append(comment)
        issue["comments"] += 1
        issue["updated_at"] = now
        return 201, {"location": comment["url"]}, copy.deepcopy(comment)

    def _comment(self, method: str, cid: int, body: Any) -> tuple[int, dict[str, str], Any]:
        """Read, edit or delete one issue comment by its id."""
        for number, comments in self.comments.items():
            for position, comment in enumerate(comments):
                if comment["id"] != cid:
                    continue
                if method == "GET":
                    return 200, {}, copy.deepcopy(comment)
                if method == "DELETE":
                    del comments[position]
                    self.issues[number]["comments"] -= 1
                    return 204, {}, None
                if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                    return _validation_error("IssueComment", "body", "missing_field")
                too_long = self._too_long("IssueComment", body)
                if too_long:
                    return too_long
                comment["body"] = body["body"]
                comment["updated_at"] = _iso(self.clock())
                return 200, {}, copy.deepcopy(comment)
        return _error(404, "Not Found")

    def _create_label(self, body: Any) -> tuple[int, dict[str, str], Any]:
        if not isinstance(body, dict) or not body.get("name"):
            return _validation_error("Label", "name", "missing_field")
        name = str(body["name"])
        if name.lower() in self.labels:
            return _validation_error("Label", "name", "already_exists")
        color = str(body.get("color", "ededed"))
        if not re.fullmatch(r"[0-9a-fA-F]{6}", color):
            return _validation_error("Label", "color", "invalid")
        label = self.add_label(name, color, body.get("description"))
        return 201, {"location": label["url"]}, copy.deepcopy(label)


def _error(status: int, message: str) -> tuple[int, dict[str, str], Any]:
    return status, {}, {"message": message, "documentation_url": DOCS, "status": str(status)}


def _validation_error(resource: str, field: str, code: str) -> tuple[int, dict[str, str], Any]:
    return (
        422,
        {},
        {
            "message": "Validation Failed",
            "errors": [{"resource": resource, "code": code, "field": field}],
            "documentation_url": DOCS + "/issues",
            "status": "422",
        },
    )


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up is part of the test, not an error


class _Handler(http.server.BaseHTTPRequestHandler):
    emulator: GitHubEmulator
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        fault, status, out_headers, body = self.emulator.handle(
            self.command, self.path, headers, raw
        )
        if status == 0:
            self.close_connection = True
            self.connection.close()
            return
        payload = b"" if body is None else json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json; charset=utf-8")
        self.send_header("content-length", str(len(payload)))
        self.send_header("x-github-media-type", "github.v3; format=json")
        if fault is None or "x-ratelimit-remaining" not in fault.headers:
            self.send_header("x-ratelimit-limit", "5000")
            self.send_header("x-ratelimit-remaining", "4999")
            self.send_header("x-ratelimit-reset", str(int(time.time()) + 3600))
        for key, value in out_headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    do_GET = _serve
    do_POST = _serve
    do_PATCH = _serve
    do_PUT = _serve
    do_DELETE = _serve
