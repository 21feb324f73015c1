"""What GitHub's error answers mean: the error type, which failures are retried or final,
how long a rate limit asks us to wait, and the one-line message with a hint per status.

Kept apart from the client because reading an answer is pure (no request, no sleep):
the client in ``api.py`` only sends, waits and retries as these rules say.
"""

from __future__ import annotations

import socket
import time
from typing import Callable, Optional

import requests

from flakewarden.errors import GitHubError

RETRY_STATUSES = frozenset({500, 502, 503, 504})
PERMISSION_HINT = (
    "give the token `issues: write` (workflow `permissions:`); "
    "a fork's pull request only gets a read-only token"
)


# Errors after which every further request would fail the same way.
STOP_STATUSES = frozenset({401, 403, 404, 410, 429})


class GitHubRequestError(GitHubError):
    """A request GitHub answered with an error status (``status``) or never answered (0).

    ``final`` says that every further request would fail the same way (the deadline
    is spent, the API is unreachable, the token is refused): callers stop there.
    """

    def __init__(self, message: str, status: int = 0, final: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.final = final or status in STOP_STATUSES

    @property
    def is_auth(self) -> bool:
        """True when retrying with the same token cannot help (401, 403 without rate limit)."""
        return self.status in (401, 403, 404)


class TooBig(GitHubError):
    """A body (an artifact) larger than the size read at most: the same on every try, so a
    caller skips it instead of retrying it."""


def mask(text: str, token: str) -> str:
    """Replace every occurrence of the token in ``text``."""
    if token and len(token) >= 4:
        return text.replace(token, "***")
    return text


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def rate_limit_wait(
    response: requests.Response,
    waited: int,
    *,
    secondary_wait: float,
    max_wait: float,
    clock: Callable[[], float],
) -> Optional[float]:
    """How long GitHub asks us to wait, or ``None`` when this is not a rate limit.

    Raises when the wait would exceed ``max_wait``: sleeping through an hour's
    reset would hold a CI job hostage for bookkeeping.
    """
    headers = response.headers
    retry_after = headers.get("retry-after")
    remaining = headers.get("x-ratelimit-remaining")
    wait: Optional[float] = None
    reason = ""
    if retry_after is not None:
        try:
            wait = max(0.0, float(retry_after))
        except ValueError:
            wait = secondary_wait
        reason = f"retry-after {retry_after}"
    elif remaining == "0":
        reset = headers.get("x-ratelimit-reset", "")
        try:
            wait = max(0.0, float(reset) - clock()) + 1.0
        except ValueError:
            wait = secondary_wait
        reason = "the rate limit resets at " + (
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(reset)))
            if reset.isdigit() and len(reset) <= 11
            else repr(reset)
        )
    elif response.status_code == 429 or "rate limit" in _message(response).lower():
        wait = secondary_wait * 2.0**waited
        reason = "secondary rate limit"
    if wait is None:
        return None
    if wait > max_wait:
        raise GitHubRequestError(
            f"GitHub rate limit: {reason}, which is more than the {max_wait:.0f} s "
            "flakewarden waits; run again later or use a token with a higher limit",
            response.status_code,
        )
    return wait


def error_message(what: str, response: requests.Response, token: str) -> str:
    """One line for an error answer: what failed, GitHub's message, what to do (token masked)."""
    status = response.status_code
    message = _message(response)
    detail = f"GitHub answered {status}" + (f": {message}" if message else "")
    if status == 401:
        hint = "the token is invalid or expired; set GITHUB_TOKEN to a valid token"
    elif status in (403, 404):
        hint = PERMISSION_HINT
        if status == 404:
            hint = "check GITHUB_REPOSITORY and that the token can see it; " + hint
    elif status == 422:
        hint = "GitHub rejected the content"
    elif status == 410:
        hint = "issues are disabled for this repository; enable them in its settings"
    else:
        hint = "see the message above"
    return mask(_one_line(f"{what} failed: {detail}; {hint}", 500), token)


def unreachable(exc: BaseException) -> str:
    """Why nobody can answer at all (refused, unknown host), or ``""`` for a transient failure.

    A timeout, a dropped connection or a reset may go away on a retry; a refused
    connection or a name that does not resolve will not within a CI job.
    """
    if isinstance(exc, requests.Timeout):
        return ""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, socket.gaierror):
            return "the host name does not resolve (DNS)"
        if isinstance(current, ConnectionRefusedError):
            return "the connection was refused (nothing listens there)"
        if "Failed to resolve" in str(current) or "Name or service not known" in str(current):
            return "the host name does not resolve (DNS)"
        for nested in (*current.args, getattr(current, "reason", None)):
            if isinstance(nested, BaseException):
                pending.append(nested)
        for nested in (current.__cause__, current.__context__):
            if nested is not None:
                pending.append(nested)
    return ""


def _message(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    message = str(data.get("message") or "")
    errors = data.get("errors")
    if isinstance(errors, list):
        details = [
            str(e.get("message") or e.get("code") or "") if isinstance(e, dict) else str(e)
            for e in errors
        ]
        details = [d for d in details if d]
        if details:
            message += " (" + "; ".join(details) + ")"
    return message
