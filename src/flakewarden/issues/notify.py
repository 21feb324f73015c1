"""One JSON message to a webhook per new flake issue and per escalation.

The body suits Slack's and Teams' incoming webhooks (a ``text`` field, Markdown
links as ``<url|text>`` for Slack) and carries the structured fields a bot would
read: ``event``, ``test_id``, ``issue_url``, ``owners``, ``hits`` and ``rate``
(when the flake history gave one). Fail-open within the caller's deadline: a
slow, failing or unreachable receiver costs at most that long and becomes one
line. The URL is a secret (a Slack webhook URL is its own credential): it is
never printed, in errors neither, and it is never sent anything but the message.
"""

from __future__ import annotations

import dataclasses
import json
import os
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional

import requests

from flakewarden.github.api import USER_AGENT

ENV = "FLAKEWARDEN_WEBHOOK_URL"
TIMEOUT = (3.05, 10.0)  # connect, read: seconds, within the deadline
TEXT_LIMIT = 3000  # Slack shows up to 40,000; a notification should be short anyway


@dataclasses.dataclass(frozen=True)
class Message:
    event: str  # "new-flake" or "escalated"
    test_id: str
    issue_url: str
    issue_number: int
    owners: tuple[str, ...] = ()
    hits: Optional[int] = None
    rate: Optional[float] = None
    repository: str = ""

    def text(self) -> str:
        """The one line a chat shows: what happened, to which test, who owns it, the link."""
        test = " ".join(self.test_id.split())[:300]
        what = "New flaky test" if self.event == "new-flake" else "Quarantine escalated"
        owners = ", ".join(self.owners) if self.owners else "nobody yet (triage)"
        figures = []
        if self.hits is not None:
            figures.append(f"{self.hits} hit{'s' if self.hits != 1 else ''}")
        if self.rate is not None:
            figures.append(f"failure rate {self.rate:.1%}")
        shown = f" ({', '.join(figures)})" if figures else ""
        where = f" in {self.repository}" if self.repository else ""
        link = f"<{self.issue_url}|#{self.issue_number}>"
        text = f"{what}{where}: `{test}`{shown}. Owner: {owners}. {link}"
        return text[:TEXT_LIMIT]

    def payload(self) -> dict[str, Any]:
        return {
            "text": self.text(),
            "event": self.event,
            "repository": self.repository,
            "test_id": self.test_id,
            "issue_number": self.issue_number,
            "issue_url": self.issue_url,
            "owners": list(self.owners),
            "hits": self.hits,
            "rate": self.rate,
        }


def webhook_url(configured: Optional[str], env: Optional[Mapping[str, str]] = None) -> str:
    """The secret in the environment (the action's input) wins over the config's URL."""
    env = os.environ if env is None else env
    return (env.get(ENV) or configured or "").strip()


def check_url(url: str) -> str:
    """``""`` when ``url`` can be posted to, else why not (without the URL itself)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return "the webhook URL is not an http(s) URL"
    if parts.username or parts.password:
        return "the webhook URL carries a user name or password"
    return ""


def send(
    url: str,
    messages: Sequence[Message],
    remaining: Callable[[], Optional[float]],
    session: Optional[requests.Session] = None,
) -> list[str]:
    """Post each message; the problems, one line each, none naming the URL."""
    bad = check_url(url)
    if bad:
        return [bad + "; no notification sent"] if messages else []
    problems: list[str] = []
    own = session is None
    session = session or requests.Session()
    try:
        for position, message in enumerate(messages):
            left = remaining()
            if left is not None and left <= 0:
                problems.append(
                    f"the deadline passed: {len(messages) - position} webhook notification(s) "
                    "not sent"
                )
                break
            timeout = TIMEOUT if left is None else (min(TIMEOUT[0], left), min(TIMEOUT[1], left))
            problem = _post(session, url, message, timeout)
            if problem:
                problems.append(f"webhook notification for #{message.issue_number}: {problem}")
    finally:
        if own:
            session.close()
    return problems


def _post(
    session: requests.Session, url: str, message: Message, timeout: tuple[float, float]
) -> str:
    try:
        response = session.post(
            url,
            data=json.dumps(message.payload()),
            headers={"Content-Type": "application/json", "User-Agent": USER_AGENT},
            timeout=timeout,
            allow_redirects=False,  # a redirect could carry the message somewhere else
        )
    except requests.Timeout:
        return "the receiver did not answer in time"
    except requests.ConnectionError:
        return "the receiver could not be reached"
    except requests.RequestException as exc:
        return f"the request failed ({type(exc).__name__})"
    with response:
        if 200 <= response.status_code < 300:
            return ""
        return f"the receiver answered HTTP {response.status_code}"
