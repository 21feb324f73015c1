"""One issue per storm: a cause that failed many tests in one run is one thing to fix.

A database that refused thirty tests' connections would open thirty test issues with the
same traceback and notify thirty owners. A cause that hit at least ``causes.storm_tests``
tests in a run files or updates one cause issue instead (``flake cause: <signature>``,
labels ``flaky-test`` and ``flake-cause``), with the marker and the exact hit counting of a
test issue (``hit_ledger``: one hit per run, whichever shards, jobs and re-published
reports saw it), listing its tests and linking their own issues; those are neither opened
for that run nor closed. A test that flakes alone with another cause gets its own issue.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, NamedTuple

from flakewarden.errors import GitHubError
from flakewarden.github.api import GitHubClient
from flakewarden.issues.hit_ledger import Checkpoint, Evidence, Tally, record
from flakewarden.issues.marker import format_marker
from flakewarden.issues.merge import dedup, forward
from flakewarden.issues.records import (
    Filed,
    FilingResult,
    FlakeIssue,
    RunContext,
    iso,
    issues_for,
)
from flakewarden.issues.tracker import FlakeTracker, ensure_label, is_final
from flakewarden.model import RunReport, TestResult
from flakewarden.model.causes import Cause
from flakewarden.reports import markdown as md

CAUSE_LABEL = "flake-cause"
CAUSE_COLOR = "c5def5"
CAUSE_DESCRIPTION = "One cause that failed many tests at once; tracked by flakewarden"
TITLE_PREFIX = "flake cause: "
TITLE_LIMIT = 256
#: Tests named in an issue's text and marker.
TESTS_SHOWN = 100


class Storm(NamedTuple):
    """A cause that hit at least the storm threshold of tests, and its flaky tests."""

    cause: Cause
    tests: tuple[TestResult, ...]

    @property
    def key(self) -> str:
        """The key its issue is indexed under: never a test id's (``model.id_key``)."""
        return "cause:" + self.cause.id


def storms(report: RunReport, flaky: Sequence[TestResult], threshold: int) -> list[Storm]:
    """The run's storms; a flaky test belongs to one when every failure it had was a storm's.

    A cause of the environment's is filed as one whatever the number of tests it hit: no
    test's own issue counts a hit toward its quarantine for its database's outage. A test
    that also failed with a cause of its own is left to its own issue.
    """
    wide = {c.id: c for c in report.causes if len(c.tests) >= threshold or c.environment}
    if not wide:
        return []
    members: dict[str, list[TestResult]] = {}
    for test in flaky:
        causes = {a.signature for a in test.failures if a.signature is not None}
        ids = {c.id for c in wide.values() if c.signature in causes}
        if causes and len(ids) == len(causes):
            first = next(c for c in wide.values() if c.signature == test.failures[0].signature)
            members.setdefault(first.id, []).append(test)
    return [Storm(wide[i], tuple(tests)) for i, tests in members.items()]


def title_for(cause: Cause) -> str:
    title = TITLE_PREFIX + " ".join(cause.signature.key.split())
    return title if len(title) <= TITLE_LIMIT else title[: TITLE_LIMIT - 1] + "…"


def _tests_list(storm: Storm, linked: Mapping[str, int]) -> list[str]:
    lines = []
    for test in storm.tests[:TESTS_SHOWN]:
        own = f" (its own issue: #{linked[test.id]})" if test.id in linked else ""
        lines.append(f"- {md.code(md.clip(test.id, 300))}{own}")
    if len(storm.tests) > TESTS_SHOWN:
        lines.append(f"- …and {len(storm.tests) - TESTS_SHOWN} more, in report.json")
    return lines


def _said(storm: Storm) -> str:
    sig = storm.cause.signature
    where = f" in {md.code(sig.frame)}" if sig.frame else ""
    what = "the environment" if storm.cause.environment else "one cause"
    return (
        f"{len(storm.tests)} tests failed with {md.code(md.clip(sig.exception, 100))}: "
        f"{md.code(md.clip(sig.message, 300))}{where}, then passed on a rerun: {what}, "
        "not each test."
    )


def _body(storm: Storm, ctx: RunContext, marker: dict[str, Any], linked: Mapping[str, int]) -> str:
    environment = (
        [
            f"This is the environment's (it matches {md.code(storm.cause.environment)}): the "
            "tests did nothing wrong, and their flake rates do not count it.",
            "",
        ]
        if storm.cause.environment
        else []
    )
    return "\n".join(
        [
            format_marker(marker),
            f"### A storm: {md.code(md.clip(storm.cause.signature.key, 300))}",
            "",
            f"In {ctx.describe()}, {_said(storm)}",
            "",
            *environment,
            "Tests it hit (their own issues are not opened for a storm, only linked here):",
            "",
            *_tests_list(storm, linked),
            "",
            "### Investigation",
            "",
            "_Notes go here. flakewarden never edits this text: it only rewrites the hidden "
            "marker line at the top._",
            "",
            "---",
            "<sub>Filed by flakewarden. Each run the cause hits adds a comment and counts a "
            "hit. Close this issue when a fix lands; if the cause strikes again it is "
            "reopened.</sub>",
            "",
        ]
    )


