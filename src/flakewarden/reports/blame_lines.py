"""The console's blame: one ``BLAME:`` line per judged failure, ready to print.

Pure: a report in, lines out. Each line is already ``console.one_line``: a test id,
a path or a reason cannot break it in two or form a workflow command, so the caller
prints it as it is (``print``, or ``console.say``, which leaves it unchanged).
"""

from __future__ import annotations

from flakewarden.console import one_line
from flakewarden.model import Outcome, RunReport
from flakewarden.reports import blame_text

PREFIX = "BLAME: "
# The order the console lists judged tests in: what fails the job first.
_ORDER = (Outcome.FAILED, Outcome.ERROR, Outcome.FLAKY, Outcome.QUARANTINED)


def blame_lines(report: RunReport) -> list[str]:
    """``BLAME: <id> (ran 3 changed lines in src/x.py; fails on the base too)`` per test.

    A run blame could not judge gets one line saying why; a test the untouched-failures
    policy kept out of the gate says so in its parentheses.
    """
    blame = report.blame
    lines: list[str] = []
    if blame is not None and blame.unavailable:
        base = blame.base or "the base"
        lines.append(PREFIX + one_line(f"not judged against {base}: {blame.unavailable}"))
    for test in [t for outcome in _ORDER for t in report.with_outcome(outcome)]:
        said = blame_text.phrases(test)
        if not said:
            continue
        if blame_text.ignored_in_gate(test, blame):
            said.append("not blocking the merge")
        elif blame_text.only_warned(test, blame):
            said.append("a warning, not an error")
        lines.append(PREFIX + one_line(f"{test.id} ({'; '.join(said)})"))
    return lines
