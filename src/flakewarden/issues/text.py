"""The text of a flaky test's issue and of its recurrence comments.

Everything here comes from the code under test, so every piece goes through
``markdown``; a test id is shown clipped (the marker keeps the whole id, or
its digest), so a huge id can never push the marker out of the body.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from flakewarden.issues.hit_ledger import Tally, tally_of
from flakewarden.issues.marker import format_marker
from flakewarden.model import TestResult
from flakewarden.reports import blame_text
from flakewarden.reports import markdown as md

if TYPE_CHECKING:
    from flakewarden.issues.owners import Owners
    from flakewarden.issues.records import RunContext

TRACEBACK_LIMIT = 20_000
COMMENT_TRACEBACK_LIMIT = 6_000
# The most of a test id an issue shows; GitHub's body limit is 65,536 characters.
SHOWN_ID_LIMIT = 1_000


def _attempts_table(test: TestResult) -> str:
    rows = [
        "| Attempt | Outcome | Phase | Duration | First line |",
        "| --- | --- | --- | --- | --- |",
    ]
    for a in test.attempts:
        rows.append(
            f"| {a.attempt} | {a.outcome.value} | {md.escape(a.phase)} | "
            f"{a.duration:.2f} s | {md.escape(md.clip(a.message, 200))} |"
        )
    return "\n".join(rows)


def _failure_details(test: TestResult, limit: int) -> str:
    first = test.first_failure
    if first is None or not (first.longrepr or first.message):
        return ""
    text = md.clip(first.longrepr or first.message, limit)
    return (
        f"<details><summary>First failure (attempt {first.attempt})</summary>\n\n"
        f"{md.code_block(text, 'text')}\n\n</details>"
    )


def _summary(test: TestResult) -> str:
    failures = len(test.failures)
    if not failures and test.retries:
        return f"passed only after retries inside the test ({md.escape(test.retried_inside)})"
    return f"failed {failures} of {len(test.attempts)} attempts, then passed on a rerun"


def untouched_share(tally: Tally) -> str:
    """``2 of 5 hits ran none of the change they were tested with.``, or ``""``.

    Only hits judged against a pull request's change count (a hit on ``main`` has no
    change to run): that a test failed on changes it never executed is evidence its
    flakiness has nothing to do with them (DeFlaker, ICSE 2018).
    """
    if not tally.judged:
        return ""
    hits = "hit" if tally.judged == 1 else "hits"
    return (
        f"{tally.untouched} of {tally.judged} {hits} ran none of the change they were tested with."
    )


def _this_run(test: TestResult) -> str:
    """``In this run it ran none of this pull request's changes; fails on the base too.``"""
    said = blame_text.phrase(test)
    return f"In this run it {md.escape(said)}." if said else ""


def _blame(test: TestResult, tally: Tally) -> list[str]:
    found = [line for line in (_this_run(test), untouched_share(tally)) if line]
    return [" ".join(found), ""] if found else []


