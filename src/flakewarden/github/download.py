"""Following an artifact's download redirect to the storage host, without the token.

``GET .../actions/artifacts/{id}/zip`` answers ``302`` with a signed URL on another
host (GitHub documents ``pipelines.actions.githubusercontent.com``; it expires after a
minute). The signature is the credential there: the API token belongs to
api.github.com only, so the URL is fetched on a session of its own that never holds
an ``Authorization`` header, with the client's deadline and retries, and a size limit
read as the bytes arrive (a ``content-length`` is not trusted).
"""

from __future__ import annotations

import urllib.parse
from typing import Optional

import requests

from flakewarden.github.api import USER_AGENT, GitHubClient
from flakewarden.github.api_errors import RETRY_STATUSES, GitHubRequestError, TooBig, unreachable

CHUNK = 1 << 16


class TokenlessDownloader:
    """Downloads signed URLs for one ``GitHubClient``, on a session that has no token."""

    def __init__(self, client: GitHubClient, session: Optional[requests.Session] = None) -> None:
        self.client = client
        self.session = session or requests.Session()
        self.session.max_redirects = 5
        self.session.headers["User-Agent"] = USER_AGENT
        self.session.headers.pop("Authorization", None)
        self.requests_sent = 0

    def close(self) -> None:
        self.session.close()

    def fetch(self, url: str, *, max_bytes: int, what: str) -> bytes:
        """The body at ``url``; ``GitHubRequestError`` when it cannot be had, ``TooBig``."""
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise GitHubRequestError(f"{what}: GitHub redirected to {url[:80]!r}, not an http URL")
        host = parsed.netloc
        failures = 0
        while True:
            timeout = self.client.timeout_for(what)
            try:
                self.requests_sent += 1
                with self.session.get(url, stream=True, timeout=timeout) as response:
                    status = response.status_code
                    if status == 200:
                        return _read_bounded(response, max_bytes, what)
            except (requests.ConnectionError, requests.Timeout) as exc:
                why = unreachable(exc)
                failures += 1
                if why or failures > self.client.max_retries:
                    raise GitHubRequestError(
                        f"{what}: the download from {host} failed: "
                        f"{why or type(exc).__name__ + f' {failures} times'}"
                    ) from None
                self.client.pause(self.client.backoff_for(failures), what)
                continue
            except requests.RequestException as exc:
                raise GitHubRequestError(
                    f"{what}: the download from {host} failed: {type(exc).__name__}"
                ) from None
            if status in RETRY_STATUSES and failures < self.client.max_retries:
                failures += 1
                self.client.pause(self.client.backoff_for(failures), what)
                continue
            raise GitHubRequestError(
                f"{what}: the storage host {host} answered {status} "
                "(the signed URL may have expired; the next ingest tries again)",
                status,
            )


def _read_bounded(response: requests.Response, max_bytes: int, what: str) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise TooBig(
            f"{what}: the artifact is {int(declared):,} bytes, more than the {max_bytes:,} "
            "read at most"
        )
    parts: list[bytes] = []
    size = 0
    for chunk in response.iter_content(CHUNK):
        size += len(chunk)
        if size > max_bytes:
            raise TooBig(f"{what}: the artifact is more than the {max_bytes:,} bytes read at most")
        parts.append(chunk)
    return b"".join(parts)
