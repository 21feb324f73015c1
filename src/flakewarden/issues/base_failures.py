"""Main's breakage, told where it is tracked: a pull request's failure that fails on the base too.

When a pull request's run finds that a test which failed every attempt fails on the merge
base as well (``tests[].base.verdict == "fails"``, from ``flakewarden run --check-base``),
the test's open flake issue (filed from the base branch's own runs) gets one comment that
links the run: the failure is the base branch's, not the pull request's.

One comment per issue and workflow run, found again by a hidden marker line naming the run
and edited in place (a retried step, every job of a matrix, a re-run attempt); a comment
by anyone but a bot that copies the marker is never edited. A test without an open issue
gets none: an issue is never opened for it, since a test that fails every attempt is not
a flake, and nothing is counted as a hit.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from flakewarden.errors import GitHubError
from flakewarden.github.api import GitHubClient, cap_body
from flakewarden.issues.kept_comment import by_bot, keep
from flakewarden.issues.records import LABEL, FlakeIssue, issues_for
from flakewarden.issues.tracker import FlakeTracker, is_final
from flakewarden.model import RunReport, TestResult
from flakewarden.outside_json import parse_json
from flakewarden.reports import markdown as md

PREFIX = "<!-- flakewarden-base-fails: "
_LINE = re.compile(r"^<!-- flakewarden-base-fails: (\{.*\}) -->$", re.MULTILINE)
_SHA = re.compile(r"[0-9a-f]{7,64}")
KEY_LIMIT = 100


@dataclasses.dataclass(frozen=True)
class PullRun:
    """The pull request's run whose failures are told: what the comment says and keys on."""

    pr: int
    key: str  # the workflow run's id (shared by its jobs and attempts), else the report's uid
    run_url: str = ""  # the run (its attempt, after the first), for the link
    run_label: str = ""  # ``run 4242``
    base_branch: str = ""  # the pull request's base branch, e.g. ``main``


@dataclasses.dataclass
class Told:
    """What happened on one test's issue."""

    test_id: str
    action: str  # created, updated, unchanged
    number: int
    url: str


@dataclasses.dataclass
class TellingResult:
    told: list[Told] = dataclasses.field(default_factory=list)
    no_issue: list[str] = dataclasses.field(default_factory=list)  # no open flake issue
    errors: list[str] = dataclasses.field(default_factory=list)
    not_told: list[str] = dataclasses.field(default_factory=list)

    def warning(self, total: int) -> str:
        """One line that says what failed, or ``""``."""
        if not self.errors:
            return ""
        more = f" (and {len(self.errors) - 1} more errors)" if len(self.errors) > 1 else ""
        return (
            f"flake issues not told for {len(self.not_told)} of {total} tests failing on the "
            f"base too: {self.errors[0]}{more}"
        )


def failing_on_base(report: RunReport) -> list[TestResult]:
    """The tests whose run on the merge base failed too (``--check-base``)."""
    return [t for t in report.tests if t.base is not None and t.base.verdict == "fails"]


def marker_line(key: str) -> str:
    """The hidden first line naming the run; no key can end the comment early or mention."""
    text = json.dumps({"run": key[:KEY_LIMIT]}, ensure_ascii=True)
    for char in "<>&@":
        text = text.replace(char, f"\\u{ord(char):04x}")
    return PREFIX + text + " -->"


def run_of(body: Any) -> Optional[str]:
    """The run a comment body's marker line names, or None."""
    for match in _LINE.finditer(body if isinstance(body, str) else ""):
        try:
            data = parse_json(match.group(1), "the comment's marker")
        except (ValueError, RecursionError):
            continue
        if isinstance(data, dict) and isinstance(data.get("run"), str):
            return str(data["run"])
    return None


def _ours(comment: Mapping[str, Any], key: str) -> bool:
    return by_bot(comment) and run_of(comment.get("body")) == key[:KEY_LIMIT]


def comment_text(test: TestResult, run: PullRun) -> str:
    """The comment: the run, the pull request, the merge base, and what failed; escaped."""
    where = md.link(run.run_label or "this run", run.run_url) if run.run_url else "a local run"
    commit = test.base.commit if test.base is not None else ""
    base = f" {md.code(commit[:12])}" if _SHA.fullmatch(commit) else ""
    broken = md.escape(run.base_branch) if run.base_branch else "the base branch"
    lines = [
        marker_line(run.key),
        f"Failed on every attempt in {where} for pull request #{run.pr}, and fails on its "
        f"merge base{base} too: {broken} is broken here, not the pull request.",
    ]
    first = test.first_failure
    if first is not None and first.message:
        lines += ["", f"First line: {md.code(md.clip(first.message, 300))}"]
    if test.base is not None and test.base.why:
        lines += ["", f"On the base: {md.escape(md.clip(test.base.why, 300))}."]
    lines += [
        "",
        "<sub>Not counted as a hit: a test that fails every attempt is broken, not flaky. "
        "flakewarden edits this comment in place when the same run reports again.</sub>",
    ]
    return cap_body("\n".join(lines) + "\n")


def _open_issue(index: Mapping[str, list[FlakeIssue]], test_id: str) -> Optional[FlakeIssue]:
    """The test's open flake issue: the oldest, when a crashed job left a duplicate."""
    found = [i for i in issues_for(index, test_id) if i.state == "open"]
    return found[0] if found else None


def tell(
    client: GitHubClient, repository: str, tests: Iterable[TestResult], run: PullRun
) -> TellingResult:
    """Comment once per run on each test's open flake issue; never raises ``GitHubError``."""
    tests = list(tests)
    result = TellingResult()
    tracker = FlakeTracker(client, repository)
    try:
        index = tracker.index(state="open")
    except GitHubError as exc:
        result.errors.append(f"listing open {LABEL} issues: {exc}")
        result.not_told = [t.id for t in tests]
        return result
    for position, test in enumerate(tests):
        issue = _open_issue(index, test.id)
        if issue is None:
            result.no_issue.append(test.id)
            continue
        try:
            posted = keep(
                client,
                repository,
                issue.number,
                comment_text(test, run),
                lambda c: _ours(c, run.key),
            )
        except GitHubError as exc:
            result.errors.append(f"#{issue.number} ({test.id}): {exc}")
            result.not_told.append(test.id)
            if is_final(exc):
                result.not_told += [t.id for t in tests[position + 1 :]]
                break
            continue
        result.told.append(Told(test.id, posted.action, issue.number, issue.html_url))
    return result