def _comment(storm: Storm, ctx: RunContext, linked: Mapping[str, int], tally: Tally) -> str:
    return "\n".join(
        [
            f"Struck again in {ctx.describe()}: {_said(storm)} Hits so far: **{tally.hits}**.",
            "",
            *_tests_list(storm, linked),
            "",
        ]
    )


def file_storms(
    client: GitHubClient,
    repository: str,
    found: Sequence[Storm],
    ctx: RunContext,
    evidence: Mapping[str, Evidence],
    now: dt.datetime,
) -> FilingResult:
    """File or update one issue per storm; never raises ``GitHubError``.

    ``evidence``: the run each test was seen in (``RunReport.evidence_key``); a storm's
    hits are the runs its tests were seen in. A test's own open issue is linked from it.
    """
    tracker = FlakeTracker(client, repository)
    result = FilingResult()
    try:
        index = tracker.index()
        ensure_label(client, repository, CAUSE_LABEL, CAUSE_COLOR, CAUSE_DESCRIPTION)
    except GitHubError as exc:
        result.errors.append(f"listing flake issues: {exc}")
        result.not_filed = [t.id for s in found for t in s.tests]
        return result
    linked = {
        test.id: own[0].number
        for storm in found
        for test in storm.tests
        if (own := [i for i in issues_for(index, test.id) if i.state == "open"])
    }
    created: dict[str, tuple[str, FlakeIssue]] = {}
    stamp = iso(now)
    for storm in found:
        seen = [evidence[t.id] for t in storm.tests if t.id in evidence]
        keys = {e.key: 1 for e in seen}
        not_before = min((e.not_before for e in seen), default="")
        name = f"cause {storm.cause.id}"
        try:
            known = [i for i in index.get(storm.key, []) if "duplicate_of" not in i.marker]
            if not known:
                marker = {
                    "id": storm.key,
                    "cause": storm.cause.signature.key[:300],
                    "environment": bool(storm.cause.environment),
                    "hits": 1,
                    "first": stamp,
                    "last": stamp,
                    "origin": sorted(keys)[0],
                    "tests": [t.id for t in storm.tests[:TESTS_SHOWN]],
                    "ledger": Checkpoint(None, 0).to_json(),
                }
                body = _body(storm, ctx, marker, linked)
                issue = tracker.create(title_for(storm.cause), body, [CAUSE_LABEL])
                issue.marker = marker
                created[storm.key] = (name, issue)
                if len(keys) > 1:  # a merged report: the other shards' runs are hits too
                    issue = tracker.get(issue.number)
                    rest = {k: 1 for k in sorted(keys)[1:]}
                    text = partial(_comment, storm, ctx, linked)
                    issue, hits, _ = record(tracker, issue, rest, text, not_before)
                    result.filed.append(Filed(name, "created", issue.number, issue.html_url, hits))
                else:
                    result.filed.append(Filed(name, "created", issue.number, issue.html_url, 1))
                continue
            open_issues = [i for i in known if i.state == "open"]
            reopen = not open_issues
            issue = tracker.get((open_issues or known)[0].number)

            def change(marker: dict[str, Any], storm: Storm = storm) -> None:
                marker["last"] = stamp
                tests = [t for t in marker.get("tests", []) if isinstance(t, str)]
                marker["tests"] = list(dict.fromkeys([*tests, *(t.id for t in storm.tests)]))[
                    :TESTS_SHOWN
                ]

            fields: dict[str, Any] = {"state": "open", "state_reason": "reopened"} if reopen else {}
            issue, hits, new = record(
                tracker,
                issue,
                keys,
                partial(_comment, storm, ctx, linked),
                not_before,
                change,
                **fields,
            )
            issue, hits = forward(tracker, issue, hits, keys)
            action = ("reopened" if reopen else "recurred") if new else "counted"
            result.filed.append(Filed(name, action, issue.number, issue.html_url, hits))
        except GitHubError as exc:
            result.errors.append(f"{name}: {exc}")
            result.not_filed += [t.id for t in storm.tests]
            if is_final(exc):
                break
    if created:
        try:
            dedup(tracker, created, ctx, now, result.filed)
        except GitHubError as exc:
            result.errors.append(f"checking for duplicate cause issues: {exc}")
    result.errors += tracker.notes
    return result
