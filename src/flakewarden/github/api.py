"""A small GitHub REST client: auth, timeouts, retries, rate limits, pagination.

It follows GitHub's documented rules for integrators: writes are sent one at a
time with a pause between them, rate-limited requests wait as the response says
(``retry-after``, then ``x-ratelimit-reset``, else at least a minute, growing),
5xx answers, timeouts and dropped connections are retried with backoff, and
pagination follows the ``link`` header's ``next`` URL exactly as given. The token
is never printed: it only ever travels in the ``Authorization`` header.

Bookkeeping must never hold a CI job hostage, so a client may carry one overall
``deadline``: every request's timeout is cut to the time left, no wait that would
outlast it is started, and a refused connection or an unknown host (nobody is
listening there; asking again will not change that) is not retried at all.
Once one request has used up its retries, later ones get a single try each
until one succeeds: an outage is confirmed once, not once per request. What an
error answer means (its type, whether it is final, the wait a rate limit asks
for, the message) is read in ``api_errors``.
"""

from __future__ import annotations

import os
import random
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any, Callable, Optional

import requests

from flakewarden import __version__
from flakewarden.errors import GitHubError
from flakewarden.github.api_errors import (
    RETRY_STATUSES,
    GitHubRequestError,
    error_message,
    rate_limit_wait,
    unreachable,
)

DEFAULT_API_URL = "https://api.github.com"
USER_AGENT = f"flakewarden/{__version__} (+https://github.com/flakewarden/flakewarden)"
API_VERSION = "2022-11-28"

# GitHub rejects issue and comment bodies longer than this many characters.
BODY_LIMIT = 65_536
WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})


def cap_body(text: str, limit: int = BODY_LIMIT - 1) -> str:
    """Cut ``text`` to at most ``limit`` characters and say so at the cut."""
    if len(text) <= limit:
        return text
    note = (
        f"\n\n---\n_flakewarden cut this text here: it was {len(text):,} characters long "
        f"and GitHub accepts at most {BODY_LIMIT:,}._\n"
    )
    keep = max(0, limit - len(note))
    return text[:keep] + note


