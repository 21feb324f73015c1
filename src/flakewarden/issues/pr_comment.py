"""One comment per pull request, edited in place on every run: its flaky and failed tests.

The comment is found again by a hidden marker line naming it (``name``: one per
workflow or report), written by a bot; a comment by anyone else that copies the
marker is never edited. A run with nothing to say edits an existing comment to
say so, and creates none. Two jobs creating the comment at once are reconciled:
after creating, the comments are listed again and the oldest is kept, the rest
deleted. Everything shown comes from the code under test, so it goes through
``markdown``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Optional

from flakewarden.errors import UsageError
from flakewarden.github.api import GitHubClient, cap_body
from flakewarden.issues.kept_comment import Posted, by_bot, keep
from flakewarden.issues.records import RunContext
from flakewarden.model import Outcome, RunReport, TestResult
from flakewarden.outside_json import parse_json
from flakewarden.reports import markdown as md

PREFIX = "<!-- flakewarden-pr-comment: "
_LINE = re.compile(r"^<!-- flakewarden-pr-comment: (\{.*\}) -->$", re.MULTILINE)
ROWS = 30  # per table; the rest is counted
NAME_LIMIT = 100


def describe(posted: Posted) -> str:
    """What happened, as the line "flakewarden: <this> pull request #N" says it."""
    return {
        "created": "created the comment on",
        "updated": "updated the comment on",
        "unchanged": "the comment is up to date on",
        "skipped": "nothing to say, and no comment yet, on",
    }[posted.action]


def check_name(name: str) -> None:
    """``UsageError`` unless ``name`` can name a comment: 1 to 100 printable characters."""
    if not (name.strip() and name.isprintable() and len(name) <= NAME_LIMIT):
        raise UsageError("--name must be 1 to 100 printable characters, not only spaces")


def marker_line(name: str) -> str:
    text = json.dumps({"name": name[:NAME_LIMIT]}, ensure_ascii=True)
    for char in "<>&@":  # no name can end the comment early or mention anyone
        text = text.replace(char, f"\\u{ord(char):04x}")
    return PREFIX + text + " -->"


def name_of(body: Any) -> Optional[str]:
    for match in _LINE.finditer(body if isinstance(body, str) else ""):
        try:
            data = parse_json(match.group(1), "the comment's marker")
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            return str(data["name"])
    return None


def _ours(comment: Mapping[str, Any], name: str) -> bool:
    return by_bot(comment) and name_of(comment.get("body")) == name[:NAME_LIMIT]


def _test_link(test: TestResult, ctx: RunContext) -> str:
    shown = md.table_code(md.clip(test.id, 300))
    if not (test.file and ctx.sha and ctx.repository) or test.file.startswith(("/", "..")):
        return shown
    anchor = f"#L{test.line}" if test.line else ""
    url = f"{ctx.server_url}/{ctx.repository}/blob/{ctx.sha}/{test.file}{anchor}"
    return f"{shown} ({md.link('source', url)})"


def _table(title: str, tests: list[TestResult], ctx: RunContext) -> list[str]:
    if not tests:
        return []
    lines = [
        f"**{title}** ({len(tests)})",
        "",
        "| Test | Failed attempts | First line |",
        "| --- | --- | --- |",
    ]
    for test in tests[:ROWS]:
        first = test.first_failure
        message = md.escape(md.clip(first.message, 200)) if first and first.message else ""
        lines.append(
            f"| {_test_link(test, ctx)} | {len(test.failures)} of {len(test.attempts)} "
            f"| {message} |"
        )
    if len(tests) > ROWS:
        lines.append(f"| … and {len(tests) - ROWS} more: see the run's summary | | |")
    return [*lines, ""]


def render(report: RunReport, ctx: RunContext, name: str) -> str:
    """The comment's body for ``report``: a headline, the failed and flaky tests, links."""
    totals = report.totals
    failed = report.with_outcome(Outcome.FAILED, Outcome.ERROR)
    flaky = report.with_outcome(Outcome.FLAKY)
    quarantined = report.with_outcome(Outcome.QUARANTINED)
    if failed or flaky:
        head = f"{len(failed)} failed, {len(flaky)} flaky of {totals.tests:,} tests"
    else:
        head = f"no failed or flaky tests among {totals.tests:,}"
    parts = [marker_line(name), f"### flakewarden: {head}", "", f"In {ctx.describe()}.", ""]
    parts += _table("Failed", failed, ctx)
    parts += _table("Flaky: failed, then passed on a rerun", flaky, ctx)
    if quarantined:
        parts += [
            f"{len(quarantined)} quarantined test(s) failed and did not gate this run; "
            "their issues track them.",
            "",
        ]
    if report.cutoff:
        parts += ["More tests failed than the cutoff allows: none was rerun.", ""]
    parts.append(
        "<sub>This comment is edited in place on every run; flaky tests are real "
        "failures that a rerun hid, and each has its own issue on the default branch.</sub>"
    )
    return cap_body("\n".join(parts) + "\n")


def post(
    client: GitHubClient,
    repository: str,
    pr: int,
    report: RunReport,
    ctx: RunContext,
    name: str = "flakewarden",
) -> Posted:
    """Create or edit the pull request's one flakewarden comment; raises ``GitHubError``."""
    body = render(report, ctx, name)
    quiet = not (report.with_outcome(Outcome.FAILED, Outcome.ERROR, Outcome.FLAKY))
    return keep(client, repository, pr, body, lambda c: _ours(c, name), create=not quiet)
