"""``flakewarden run``'s blame options: ``--base``, ``--check-base``, ``--untouched-failures``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

from flakewarden.model.verdicts import UNTOUCHED_POLICIES

if TYPE_CHECKING:
    from flakewarden.blame.session import Blame
    from flakewarden.config import Config

AUTO = "auto"


def add_blame_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("blame (did a failure run the change?)")
    group.add_argument(
        "--base",
        default=None,
        metavar="REF",
        help="say, for every test whose first attempt failed, whether it executed a line this "
        "branch changed since its merge base with REF (report.json tests[].change); 'auto': "
        "the pull request's base branch on GitHub Actions, else origin/HEAD "
        "(default: the config's blame.base; none)",
    )
    group.add_argument(
        "--no-base",
        action="store_true",
        help="no blame, whatever the config says",
    )
    group.add_argument(
        "--check-base",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run each test that failed every attempt and did not run the change on a "
        "worktree of the merge base: does the base fail too? (default: blame.check_base)",
    )
    group.add_argument(
        "--untouched-failures",
        choices=UNTOUCHED_POLICIES,
        default=None,
        help="what a failure that ran none of the change and fails on the base too does to "
        "the exit code: report (nothing), warn (a warning annotation), ignore-in-gate "
        "(it does not fail the run) (default: blame.untouched_failures, report)",
    )


def blame_for(
    args: argparse.Namespace,
    config: Config,
    *,
    cwd: Path,
    report_dir: Path,
    command: list[str],
    say: Callable[[str], None],
) -> Optional[Blame]:
    """The run's blame, or None when no base is asked for."""
    settings = config.blame
    base = args.base if args.base is not None else settings.base
    if args.no_base or not base:
        return None
    from flakewarden.blame.session import Blame

    check_base = settings.check_base if args.check_base is None else args.check_base
    policy = args.untouched_failures or settings.untouched_failures
    return Blame(
        cwd,
        None if base == AUTO else base,
        policy=policy,
        report_dir=report_dir,
        command=command,
        check_base=check_base,
        base_timeout=settings.base_timeout,
        say=say,
    )
