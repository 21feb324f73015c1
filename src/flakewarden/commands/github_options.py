"""The options and warning every command that talks to GitHub shares.

Apart from any one command so the commands stay siblings, none importing another.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from flakewarden.actions import runtime
from flakewarden.commands.argtypes import number


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


def warn(message: str) -> None:
    """One escaped warning line (an annotation on GitHub Actions) from GitHub bookkeeping."""
    runtime.warn(message, "flakewarden issues")
