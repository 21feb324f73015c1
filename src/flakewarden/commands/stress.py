"""``flakewarden stress TEST_ID [options] -- <test command>``: a verdict with evidence."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional

from flakewarden.actions.runtime import format_command
from flakewarden.commands.argtypes import number, whole_number
from flakewarden.commands.github_access import add_github_options, fail_open_access, warn
from flakewarden.console import complain, one_line
from flakewarden.errors import ReportMissing, UsageError
from flakewarden.github.api import GitHubClient
from flakewarden.issues.records import RunContext
from flakewarden.issues.tracker import FlakeTracker
from flakewarden.model import ExitCode
from flakewarden.model.verdicts import ERROR, RACE
from flakewarden.reports import markdown as md
from flakewarden.reports.annotations import WARNING, Annotation
from flakewarden.runner.process import Interrupted
from flakewarden.stress.engine import StressOptions, run_phases
from flakewarden.stress.sequential import MARGIN, RELATIVE_MARGIN, Margin
from flakewarden.stress.verdict import Verdict, read_verdict
from flakewarden.stress.verdict_merge import merge_verdicts
from flakewarden.stress.verdict_render import text_chart, write_verdict

HELP = "stress-run one test and record a verdict with evidence (race, flaky, ...)"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "stress",
        help=HELP,
        description=f"{HELP.capitalize()}. Put the test command after --, e.g. "
        "flakewarden stress tests/test_x.py::test_y -- python -m pytest",
    )
    parser.add_argument("test_id", nargs="?", metavar="TEST_ID", help="the pytest node id")
    parser.add_argument(
        "--runs",
        type=whole_number(1),
        default=None,
        help="at most this many runs per timing arm (default: no cap; the evidence or the "
        "budget ends sampling)",
    )
    parser.add_argument(
        "--budget-seconds",
        type=number(0, low_open=True, what="seconds"),
        default=600.0,
        help="start no round that would end past this (default 600); an open question "
        "at the end is inconclusive",
    )
    parser.add_argument(
        "--margin",
        type=number(0, 100, low_open=True, what="percentage points"),
        default=100 * MARGIN,
        help="largest increase in the failure rate, in percentage points, that a knob may "
        f"still hide for flaky or not-reproducible to allow quarantine (default {100 * MARGIN:g})",
    )
    parser.add_argument(
        "--relative-margin",
        type=number(0, 1000, what="percent"),
        default=100 * RELATIVE_MARGIN,
        help="... or this percentage of the baseline's own failure rate, when larger "
        f"(default {100 * RELATIVE_MARGIN:g})",
    )
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=Path("flakewarden-stress"),
        help="where verdict.json, verdict.md and the raw runs go (default flakewarden-stress/)",
    )
    parser.add_argument(
        "--order-from",
        type=Path,
        metavar="REPORT_JSON",
        help="a flakewarden report.json whose run order (and, for a failure there that the "
        "order does not reproduce, the collection) is replayed to find a polluter",
    )
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        metavar="DIR",
        help="merge the verdict directories of several shards into one verdict (no runs)",
    )
    parser.add_argument(
        "--expect-shards",
        type=whole_number(1),
        default=None,
        metavar="N",
        help="with --merge: fail unless exactly N shard directories are given "
        "(a shard that did not finish is missing evidence)",
    )
    parser.add_argument(
        "--comment",
        action="store_true",
        help="comment the verdict on the test's flake issue and record it in the issue's "
        "marker (verdict, verdict_at, verdict_url); never changes the exit code",
    )
    add_github_options(parser)
    parser.set_defaults(handler=handle)


def _say(message: str) -> None:
    complain(message, "flakewarden stress")


def _show(verdict: Verdict, report_dir: Path) -> None:
    allowed = "allowed" if verdict.quarantine_allowed else "refused"
    print(f"{one_line(verdict.test_id)}: {verdict.verdict} (quarantine {allowed})")
    print(f"  {one_line(verdict.reason)}")
    print(f"  rule: {one_line(verdict.rule)}")
    for suspect in verdict.suspects[:3]:
        print(
            f"  where: {one_line(suspect.location)} ({suspect.score:.2f}) "
            f"{one_line(suspect.text)}: {one_line(suspect.evidence)}"
        )
    print(f"  evidence: {report_dir / 'verdict.md'}")
    entry = verdict.known_race_entry()
    if verdict.verdict == RACE and entry:
        print("  add this entry to the known-race-patterns list:")
        for line in entry.splitlines():
            print(f"    {one_line(line)}")


def check_shard_count(directories: list[Path], expected: Optional[int]) -> None:
    """A merge over fewer runners than were asked for is not the verdict that was asked for."""
    got = len(directories)
    if expected is not None and got != expected:
        raise ReportMissing(
            f"--merge got {got} shard director{'y' if got == 1 else 'ies'}"
            f" but {expected} runners were asked for: a shard that did not finish is missing "
            "evidence; rerun the failed shard jobs (no verdict written)"
        )


def handle(args: argparse.Namespace) -> int:
    report_dir: Path = args.report_dir
    if args.merge:
        if args.test_command:
            raise UsageError("--merge reads shard directories; it takes no test command")
        check_shard_count(args.merge, args.expect_shards)
        shards = [read_verdict(directory) for directory in args.merge]
        if args.test_id and any(s.test_id != args.test_id for s in shards):
            raise UsageError(f"the shards are not all verdicts for {args.test_id}")
        verdict = merge_verdicts(shards, [str(d) for d in args.merge])
    else:
        if args.expect_shards is not None:
            raise UsageError("--expect-shards goes with --merge")
        if not args.test_id:
            raise UsageError(
                "give the test's node id, e.g. "
                "flakewarden stress tests/test_x.py::test_y -- python -m pytest"
            )
        if not args.test_command:
            raise UsageError(
                "no test command: put it after --, e.g. flakewarden stress "
                f"{args.test_id} -- python -m pytest"
            )
        if args.order_from is not None and not args.order_from.is_file():
            raise UsageError(f"--order-from: no such file: {args.order_from}")
        options = StressOptions(
            test_id=args.test_id,
            command=list(args.test_command),
            cwd=Path(os.getcwd()),
            report_dir=report_dir.resolve(),
            runs=args.runs,
            budget_seconds=args.budget_seconds,
            order_from=args.order_from,
            margin=Margin(args.margin / 100, args.relative_margin / 100),
        )
        try:
            verdict = run_phases(options, say=_say)
        except Interrupted:
            _say("interrupted: no verdict")
            return int(ExitCode.INTERRUPTED)
    write_verdict(verdict, report_dir)
    _show(verdict, report_dir)
    annotate_where(verdict)
    if args.comment:
        comment_verdict(verdict, args.token, args.repository)
    return int(ExitCode.INTERNAL_ERROR if verdict.verdict == ERROR else ExitCode.OK)


def workspace_path(verdict: Verdict, file: str) -> Optional[str]:
    """A suspect's file relative to the checkout (``GITHUB_WORKSPACE``, else the cwd)."""
    rootdir = str(verdict.where.get("rootdir") or "")
    base = os.environ.get("GITHUB_WORKSPACE") or os.getcwd()
    path = os.path.normpath(os.path.join(rootdir or base, file))
    relative = os.path.relpath(path, base)
    return None if relative.startswith("..") else relative.replace(os.sep, "/")


