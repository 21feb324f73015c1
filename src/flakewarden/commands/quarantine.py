"""``flakewarden quarantine``, ``release`` and ``reevaluate``: quarantine under policy.

Unlike ``flakewarden issues`` these are deliberate actions, so a GitHub failure
is an error with a non-zero exit code, and a refusal exits 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Any, Optional

from flakewarden.commands.github_access import (
    add_github_options,
    github_client,
    require_repository,
)
from flakewarden.commands.history_options import add_history_option, load_scores
from flakewarden.config import Config, load
from flakewarden.console import one_line, plural
from flakewarden.model import ExitCode

DEFAULT_RACE_FILE = Config().known_race_patterns


def _common(parser: argparse.ArgumentParser, config: bool = True) -> None:
    if config:
        parser.add_argument(
            "--config",
            type=Path,
            default=None,
            help="configuration file (default .github/flakewarden.yml when present)",
        )
    add_github_options(parser)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "quarantine",
        help="label a flaky test's issue `quarantined`, only when the policy allows it",
        description=(
            "Check the quarantine policy (hits, a recent stress verdict the policy allows, "
            "not a known race) and label the test's flake issue `quarantined`; otherwise "
            "print every unmet condition, comment the refusal on the issue and exit 1."
        ),
    )
    parser.add_argument("test_id", metavar="TEST_ID", help="the pytest node id")
    parser.add_argument("--reason", default="", help="why, recorded in the comment and marker")
    _common(parser)
    add_history_option(
        parser, "the issue's hits decide (quarantine_policy.min_failures) instead of the rate"
    )
    parser.set_defaults(handler=run_quarantine)


def register_release(subparsers: Any) -> None:
    """Registered by ``commands/release.py`` (the CLI imports one module per subcommand)."""
    parser = subparsers.add_parser(
        "release",
        help="remove the `quarantined` label from a test's issue, with a comment",
        description="Release a quarantined test: its failures fail the build again.",
    )
    parser.add_argument("test_id", metavar="TEST_ID", help="the pytest node id")
    parser.add_argument("--reason", default="", help="why, recorded in the comment and marker")
    _common(parser, config=False)
    parser.set_defaults(handler=run_release)


def register_reevaluate(subparsers: Any) -> None:
    """Registered by ``commands/reevaluate.py``."""
    parser = subparsers.add_parser(
        "reevaluate",
        help="propose releases by hysteresis and escalate old quarantines",
        description=(
            "For each quarantined test: propose release to its owner when the recent failure "
            "rate is below exit_failure_rate over at least min_runs_to_release runs; label "
            "flake-escalated past max_days. Each happens once; nothing is released here."
        ),
    )
    _common(parser)
    add_history_option(parser, "the counters in each issue's marker decide")
    parser.set_defaults(handler=run_reevaluate)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _evidence_line(args: argparse.Namespace, window: str) -> str:
    if args.history is None:
        return "flakewarden: evidence: the counters in the issue's marker (no --history given)\n"
    return (
        f"flakewarden: evidence: the flake history {one_line(args.history)}: {one_line(window)}\n"
    )


def run_quarantine(args: argparse.Namespace) -> int:
    cwd = Path.cwd()
    config = load(args.config, cwd)  # a config error exits 4 before anything is touched
    repository = require_repository(args.repository)
    history = None
    if args.history is not None:  # a missing or corrupt history fails before any request
        from flakewarden.quarantine.policy import Evidence

        selection, scores = load_scores(args.history, args, config)
        history = Evidence(scores.get(args.test_id), selection.info.describe())
    sys.stdout.write(_evidence_line(args, history.window if history else ""))
    from flakewarden.issues.records import RunContext
    from flakewarden.issues.tracker import FlakeTracker
    from flakewarden.quarantine import labels as q
    from flakewarden.quarantine.known_races import read_race_patterns
    from flakewarden.quarantine.quarantined import QUARANTINED

    race_path = Path(config.known_race_patterns)
    if not race_path.is_absolute():
        race_path = cwd / race_path
    explicit = config.known_race_patterns != DEFAULT_RACE_FILE
    races, race_problem = read_race_patterns(race_path, explicit)
    ctx = RunContext.from_env()
    with github_client(args.token) as github:
        target, unmet = q.quarantine(
            FlakeTracker(github, repository),
            args.test_id,
            config.quarantine_policy,
            races,
            race_problem,
            args.reason,
            ctx,
            _now(),
            config.known_race_patterns,
            history,
        )
    url = target.issue.html_url
    if unmet:
        sys.stdout.write(f"flakewarden: quarantine of {one_line(args.test_id)} refused:\n")
        for condition in unmet:
            head, _, detail = condition.partition("\n")
            sys.stdout.write(f"  - {one_line(head)}\n")
            for line in detail.splitlines():
                sys.stdout.write(f"      {one_line(line)}\n")
        sys.stdout.write(f"flakewarden: the refusal is recorded on #{target.issue.number} {url}\n")
        return int(ExitCode.TESTS_FAILED)
    since = target.issue.marker.get("quarantined_at")
    if QUARANTINED in target.labels:
        sys.stdout.write(
            f"flakewarden: {one_line(args.test_id)} is already quarantined "
            f"(since {since or 'an unknown date'}) #{target.issue.number} {url}\n"
        )
    else:
        sys.stdout.write(
            f"flakewarden: quarantined {one_line(args.test_id)}: #{target.issue.number} {url}\n"
        )
    return int(ExitCode.OK)


def run_release(args: argparse.Namespace) -> int:
    repository = require_repository(args.repository)
    from flakewarden.issues.records import RunContext
    from flakewarden.issues.tracker import FlakeTracker
    from flakewarden.quarantine import labels as q

    with github_client(args.token) as github:
        target = q.release(
            FlakeTracker(github, repository),
            args.test_id,
            args.reason,
            RunContext.from_env(),
            _now(),
        )
    sys.stdout.write(
        f"flakewarden: released {one_line(args.test_id)} from quarantine: "
        f"#{target.issue.number} {target.issue.html_url}\n"
    )
    return int(ExitCode.OK)


def _notify_escalations(
    config: Any, repository: str, results: list[Any], with_history: bool
) -> None:
    """One webhook message per escalation, fail-open within ``issues_deadline``."""
    import time

    from flakewarden.actions import runtime
    from flakewarden.issues import notify

    url = notify.webhook_url(config.webhook_url)
    messages = [
        notify.Message(
            "escalated",
            r.test_id,
            r.url,
            r.number,
            r.owners,
            r.hits,
            (r.failures / r.runs if r.runs else None) if with_history else None,
            repository,
        )
        for r in results
        if "escalated" in r.actions
    ]
    if not (url and messages):
        return
    until = time.monotonic() + config.issues_deadline
    for problem in notify.send(url, messages, lambda: until - time.monotonic()):
        runtime.warn(problem, "flakewarden reevaluate")


def run_reevaluate(args: argparse.Namespace, client: Optional[Any] = None) -> int:
    config = load(args.config, Path.cwd())
    repository = require_repository(args.repository)
    scores, window = None, ""
    if args.history is not None:
        selection, scores = load_scores(args.history, args, config, with_previous=True)
        window = selection.info.describe()
    sys.stdout.write(_evidence_line(args, window))
    from flakewarden.issues.records import RunContext
    from flakewarden.issues.tracker import FlakeTracker
    from flakewarden.quarantine.reevaluation import reevaluate

    with github_client(args.token, client=client) as github:
        results = reevaluate(
            FlakeTracker(github, repository),
            config.quarantine_policy,
            RunContext.from_env(),
            _now(),
            scores,
            window,
        )
    _notify_escalations(config, repository, results, scores is not None)
    counted = "runs in the history window" if scores is not None else "recent runs"
    for result in results:
        done = ", ".join(result.actions) or "no change"
        rose = f" ({one_line(result.rose)})" if result.rose else ""
        sys.stdout.write(
            f"flakewarden: {one_line(result.test_id)} (#{result.number}): "
            f"{result.failures} failures in {result.runs} {counted}{rose}: {done}\n"
        )
    sys.stdout.write(f"flakewarden: {plural(len(results), 'quarantined test')} reevaluated\n")
    return int(ExitCode.OK)
