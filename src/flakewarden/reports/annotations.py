"""Which annotations a run earns, ranked and cut to what GitHub shows per step.

Pure planning from the model: the job summary states what did not fit, and
``github.gha`` only emits what is planned here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple, Optional

from flakewarden.model import Outcome, RunReport, TestResult
from flakewarden.model.blame import BlameRun
from flakewarden.model.causes import environment_only
from flakewarden.model.subtests import failed_histories
from flakewarden.reports import blame_text

#: GitHub drops silently what a step emits beyond 10 errors, 10 warnings and 10 notices.
ANNOTATION_LIMIT = 10
#: An annotation message is cut here; the full text is in the report artifact.
MESSAGE_LIMIT = 4000

ERROR = "error"
WARNING = "warning"
NOTICE = "notice"
KINDS = (ERROR, WARNING, NOTICE)

HARD_FAILURES = (Outcome.FAILED, Outcome.ERROR)
UNTOUCHED_POLICY = "blame.untouched_failures"
DISAGREEMENT_TITLE = "flakewarden: records disagree with pytest"


class Annotation(NamedTuple):
    """One workflow-command annotation, before escaping."""

    kind: str  # error, warning or notice
    title: str
    message: str
    file: Optional[str] = None  # relative to the workspace, "/" separated
    line: Optional[int] = None


class AnnotationPlan(NamedTuple):
    """What fits in one step, in emission order, and how many of each kind did not."""

    annotations: list[Annotation]
    dropped: dict[str, int]

    @property
    def total_dropped(self) -> int:
        return sum(self.dropped.values())


# -- planning (pure) -----------------------------------------------------------


def workspace_path(rootdir: str, file: str, workspace: Optional[str]) -> Optional[str]:
    """``file`` (relative to ``rootdir``) as a path relative to ``workspace``, or None.

    GitHub attaches an annotation only to a path inside the repository checkout;
    a path outside it (or an unknown workspace) gets no file, so the annotation
    still shows, unattached, instead of pointing somewhere wrong.
    """
    if not file or not workspace:
        return None
    target = Path(rootdir, file) if rootdir else Path(file)
    if not target.is_absolute():
        return None
    try:
        target_real = Path(os.path.realpath(target))
        workspace_real = Path(os.path.realpath(workspace))
        relative = target_real.relative_to(workspace_real)
    except ValueError:
        return None
    text = relative.as_posix()
    if text in ("", ".") or text.startswith("../"):
        return None
    return text


def _attempts_text(test: TestResult) -> str:
    runs = len(test.attempts)
    failures = len(test.failures)
    return f"{failures} of {runs} attempt{'s' if runs != 1 else ''} failed"


def _first_failure_text(test: TestResult) -> str:
    failure = test.first_failure
    if failure is None:
        return ""
    where = f" in {failure.phase}" if failure.phase and failure.phase != "call" else ""
    return f"{failure.message}{where}" if failure.message else where.strip()


def _subtests_text(test: TestResult) -> str:
    """``Subtests: (i=1) failed, passed`` for each subtest that failed on some attempt."""
    histories = failed_histories(test.attempts)
    if not histories:
        return ""
    shown = "; ".join(f"{h.description} {h.text}" for h in histories[:10])
    more = f"; and {len(histories) - 10} more" if len(histories) > 10 else ""
    return f"\nFailed subtests, by attempt: {shown}{more}"


def _message(test: TestResult, lead: str, gate: str = "") -> str:
    first = _first_failure_text(test)
    text = f"{lead} ({_attempts_text(test)})"
    if first:
        text += f": {first}"
    # A gate note states both blame facts already; otherwise the facts are said alone.
    blame = gate or blame_text.sentences(test)
    if blame:
        text += f"\n{blame}"
    if test.not_rerun:
        text += f"\n{test.not_rerun[:1].upper()}{test.not_rerun[1:]}."
    if test.retries:
        text += f"\nRetried inside the test: {test.retried_inside}."
    text += _subtests_text(test)
    failure = test.first_failure
    if failure is not None and failure.longrepr:
        text += "\n\n" + failure.longrepr
    if len(text) > MESSAGE_LIMIT:
        text = text[: MESSAGE_LIMIT - 1] + "…"
    return text


def annotation_for(
    test: TestResult,
    rootdir: str,
    workspace: Optional[str],
    blame: Optional[BlameRun] = None,
    environment: str = "",
) -> Annotation:
    """The annotation a test with a failing attempt gets.

    With ``blame`` (the run's ``BlameRun``), a hard failure that ran none of the change
    and fails on the base too is a warning under ``blame.untouched_failures`` ``warn``
    and ``ignore-in-gate`` (the latter only for the tests that policy kept out of the gate).
    ``environment``: the pattern that marked every failure of the test as the environment's.
    """
    file = workspace_path(rootdir, test.file, workspace)
    line = test.line if file is not None else None
    if test.outcome == Outcome.FLAKY and environment:
        kind, name = NOTICE, "Failed because of the environment"
        lead = f"The environment failed it ({environment}), then it passed on a rerun"
    elif test.outcome == Outcome.FLAKY:
        kind, name, lead = WARNING, "Flaky test", "Failed, then passed on a rerun"
    elif test.outcome == Outcome.QUARANTINED:
        kind, name, lead = NOTICE, "Quarantined test", "Quarantined, not blocking"
    elif test.outcome == Outcome.ERROR:
        kind, name, lead = ERROR, "Test error", "Errored on every attempt"
    elif test.not_rerun:
        kind, name, lead = ERROR, "Failed test", "Failed"
    else:
        kind, name, lead = ERROR, "Failed test", "Failed on every attempt"
    gate = ""
    if kind == ERROR and blame_text.ignored_in_gate(test, blame):
        kind, name = WARNING, f"{name}, not blocking the merge"
        gate = f"This does not block the merge: {blame_text.NOT_BLOCKING}."
    elif kind == ERROR and blame_text.only_warned(test, blame):
        kind = WARNING
        gate = f"A warning, not an error ({UNTOUCHED_POLICY}: warn): {blame_text.NOT_BLOCKING}."
    return Annotation(kind, f"{name}: {test.id}", _message(test, lead, gate), file, line)


def retried_annotation(test: TestResult, rootdir: str, workspace: Optional[str]) -> Annotation:
    """The notice a test gets that passed only after ``flakewarden.retry`` retried inside it."""
    file = workspace_path(rootdir, test.file, workspace)
    line = test.line if file is not None else None
    text = test.outcome_text
    for retry in test.retries[:5]:
        text += (
            f"\n{retry.function}: {retry.exception} on attempt {retry.attempt} of "
            f"{retry.attempts}: {retry.message}"
        )
    if len(text) > MESSAGE_LIMIT:
        text = text[: MESSAGE_LIMIT - 1] + "…"
    return Annotation(NOTICE, f"Retried inside the test: {test.id}", text, file, line)


def rank_annotations(report: RunReport, workspace: Optional[str]) -> list[Annotation]:
    """Every annotation the report deserves: hard failures, flakes, quarantine, retries inside.

    Collection errors are hard failures too and follow the failed tests; an attempt
    whose records disagree with pytest's own counts is a warning ahead of the flakes.
    Within a group the report's order is kept, so the first test to fail comes first.
    """
    ranked = [
        annotation_for(test, report.rootdir, workspace, report.blame)
        for test in report.with_outcome(*HARD_FAILURES)
    ]
    for attempt in report.attempts[:1]:
        for error in attempt.collection_errors:
            ranked.append(Annotation(ERROR, "Collection error", error[:MESSAGE_LIMIT]))
    for attempt in report.attempts:
        if attempt.disagreements:
            text = headline(attempt.number, attempt.disagreements)
            ranked.append(Annotation(WARNING, DISAGREEMENT_TITLE, text[:MESSAGE_LIMIT]))
    flaky = [test for test in report.with_outcome(Outcome.FLAKY) if test.failures]
    by_environment = environment_only(report.causes) if flaky else {}
    for test in flaky:
        cause = by_environment.get(test.id)
        pattern = cause.environment if cause is not None else ""
        ranked.append(annotation_for(test, report.rootdir, workspace, report.blame, pattern))
    ranked.extend(
        annotation_for(test, report.rootdir, workspace, report.blame)
        for test in report.with_outcome(Outcome.QUARANTINED)
        if test.failures
    )
    ranked.extend(
        retried_annotation(test, report.rootdir, workspace)
        for test in report.with_outcome(Outcome.PASSED)
        if test.retries
    )
    return ranked


def plan_annotations(
    report: RunReport, workspace: Optional[str] = None, *, limit: int = ANNOTATION_LIMIT
) -> AnnotationPlan:
    """Keep the first ``limit`` annotations of each kind and count the rest."""
    return limit_annotations(rank_annotations(report, workspace), limit=limit)


def limit_annotations(ranked: list[Annotation], *, limit: int = ANNOTATION_LIMIT) -> AnnotationPlan:
    """The first ``limit`` of ``ranked`` of each kind, and how many of each did not fit."""
    kept: list[Annotation] = []
    seen = dict.fromkeys(KINDS, 0)
    for annotation in ranked:
        seen[annotation.kind] += 1
        if seen[annotation.kind] <= limit:
            kept.append(annotation)
    dropped = {kind: max(0, count - limit) for kind, count in seen.items()}
    return AnnotationPlan(kept, dropped)


def headline(number: int, found: list[str]) -> str:
    """The one line that says an attempt's records and pytest's counts differ."""
    return (
        f"attempt {number}: flakewarden's records disagree with pytest's own summary "
        f"({'; '.join(found)}); the report may be missing what pytest saw"
    )
