"""``flakewarden quarantined --output FILE``: read the quarantined set before the tests run.

The action reads the set in a step of its own, with the token, and hands the
tests' step only the file: no process that holds the token is alive while user
code runs. Fail-open, like ``run``: when the set cannot be read, one warning
and an empty list, so no test is treated as quarantined on a guess.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Optional

from flakewarden.commands.github_access import add_deadline_options, add_github_options
from flakewarden.config import load as load_config
from flakewarden.errors import UsageError
from flakewarden.model import ExitCode

HELP = "write the quarantined test ids read from GitHub to a file, for run --quarantined-file"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "quarantined",
        help=HELP,
        description=f"{HELP.capitalize()}. Fail-open: when GitHub cannot be read, one warning "
        "and an empty list (no test is treated as quarantined); the exit code stays 0.",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        metavar="FILE",
        help="where to write the JSON list of ids (default: standard output)",
    )
    add_github_options(parser, "repository whose flake issues hold the set")
    add_deadline_options(
        parser,
        "warning and writing an empty list",
        "quarantine_read_deadline from the config file, else 15",
    )
    parser.set_defaults(handler=run)


def read_from_github(
    repository: Optional[str], token: Optional[str], deadline: float = 15.0
) -> Optional[frozenset[str]]:
    """The quarantined ids, or None after one warning when they cannot be read in time."""
    from flakewarden.errors import GitHubError
    from flakewarden.quarantine.labels import warn
    from flakewarden.quarantine.quarantined import fetch_quarantined_set

    try:
        if not repository or repository.count("/") != 1:
            raise GitHubError("GITHUB_REPOSITORY is not set to owner/repo")
        return fetch_quarantined_set(repository, token=token, deadline=deadline)
    except GitHubError as exc:
        warn(
            f"cannot read the quarantined tests from GitHub ({exc}); "
            "no test is treated as quarantined in this run"
        )
        return None


def run(args: argparse.Namespace) -> int:
    if args.test_command:
        raise UsageError("flakewarden quarantined takes no test command")
    token = args.token or os.environ.get("GITHUB_TOKEN") or ""
    repository = args.repository or os.environ.get("GITHUB_REPOSITORY")
    config = load_config(args.config, Path.cwd())
    deadline = args.deadline or config.quarantine_read_deadline
    found = read_from_github(repository, token, deadline) or frozenset()
    text = json.dumps(sorted(found), ensure_ascii=False) + "\n"
    if args.output is None:
        sys.stdout.write(text)
        return int(ExitCode.OK)
    try:
        args.output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--output {args.output}: {exc.strerror or exc}") from None
    print(f"flakewarden: {len(found)} quarantined test(s) written to {args.output}")
    return int(ExitCode.OK)
