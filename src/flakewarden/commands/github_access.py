"""What every command that talks to GitHub shares: its options, the repository, the client.

Apart from any one command so the commands stay siblings, none importing another.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from flakewarden.actions import runtime
from flakewarden.commands.argtypes import number, whole_number
from flakewarden.errors import GitHubError, UsageError

if TYPE_CHECKING:
    from flakewarden.github.api import GitHubClient
    from flakewarden.model import RunReport

_PULL_REF = re.compile(r"refs/pull/([0-9]{1,10})/(?:merge|head)")
NO_REPOSITORY = "no repository: set GITHUB_REPOSITORY=owner/repo or pass --repository"


def add_github_options(
    parser: argparse.ArgumentParser, what: str = "repository to file issues in"
) -> None:
    """``--token`` and ``--repository``, defaulting to the environment GitHub Actions sets."""
    parser.add_argument(
        "--token",
        default=None,
        help="GitHub token (default: $GITHUB_TOKEN; prefer the variable, "
        "command lines are visible to other processes)",
    )
    parser.add_argument(
        "--repository",
        default=None,
        metavar="OWNER/REPO",
        help=f"{what} (default: $GITHUB_REPOSITORY)",
    )


DEFAULT_REPORT_DIR = "flakewarden-report"


def add_pull_request_options(parser: argparse.ArgumentParser) -> None:
    """``--report-dir`` (the run's report) and ``--pr`` (the pull request it is about)."""
    parser.add_argument(
        "--report-dir",
        default=DEFAULT_REPORT_DIR,
        metavar="DIR",
        help=f"where report.json is (default: {DEFAULT_REPORT_DIR})",
    )
    parser.add_argument(
        "--pr",
        type=whole_number(1),
        default=None,
        metavar="N",
        help="the pull request (default: the one this workflow run is for)",
    )


def add_deadline_options(parser: argparse.ArgumentParser, on_deadline: str, default: str) -> None:
    """``--deadline`` (all of a command's GitHub work within it) and ``--config``."""
    parser.add_argument(
        "--deadline",
        type=number(0, 3600, low_open=True, what="a number of seconds"),
        default=None,
        metavar="SECONDS",
        help=f"give up on GitHub after this long in all, {on_deadline} (default: {default})",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="configuration file (default .github/flakewarden.yml when present)",
    )


def event_payload(env: Optional[Mapping[str, str]] = None) -> dict[str, Any]:
    """The Actions event payload (``GITHUB_EVENT_PATH``); ``{}`` when absent or unreadable."""
    env = os.environ if env is None else env
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def pull_request_of(report: RunReport, env: Optional[Mapping[str, str]] = None) -> Optional[int]:
    """The pull request this run is for: the report's, the ref's, or the event payload's."""
    env = os.environ if env is None else env
    if report.context is not None and report.context.pr_number:
        return report.context.pr_number
    pull = _PULL_REF.fullmatch(env.get("GITHUB_REF", ""))
    if pull:
        return int(pull.group(1))
    pr = event_payload(env).get("pull_request")
    found = pr.get("number") if isinstance(pr, dict) else None
    return found if isinstance(found, int) and not isinstance(found, bool) and found > 0 else None


def warn(message: str) -> None:
    """One escaped warning line (an annotation on GitHub Actions) from GitHub bookkeeping."""
    runtime.warn(message, "flakewarden issues")


def repository_of(given: Optional[str]) -> Optional[str]:
    """``owner/repo`` from ``--repository`` or ``$GITHUB_REPOSITORY``; None when neither is one."""
    repository = given or os.environ.get("GITHUB_REPOSITORY") or ""
    return repository if repository.count("/") == 1 else None


def require_repository(given: Optional[str]) -> str:
    """The repository a command cannot work without; a usage error names how to give it."""
    repository = repository_of(given)
    if repository is None:
        raise UsageError(NO_REPOSITORY)
    return repository


def fail_open_access(
    given: Optional[str],
    token: Optional[str],
    say_not_done: Callable[[str], None],
    deadline: Optional[float] = None,
    client: Optional[GitHubClient] = None,
) -> Optional[tuple[str, GitHubClient]]:
    """The repository and a client for bookkeeping that must never fail a build.

    None, after one ``say_not_done(why)``, when there is no repository or no client can be
    made: the caller skips its work and exits as if it had done it.
    """
    from flakewarden.github.api import GitHubClient

    repository = repository_of(given)
    if repository is None:
        say_not_done(NO_REPOSITORY.replace(": ", "; ", 1))
        return None
    try:
        if client is None:
            client = (
                GitHubClient.from_env(token)
                if deadline is None
                else GitHubClient.from_env(token, deadline=deadline)
            )
    except GitHubError as exc:
        say_not_done(str(exc))
        return None
    return repository, client


@contextlib.contextmanager
def github_client(
    token: Optional[str],
    deadline: Optional[float] = None,
    client: Optional[GitHubClient] = None,
) -> Iterator[GitHubClient]:
    """The client given (a test's), or one from the token and environment; closed after."""
    from flakewarden.github.api import GitHubClient

    if client is None:
        client = (
            GitHubClient.from_env(token)
            if deadline is None
            else GitHubClient.from_env(token, deadline=deadline)
        )
    try:
        yield client
    finally:
        client.close()