def _retry_details(test: TestResult, shown: int) -> str:
    """The retries ``flakewarden.retry`` made inside the test: each one is evidence."""
    retries = test.retries
    if not retries:
        return ""
    rows = [
        "| Attempt | Function | Exception | Call attempt | Delay | Message |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for run in test.attempts:
        for r in run.retries:
            if len(rows) - 2 >= shown:
                break
            rows.append(
                f"| {run.attempt} | {md.table_code(md.clip(r.function, 100))} "
                f"| {md.table_code(md.clip(r.exception, 100))} | {r.attempt} of {r.attempts} "
                f"| {r.delay:.3f} s | {md.escape(md.clip(r.message, 200))} |"
            )
    more = len(retries) - (len(rows) - 2)
    tail = f"\n\n{more} more in report.json." if more > 0 else ""
    return (
        f"<details><summary>Retries inside the test ({len(retries)})</summary>\n\n"
        + "\n".join(rows)
        + f"{tail}\n\n</details>"
    )


def owner_section(owned: Owners, path: str, triage_label: str) -> list[str]:
    """Who owns the test and why: the rule that decided, or that none did.

    Users are assigned, not mentioned; a team cannot be assigned, so it is mentioned
    here once (its slug was checked to be a well-formed ``@org/team``).
    """
    where = md.code(path) if path else "its file"
    if not owned.anyone:
        if owned.rule is None:
            why = f"no rule in the config's `owners` or in CODEOWNERS matches {where}"
        else:
            why = f"{md.code(owned.rule.text)} ({_source(owned)}) leaves {where} without owners"
        return [
            "### Owner",
            "",
            f"Nobody: {why}. Labelled {md.code(triage_label)} for triage.",
            "",
        ]
    who = [f"assigned to {', '.join(md.code(u) for u in owned.users)}"] if owned.users else []
    who += [f"@{team}" for team in owned.teams]
    who += [md.code(email) for email in owned.emails]
    assert owned.rule is not None
    return [
        "### Owner",
        "",
        f"{'; '.join(who)}: {where} matches {md.code(owned.rule.text)} ({_source(owned)}).",
        "",
    ]


def _source(owned: Owners) -> str:
    assert owned.rule is not None
    rule = owned.rule
    return f"line {rule.line} of {md.code(rule.source)}" if rule.line else rule.source


def issue_body(
    test: TestResult,
    ctx: RunContext,
    marker: dict[str, Any],
    owner: Optional[list[str]] = None,
) -> str:
    parts = [
        format_marker(marker),
        f"### {md.code(md.clip(test.id, SHOWN_ID_LIMIT))} is flaky",
        "",
        f"It {_summary(test)} in {ctx.describe()}.",
        "",
        *_blame(test, tally_of(marker)),
    ]
    if test.file:
        where = test.file + (f":{test.line}" if test.line is not None else "")
        parts += [f"Defined at {md.code(where)}.", ""]
    parts += [_attempts_table(test), ""]
    for details in (_failure_details(test, TRACEBACK_LIMIT), _retry_details(test, 50)):
        if details:
            parts += [details, ""]
    parts += owner or []
    parts += [
        "### Investigation",
        "",
        "_Notes, suspects and links go here. flakewarden never edits this text: it only "
        "rewrites the hidden marker line at the top._",
        "",
        "---",
        "<sub>Filed by flakewarden. Each recurrence adds a comment and counts a hit. "
        "Close this issue when a fix lands; if the test flakes again it is reopened.</sub>",
        "",
    ]
    return "\n".join(parts)


def recurrence_comment(test: TestResult, ctx: RunContext, tally: Tally, reopened: bool) -> str:
    head = (
        f"**The fix did not hold:** this test flaked again in {ctx.describe()}, "
        "so the issue is reopened."
        if reopened
        else f"Flaked again in {ctx.describe()}."
    )
    lines = [head, "", f"It {_summary(test)}. Hits so far: **{tally.hits}**."]
    blame = _blame(test, tally)
    if blame:
        lines += ["", blame[0]]
    first = test.first_failure
    if first is not None and first.message:
        lines += ["", f"First line: {md.code(md.clip(first.message, 300))}"]
    for details in (_failure_details(test, COMMENT_TRACEBACK_LIMIT), _retry_details(test, 10)):
        if details:
            lines += ["", details]
    return "\n".join(lines) + "\n"


def malformed_comment(test: TestResult, ctx: RunContext, problem: str) -> str:
    """The recurrence, told in a comment because the marker cannot be counted on."""
    return (
        f"Flaked again in {ctx.describe()}: it {_summary(test)}.\n\n"
        f"This hit is **not counted**: the hidden marker line of this issue is malformed "
        f"({md.code(problem)}), so flakewarden leaves the issue as it is. Edit that line back "
        "to a whole number of hits to resume counting.\n"
    )