class GitHubClient:
    """Talks to one GitHub (or GitHub Enterprise Server) API over ``requests``.

    ``sleep`` and ``clock`` are injectable so tests never really wait;
    ``max_wait`` bounds any single rate-limit pause (seconds),
    ``max_retries`` bounds how often one request is tried again, and
    ``deadline`` (seconds from the client's creation, ``None`` for none) bounds
    everything this client does put together.
    """

    def __init__(
        self,
        token: str,
        *,
        api_url: str = DEFAULT_API_URL,
        timeout: tuple[float, float] = (10.0, 30.0),
        max_retries: int = 4,
        backoff: float = 1.0,
        max_wait: float = 900.0,
        secondary_wait: float = 60.0,
        write_interval: float = 1.0,
        max_pages: int = 1000,
        deadline: Optional[float] = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        session: Optional[requests.Session] = None,
    ) -> None:
        if not token:
            raise GitHubError(
                "no GitHub token: set GITHUB_TOKEN (in a workflow: "
                "`env: GITHUB_TOKEN: ${{ github.token }}`) or pass --token"
            )
        self._token = token
        self.api_url = api_url.rstrip("/")
        parsed = urllib.parse.urlsplit(self.api_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise GitHubError(
                f"GITHUB_API_URL {api_url!r} is not an http(s) URL; "
                "set it to e.g. https://api.github.com or https://HOST/api/v3"
            )
        self._origin = (parsed.scheme, parsed.netloc)
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_wait = max_wait
        self.secondary_wait = secondary_wait
        self.write_interval = write_interval
        self.max_pages = max_pages
        self._sleep = sleep
        self._clock = clock
        self.deadline = deadline
        self._deadline_at = None if deadline is None else clock() + deadline
        self._session = session or requests.Session()
        self._session.headers.update(
            {
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
                "User-Agent": USER_AGENT,
            }
        )
        self._write_lock = threading.Lock()
        self._last_write = float("-inf")
        self.requests_sent = 0
        # Set when a request used up all its retries: an outage is not probed again with
        # backoff by every following request; each gets one try until one succeeds.
        self._outage = False

    @classmethod
    def from_env(
        cls,
        token: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        **kwargs: Any,
    ) -> GitHubClient:
        """Build a client from ``--token`` or ``GITHUB_TOKEN`` and ``GITHUB_API_URL``."""
        env = os.environ if env is None else env
        return cls(
            token or env.get("GITHUB_TOKEN", ""),
            api_url=env.get("GITHUB_API_URL") or DEFAULT_API_URL,
            **kwargs,
        )

    def __repr__(self) -> str:
        return f"GitHubClient(api_url={self.api_url!r}, token=***)"

    def close(self) -> None:
        self._session.close()

    # -- requests -------------------------------------------------------------

    def url(self, path_or_url: str) -> str:
        """An absolute URL for an API path; absolute URLs must stay on the API's host."""
        if path_or_url.startswith(("http://", "https://")):
            parsed = urllib.parse.urlsplit(path_or_url)
            if (parsed.scheme, parsed.netloc) != self._origin:
                raise GitHubError(
                    f"refusing to send the token to {parsed.scheme}://{parsed.netloc}: "
                    f"it is not GITHUB_API_URL ({self.api_url})"
                )
            return path_or_url
        return self.api_url + "/" + path_or_url.lstrip("/")

    def request(
        self,
        method: str,
        path_or_url: str,
        *,
        params: Optional[Mapping[str, Any]] = None,
        json: Optional[Mapping[str, Any]] = None,
        allow_redirects: bool = True,
    ) -> requests.Response:
        """Send one request, retrying and waiting as GitHub asks; raise ``GitHubError``.

        With ``allow_redirects=False`` a redirect comes back as it is (a 3xx answer),
        for the caller to follow without the token (``download``).
        """
        method = method.upper()
        url = self.url(path_or_url)
        if method in WRITE_METHODS:
            with self._write_lock:
                wait = self._last_write + self.write_interval - self._clock()
                if wait > 0:
                    self._wait(wait, f"{method} {urllib.parse.urlsplit(url).path}")
                try:
                    return self._send(method, url, params, json)
                finally:
                    self._last_write = self._clock()
        return self._send(method, url, params, json, allow_redirects=allow_redirects)

    def _send(
        self,
        method: str,
        url: str,
        params: Optional[Mapping[str, Any]],
        body: Optional[Mapping[str, Any]],
        *,
        allow_redirects: bool = True,
    ) -> requests.Response:
        what = f"{method} {urllib.parse.urlsplit(url).path}"
        failures = 0
        rate_limited = 0
        retries = 0 if self._outage else self.max_retries
        while True:
            timeout = self._timeout(what)
            try:
                self.requests_sent += 1
                response = self._session.request(
                    method,
                    url,
                    params=params,
                    json=body,
                    headers={"Authorization": f"Bearer {self._token}"},
                    timeout=timeout,
                    allow_redirects=allow_redirects,
                )
            except (
                requests.ConnectionError,
                requests.Timeout,
                requests.exceptions.ChunkedEncodingError,
            ) as exc:
                why = unreachable(exc)
                if why:
                    raise GitHubRequestError(
                        f"{what} failed: {why}; check that GITHUB_API_URL "
                        f"({self.api_url}) is right and reachable from this runner",
                        final=True,
                    ) from None
                failures += 1
                self._check_deadline(what, f"{type(exc).__name__} after {failures} tries")
                if failures > retries:
                    self._outage = True
                    kind = "timed out" if isinstance(exc, requests.Timeout) else "failed"
                    raise GitHubRequestError(
                        f"{what} {kind} {failures} times ({type(exc).__name__}); "
                        f"check that GITHUB_API_URL ({self.api_url}) is reachable"
                    ) from None
                self._wait(self._backoff(failures), what)
                continue
            except requests.RequestException as exc:
                raise GitHubRequestError(
                    f"{what} failed: {type(exc).__name__}; check GITHUB_API_URL ({self.api_url})"
                ) from None

            status = response.status_code
            if status in RETRY_STATUSES:
                failures += 1
                if failures > retries:
                    self._outage = True
                    raise GitHubRequestError(
                        f"{what} failed: GitHub answered {status} {failures} times; "
                        "GitHub may be having an outage, try again later",
                        status,
                    )
                self._wait(self._backoff(failures), what)
                continue

            if status in (403, 429):
                wait = rate_limit_wait(
                    response,
                    rate_limited,
                    secondary_wait=self.secondary_wait,
                    max_wait=self.max_wait,
                    clock=self._clock,
                )
                if wait is not None:
                    rate_limited += 1
                    if rate_limited > self.max_retries:
                        raise GitHubRequestError(
                            f"{what} is still rate limited after {rate_limited} waits; "
                            "try again later or file fewer issues per run",
                            status,
                        )
                    self._wait(wait, what)
                    continue

            self._outage = False
            if status >= 400:
                raise GitHubRequestError(error_message(what, response, self._token), status)
            return response

    def remaining(self) -> Optional[float]:
        """Seconds left before the deadline (``None``: no deadline)."""
        if self._deadline_at is None:
            return None
        return self._deadline_at - self._clock()

    def _deadline_error(self, what: str, detail: str) -> GitHubRequestError:
        return GitHubRequestError(
            f"{what}: gave up at flakewarden's {self.deadline:g} s deadline for GitHub "
            f"bookkeeping ({detail}); GitHub is slow or down, the next run catches up",
            final=True,
        )

    def _check_deadline(self, what: str, detail: str) -> None:
        left = self.remaining()
        if left is not None and left <= 0:
            raise self._deadline_error(what, detail)

    def _timeout(self, what: str) -> tuple[float, float]:
        """The request timeout, cut to the time left before the deadline."""
        left = self.remaining()
        if left is None:
            return self.timeout
        if left <= 0:
            raise self._deadline_error(what, "no time left")
        return (min(self.timeout[0], left), min(self.timeout[1], left))

    def _wait(self, seconds: float, what: str) -> None:
        """Sleep ``seconds``, unless that would outlast the deadline: then give up now."""
        left = self.remaining()
        if left is not None and seconds >= left:
            raise self._deadline_error(
                what, f"a {seconds:.0f} s wait would outlast the {max(0.0, left):.0f} s left"
            )
        self._sleep(seconds)

    def timeout_for(self, what: str) -> tuple[float, float]:
        """The timeout a request sent now gets (cut to the deadline); raises past it."""
        return self._timeout(what)

    def pause(self, seconds: float, what: str) -> None:
        """Wait between retries of a request this client does not send itself."""
        self._wait(seconds, what)

    def backoff_for(self, failures: int) -> float:
        return self._backoff(failures)

    def _backoff(self, failures: int) -> float:
        base = self.backoff * 2.0 ** (failures - 1)
        return base + random.uniform(0, base / 4)

    # -- conveniences ---------------------------------------------------------

    def get_json(self, path: str, params: Optional[Mapping[str, Any]] = None) -> Any:
        return _json(self.request("GET", path, params=params))

    def post_json(self, path: str, body: Mapping[str, Any]) -> Any:
        return _json(self.request("POST", path, json=_capped(body)))

    def patch_json(self, path: str, body: Mapping[str, Any]) -> Any:
        return _json(self.request("PATCH", path, json=_capped(body)))

    def paginate(
        self, path: str, params: Optional[Mapping[str, Any]] = None
    ) -> Iterator[dict[str, Any]]:
        """Yield every item of a list endpoint, following ``link: rel="next"`` as given."""
        url: Optional[str] = path
        query: Optional[Mapping[str, Any]] = {"per_page": 100, **(params or {})}
        pages = 0
        while url is not None:
            pages += 1
            if pages > self.max_pages:
                raise GitHubError(
                    f"GET {path} returned more than {self.max_pages} pages; stopping there"
                )
            response = self.request("GET", url, params=query)
            items = _json(response)
            if not isinstance(items, list):
                raise GitHubError(
                    f"GET {path}: expected a list, GitHub sent {type(items).__name__}"
                )
            yield from items
            next_link = response.links.get("next", {}).get("url")
            # The next URL carries its own query (and often another path); never rebuild it.
            url, query = (next_link or None), None


def _capped(body: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(body)
    if isinstance(out.get("body"), str):
        out["body"] = cap_body(out["body"])
    return out


def _json(response: requests.Response) -> Any:
    if response.status_code == 204 or not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        raise GitHubError(
            f"{response.request.method} {urllib.parse.urlsplit(response.url).path}: "
            "GitHub sent a response that is not JSON; check GITHUB_API_URL"
        ) from None
