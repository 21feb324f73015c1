"""The job summary's blame: the change a run was judged against, and each failure's verdict.

Branch names, paths and the reasons blame gives come from whoever pushed the branch,
so each goes through ``markdown.escape``, on one line.
"""

from __future__ import annotations

from flakewarden.console import plural
from flakewarden.model import RunReport, TestResult
from flakewarden.reports import blame_text
from flakewarden.reports.markdown import CELL_LIMIT, escape

#: The most ids listed as kept out of the gate; the rest are counted.
IGNORED_SHOWN = 20


def blame_phrase(test: TestResult) -> str:
    """The table cell: ``ran 3 changed lines in src/x.py; fails on the base too``, escaped."""
    return escape(blame_text.phrase(test), CELL_LIMIT)


def judged(tests: list[TestResult]) -> bool:
    """True when any of ``tests`` carries a verdict, so its table gets a blame column."""
    return any(t.change is not None or t.base is not None for t in tests)


def blame_notes(report: RunReport) -> list[str]:
    """``**Blame:** Judged against main (merge base 1a2b3c4d5e6f): ...``, and what the
    untouched-failures policy did; nothing when the run was not judged."""
    blame = report.blame
    if blame is None:
        return []
    base = escape(blame.base or "the base", CELL_LIMIT)
    if blame.unavailable:
        reason = escape(blame.unavailable, CELL_LIMIT * 2)
        return [f"**Blame:** not judged against {base}: {reason}", ""]
    where = f"Judged against {base}"
    if blame.merge_base:
        where += f" (merge base {escape(blame_text.short_sha(blame.merge_base), CELL_LIMIT)})"
    found = blame_text.counts(report)
    lines = [
        f"**Blame:** {where}: {plural(blame.changed_lines, 'changed line')} in "
        f"{plural(len(blame.files), 'file')}; {plural(found.touches, 'failed test')} ran "
        f"the change, {found.untouched} did not, {found.unknown} unknown.",
        "",
    ]
    if blame.policy == blame_text.IGNORE_IN_GATE and blame.ignored:
        count = len(blame.ignored)
        lines += [
            f"{plural(count, 'failed test')} did not block the merge "
            f"(`blame.untouched_failures: ignore-in-gate`): each ran none of this pull "
            "request's changes and fails on the base too.",
            "",
        ]
        lines += [f"- {escape(test_id, CELL_LIMIT)}" for test_id in blame.ignored[:IGNORED_SHOWN]]
        if count > IGNORED_SHOWN:
            lines.append(f"- … and {count - IGNORED_SHOWN} more in report.json")
        lines.append("")
    elif blame.policy == blame_text.WARN:
        warned = [t for t in report.tests if blame_text.only_warned(t, blame)]
        if warned:
            lines += [
                f"{plural(len(warned), 'failed test')} ran none of this pull request's changes "
                "and fail on the base too: annotated as warnings, not errors "
                "(`blame.untouched_failures: warn`).",
                "",
            ]
    return lines
