"""``flakewarden verify-fix``: a closed flake issue counts as fixed only once the test is
shown to pass under stress.

It runs the stress check (``flakewarden stress``'s engine, within ``--budget-seconds``,
default 300) on the checkout, then records what it found on the test's issue:

- any failure under any arm: the fix did not hold; the issue is reopened with the
  verdict and its evidence (exit 1);
- no failure, and a verdict that ruled something out: the fix held; a comment gives the
  runs and the bound on the failure rate, the marker records ``verified_at`` (exit 0);
- inconclusive: it proves nothing either way; the issue stays closed, a comment says the
  fix is unverified and why, the marker records it, the digest lists it (exit 0).

An issue closed as not planned is left alone. In a workflow the test runs and the
GitHub write are two steps, so no process that runs the project's code holds the token:
``--no-github`` runs and judges only; ``--from-verdict DIR`` records a verdict already made.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

from flakewarden.commands.argtypes import number, whole_number
from flakewarden.commands.github_access import add_github_options, require_repository
from flakewarden.console import complain, one_line
from flakewarden.errors import GitHubError, UsageError
from flakewarden.github.api import GitHubClient
from flakewarden.issues.fix_record import checkable, record
from flakewarden.issues.marker import key_for, scan
from flakewarden.issues.records import LABEL, FlakeIssue, RunContext, iso
from flakewarden.issues.tracker import FlakeTracker
from flakewarden.model import ExitCode
from flakewarden.reports import markdown as md
from flakewarden.runner.process import Interrupted
from flakewarden.stress.engine import StressOptions, run_phases
from flakewarden.stress.fix_check import FAILED, HELD, FixCheck, judge
from flakewarden.stress.sequential import MARGIN, RELATIVE_MARGIN, Margin
from flakewarden.stress.verdict import Verdict, read_verdict
from flakewarden.stress.verdict_render import text_chart, write_verdict

DEFAULT_BUDGET = 300.0
TOKENS = ("GITHUB_TOKEN", "GH_TOKEN", "FLAKEWARDEN_GITHUB_TOKEN")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "verify-fix",
        help="stress a closed flake's test; reopen its issue if the fix did not hold",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument("test_id", nargs="?", metavar="TEST_ID", help="the pytest node id")
    parser.add_argument("--issue", type=whole_number(1), metavar="N", help="the flake issue")
    parser.add_argument(
        "--from-event",
        action="store_true",
        help="the issue of this workflow's issues event (GITHUB_EVENT_PATH); no request",
    )
    parser.add_argument(
        "--budget-seconds",
        type=number(0, low_open=True, what="seconds"),
        default=DEFAULT_BUDGET,
        help=f"the stress check's budget (default {DEFAULT_BUDGET:g})",
    )
    parser.add_argument("--runs", type=whole_number(1), default=None, help="cap per arm")
    parser.add_argument(
        "--margin",
        type=number(0, 100, low_open=True, what="percentage points"),
        default=100 * MARGIN,
        help="the increase in the failure rate a knob may still hide for the check to count "
        f"as held (default {100 * MARGIN:g}, as flakewarden stress)",
    )
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=Path("flakewarden-fix-check"),
        help="where the verdict goes (default flakewarden-fix-check/)",
    )
    parser.add_argument(
        "--from-verdict",
        type=Path,
        metavar="DIR",
        help="record the verdict in DIR (from --no-github or flakewarden stress); no runs",
    )
    parser.add_argument(
        "--no-github",
        action="store_true",
        help="run and judge only: nothing is read from or written to GitHub",
    )
    add_github_options(parser, "repository of the flake issue")
    parser.set_defaults(handler=run)


def _say(message: str) -> None:
    complain(message, "flakewarden verify-fix")


def event_issue(env: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """The issue of this workflow run's ``issues`` event."""
    env = dict(os.environ) if env is None else env
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        raise UsageError("--from-event: GITHUB_EVENT_PATH is not set (not a workflow run)")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--from-event: cannot read the event payload: {exc}") from None
    issue = data.get("issue") if isinstance(data, dict) else None
    if not isinstance(issue, dict) or not isinstance(issue.get("number"), int):
        raise UsageError("--from-event: the event is not an issue's")
    return issue


def _skip_reason(data: dict[str, Any]) -> str:
    labels = {lb.get("name") for lb in data.get("labels") or [] if isinstance(lb, dict)}
    if LABEL not in labels:
        return f"it is not labelled {LABEL}"
    return checkable(data)


def _test_id_of(data: dict[str, Any]) -> str:
    found = scan(data.get("body"))
    if found.data is None or found.problem:
        raise UsageError(f"issue #{data.get('number')}: no sound flakewarden marker to read")
    test_id = found.data.get("id")
    if not isinstance(test_id, str) or found.data.get("id_sha256"):
        raise UsageError(f"issue #{data.get('number')}: its marker holds no whole test id")
    return test_id