def annotate_where(verdict: Verdict) -> None:
    """On GitHub Actions, the verdict's annotation on the first suspect line: where the fix goes."""
    suspects = verdict.suspects
    if os.environ.get("GITHUB_ACTIONS") != "true" or not suspects:
        return
    first = suspects[0]
    path = workspace_path(verdict, first.file)
    message = f"{verdict.test_id}: {verdict.verdict}: {first.evidence}. {verdict.reason}"
    title = f"flakewarden stress: {verdict.verdict}"
    annotation = Annotation(WARNING, title, message[:4000], path, first.line if path else None)
    sys.stdout.write(format_command(annotation) + "\n")
    sys.stdout.flush()


def where_lines(verdict: Verdict, blob: str) -> list[str]:
    """The first three suspects, each a permalink at the stressed commit when ``blob`` is set."""
    out = []
    for suspect in verdict.suspects[:3]:
        path = workspace_path(verdict, suspect.file)
        place = md.code(suspect.location)
        if blob and path:
            place = md.link(f"{path}:{suspect.line}", f"{blob}/{path}#L{suspect.line}")
        out.append(
            f"- {place}: {md.code(suspect.text)} ({suspect.score:.2f}): "
            f"{md.escape(suspect.evidence)}"
        )
    return out


def verdict_comment(verdict: Verdict, link: str, blob: str = "") -> str:
    allowed = "allowed" if verdict.quarantine_allowed else "refused"
    lines = [
        f"**flakewarden stress verdict: {md.code(verdict.verdict)}** (quarantine {allowed})",
        "",
        md.escape(verdict.reason),
        "",
    ]
    where = where_lines(verdict, blob)
    if where:
        lines += ["Where to look:", "", *where, ""]
    lines += [
        f"Rule: {md.escape(verdict.rule)}",
        "",
        md.code_block(text_chart(verdict.arms)),
    ]
    knobs = verdict.power.get("knobs")
    if isinstance(knobs, dict) and knobs:
        lines += ["", "What the runs rule out (90% probability of seeing a larger effect):", ""]
        lines += [
            f"- {md.escape(str(knob))}: {md.escape(str(row.get('state', '')))}; "
            f"{md.escape(str(row.get('statement', '')))}"
            for knob, row in knobs.items()
            if isinstance(row, dict)
        ]
    entry = verdict.known_race_entry(link)
    if entry:
        lines += ["", "Known race pattern to record:", "", md.code_block(entry.rstrip(), "yaml")]
    if link:
        lines += ["", f"Evidence (verdict.md, verdict.json): {link}"]
    return "\n".join(lines)


