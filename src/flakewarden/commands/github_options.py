"""The options and warning every command that talks to GitHub shares.

Apart from any one command so the commands stay siblings, none importing another.
"""

from __future__ import annotations

import argparse

from flakewarden.github import gha


def add_github_options(parser: argparse.ArgumentParser) -> None:
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
        help="repository to file issues in (default: $GITHUB_REPOSITORY)",
    )


def warn(message: str) -> None:
    """One escaped warning line (an annotation on GitHub Actions) from GitHub bookkeeping."""
    gha.warn(message, "flakewarden issues")