def _stress(test_id: str, args: argparse.Namespace) -> Verdict:
    if not args.test_command:
        raise UsageError(
            "no test command: put it after --, e.g. flakewarden verify-fix "
            f"{test_id} -- python -m pytest"
        )
    options = StressOptions(
        test_id=test_id,
        command=list(args.test_command),
        cwd=Path.cwd(),
        report_dir=args.report_dir.resolve(),
        runs=args.runs,
        budget_seconds=args.budget_seconds,
        margin=Margin(args.margin / 100, RELATIVE_MARGIN),
    )
    # The project's tests never see a token, whoever started this command.
    held = {name: os.environ.pop(name) for name in TOKENS if name in os.environ}
    try:
        verdict = run_phases(options, say=_say)
    finally:
        os.environ.update(held)
    write_verdict(verdict, args.report_dir)
    return verdict


def comment_for(check: FixCheck, verdict: Verdict, ctx: RunContext) -> str:
    where = f"commit {md.code(ctx.sha[:12])}" if ctx.sha else "this checkout"
    chart = ["", "```text", text_chart(verdict.arms), "```"] if verdict.arms else []
    link = ["", f"Evidence: {md.link('the run', ctx.run_url)}"] if ctx.run_url else []
    if check.result == FAILED:
        head = (
            f"**The fix did not hold under stress** on {where}: {md.escape(check.why)}. "
            "Reopened: a fix counts once the test passes under stress."
        )
    elif check.result == HELD:
        head = f"**Fix verified under stress** on {where}: {md.escape(check.why)}."
    else:
        head = (
            f"**Fix unverified:** the stress check on {where} proves nothing either way "
            f"({md.escape(check.why)}). The issue stays closed and the digest lists it as "
            "unverified; run `flakewarden verify-fix` with a larger `--budget-seconds`."
        )
    return "\n".join([head, *chart, *link]) + "\n"


def _find(tracker: FlakeTracker, test_id: str) -> FlakeIssue:
    issues = tracker.index().get(key_for(test_id), [])
    candidates = [i for i in issues if "duplicate_of" not in i.marker] or issues
    if not candidates:
        raise UsageError(f"no flake issue for {test_id}")
    closed = [i for i in candidates if i.state == "closed"]
    return (closed or candidates)[-1]


def run(args: argparse.Namespace, client: Optional[GitHubClient] = None) -> int:
    if sum(bool(x) for x in (args.test_id, args.issue, args.from_event)) != 1:
        raise UsageError("name the test: TEST_ID, --issue N or --from-event (exactly one)")
    if args.no_github and args.from_verdict:
        raise UsageError("--no-github runs and judges; --from-verdict records: not both")
    if args.no_github and args.issue:
        raise UsageError("--issue reads the issue from GitHub; with --no-github give TEST_ID")
    ctx = RunContext.from_env()
    repository = args.repository or ctx.repository
    data: Optional[dict[str, Any]] = event_issue() if args.from_event else None
    tracker: Optional[FlakeTracker] = None
    if not args.no_github:
        repository = require_repository(repository)
        client = client or GitHubClient.from_env(args.token)
        tracker = FlakeTracker(client, repository)
        if args.issue:
            data = client.get_json(f"/repos/{repository}/issues/{args.issue}")
    if data is not None:
        skip = _skip_reason(data)
        if skip:
            sys.stdout.write(f"flakewarden: issue #{data['number']} left alone: {skip}\n")
            return int(ExitCode.OK)
    test_id = args.test_id or _test_id_of(data or {})
    if args.from_verdict:
        verdict = read_verdict(args.from_verdict)
        if verdict.test_id != test_id:
            raise UsageError(f"{args.from_verdict} is a verdict for another test")
    else:
        try:
            verdict = _stress(test_id, args)
        except Interrupted:
            _say("interrupted: nothing recorded")
            return int(ExitCode.INTERRUPTED)
    check = judge(verdict)
    sys.stdout.write(
        f"flakewarden: {one_line(test_id)}: fix {check.result}: {one_line(check.why)}\n"
    )
    if tracker is not None:
        try:
            issue = tracker.get(int(data["number"])) if data else _find(tracker, test_id)
            record(
                tracker,
                issue,
                check.to_json(),
                comment_for(check, verdict, ctx),
                iso(dt.datetime.now(dt.timezone.utc)),
                reopen=check.result == FAILED,
            )
        except GitHubError as exc:
            raise GitHubError(f"the fix check was not recorded: {exc}") from None
        finally:
            tracker.client.close()
        what = "reopened" if check.result == FAILED else "recorded on"
        sys.stdout.write(f"flakewarden: {what} #{issue.number} {issue.html_url}\n")
    return int(ExitCode.TESTS_FAILED if check.result == FAILED else ExitCode.OK)