def verdict_bound(verdict: Verdict) -> Optional[dict[str, object]]:
    """What the marker keeps of the verdict's power, for the quarantine policy to compare."""
    power = verdict.power
    if "max_increase" not in power:
        return None
    baseline = power.get("baseline") or {}
    runs = int(baseline.get("runs") or 0)
    failures = int(baseline.get("failures") or 0)
    return {
        "met": verdict.bounded,
        "max_increase": float(power["max_increase"]),
        "baseline_rate": failures / runs if runs else 0.0,
    }


def comment_verdict(
    verdict: Verdict,
    token: Optional[str],
    repository: Optional[str],
    client: Optional[GitHubClient] = None,
) -> bool:
    """Comment on the test's flake issue and record the verdict in its marker; fail-open."""
    ctx = RunContext.from_env()
    access = fail_open_access(
        repository or ctx.repository,
        token,
        lambda why: warn(f"verdict not commented: {why}"),
        client=client,
    )
    if access is None:
        return False
    repository, client = access
    try:
        tracker = FlakeTracker(client, repository)
        issues = tracker.index().get(verdict.test_id, [])
        if not issues:
            warn(f"verdict not commented: no flake issue for {verdict.test_id}")
            return False
        issue = next((i for i in issues if i.state == "open"), issues[0])
        link = ctx.run_url
        blob = f"{ctx.server_url}/{repository}/blob/{ctx.sha}" if ctx.sha else ""
        tracker.comment(issue.number, verdict_comment(verdict, link, blob))
        marker = dict(issue.marker)
        marker.update(
            verdict=verdict.verdict,
            verdict_at=verdict.finished_at,
            verdict_url=link,
            verdict_knob=verdict.knob,
            verdict_quarantine_allowed=verdict.quarantine_allowed,
            verdict_bound=verdict_bound(verdict),
            verdict_where=[s.location for s in verdict.suspects[:3]],
        )
        tracker.update(issue, marker)
    except Exception as exc:  # fail-open: bookkeeping never changes the verdict's exit code
        warn(f"verdict not commented: {type(exc).__name__}: {exc}")
        return False
    finally:
        client.close()
    sys.stdout.write(f"flakewarden: verdict commented on #{issue.number} {issue.html_url}\n")
    return True
