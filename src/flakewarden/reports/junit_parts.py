"""What one failed attempt becomes in JUnit: one element per failed subtest and per failed phase.

pytest's own ``--junitxml`` writes a failed subtest as its own ``<failure>`` and
a teardown error apart from the call's failure; ``junit`` gives each part the
tag the attempt's place calls for (``failure``, ``rerunFailure``, ``flakyFailure``).
"""

from __future__ import annotations

from typing import NamedTuple

from flakewarden.model import AttemptOutcome, AttemptResult, first_line
from flakewarden.model.subtests import failure_text


class Part(NamedTuple):
    """One failure element's worth of one attempt: a failed subtest, or the test's own."""

    outcome: AttemptOutcome  # ERROR: a setup or teardown failure
    phase: str
    message: str
    longrepr: str
    stdout: str
    stderr: str
    reason: str = ""  # the failure line without the subtest's name, for ``type``

    def tag(self, prefix: str, failure: str) -> str:
        """``failure``/``error``, ``rerunFailure``/``rerunError``, ``flakyFailure``/...."""
        if not prefix:
            return "error" if self.outcome is AttemptOutcome.ERROR else failure
        return prefix + ("Error" if self.outcome is AttemptOutcome.ERROR else "Failure")


def parts(attempt: AttemptResult) -> list[Part]:
    """The elements one failed attempt becomes: one per failed subtest, then per failed phase."""
    subtests = attempt.failed_subtests
    whole = Part(
        attempt.outcome,
        attempt.phase,
        attempt.message,
        attempt.longrepr,
        attempt.stdout,
        attempt.stderr,
    )
    if not subtests and len(attempt.phase_failures) < 2:
        return [whole]
    elements = [
        Part(
            AttemptOutcome.FAILED,
            "call",
            f"{sub.description}: {sub.message}" if sub.message else sub.description,
            sub.longrepr,
            sub.stdout,
            sub.stderr,
            sub.message,
        )
        for sub in subtests
    ]
    phases = list(attempt.phase_failures)
    if not phases:
        # Read back from report.json, which keeps one failed phase only in the joined text:
        # the subtests' tracebacks, then the phase's own failure.
        own = attempt.longrepr
        prefix = failure_text(attempt.subtests)
        if prefix and own.startswith(prefix):
            own = own[len(prefix) :].lstrip("\n")
        if own:
            phases = [(attempt.phase if attempt.outcome is AttemptOutcome.ERROR else "call", own)]
    for index, (phase, text) in enumerate(phases):
        outcome = AttemptOutcome.FAILED if phase == "call" else AttemptOutcome.ERROR
        out, err = (attempt.stdout, attempt.stderr) if index == 0 else ("", "")
        message = first_line(text)
        elements.append(Part(outcome, phase, message, text, out, err, message))
    if not phases and (attempt.stdout or attempt.stderr):
        elements[0] = elements[0]._replace(
            stdout=elements[0].stdout or attempt.stdout, stderr=elements[0].stderr or attempt.stderr
        )
    return elements
