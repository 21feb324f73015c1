"""GitHub Actions I/O: annotations, the job summary and step outputs.

Workflow commands go through actions-toolkit's ``core`` module, kept behind this
module so it can be swapped. Everything GitHub limits (10 annotations of each
type per step, paths relative to the workspace) is decided here, in
``plan_annotations``, which is pure so the summary can state what did not fit.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, NamedTuple, Optional

from .consistency import headline as consistency_headline
from .console import one_line
from .model import Outcome, RunReport, TestResult
from .subtests import failed_histories

#: GitHub drops silently what a step emits beyond 10 errors, 10 warnings and 10 notices.
ANNOTATION_LIMIT = 10
#: An annotation message is cut here; the full text is in the report artifact.
MESSAGE_LIMIT = 4000

ERROR = "error"
WARNING = "warning"
NOTICE = "notice"
KINDS = (ERROR, WARNING, NOTICE)

HARD_FAILURES = (Outcome.FAILED, Outcome.ERROR)
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


def _message(test: TestResult, lead: str) -> str:
    first = _first_failure_text(test)
    text = f"{lead} ({_attempts_text(test)})"
    if first:
        text += f": {first}"
    text += _subtests_text(test)
    failure = test.first_failure
    if failure is not None and failure.longrepr:
        text += "\n\n" + failure.longrepr
    if len(text) > MESSAGE_LIMIT:
        text = text[: MESSAGE_LIMIT - 1] + "…"
    return text


def annotation_for(test: TestResult, rootdir: str, workspace: Optional[str]) -> Annotation:
    """The annotation a test with a failing attempt gets."""
    file = workspace_path(rootdir, test.file, workspace)
    line = test.line if file is not None else None
    if test.outcome == Outcome.FLAKY:
        kind, title, lead = WARNING, f"Flaky test: {test.id}", "Failed, then passed on a rerun"
    elif test.outcome == Outcome.QUARANTINED:
        kind, title, lead = NOTICE, f"Quarantined test: {test.id}", "Quarantined, not blocking"
    elif test.outcome == Outcome.ERROR:
        kind, title, lead = ERROR, f"Test error: {test.id}", "Errored on every attempt"
    else:
        kind, title, lead = ERROR, f"Failed test: {test.id}", "Failed on every attempt"
    return Annotation(kind, title, _message(test, lead), file, line)


def rank_annotations(report: RunReport, workspace: Optional[str]) -> list[Annotation]:
    """Every annotation the report deserves: hard failures, then flakes, then quarantine.

    Collection errors are hard failures too and follow the failed tests; an attempt
    whose records disagree with pytest's own counts is a warning ahead of the flakes.
    Within a group the report's order is kept, so the first test to fail comes first.
    """
    ranked = [
        annotation_for(test, report.rootdir, workspace)
        for test in report.with_outcome(*HARD_FAILURES)
    ]
    for attempt in report.attempts[:1]:
        for error in attempt.collection_errors:
            ranked.append(Annotation(ERROR, "Collection error", error[:MESSAGE_LIMIT]))
    for attempt in report.attempts:
        if attempt.disagreements:
            text = consistency_headline(attempt.number, attempt.disagreements)
            ranked.append(Annotation(WARNING, DISAGREEMENT_TITLE, text[:MESSAGE_LIMIT]))
    for outcome in (Outcome.FLAKY, Outcome.QUARANTINED):
        ranked.extend(
            annotation_for(test, report.rootdir, workspace)
            for test in report.with_outcome(outcome)
            if test.failures
        )
    return ranked


def plan_annotations(
    report: RunReport, workspace: Optional[str] = None, *, limit: int = ANNOTATION_LIMIT
) -> AnnotationPlan:
    """Keep the first ``limit`` annotations of each kind and count the rest."""
    kept: list[Annotation] = []
    seen = dict.fromkeys(KINDS, 0)
    for annotation in rank_annotations(report, workspace):
        seen[annotation.kind] += 1
        if seen[annotation.kind] <= limit:
            kept.append(annotation)
    dropped = {kind: max(0, count - limit) for kind, count in seen.items()}
    return AnnotationPlan(kept, dropped)


def outcome_of(report: RunReport) -> str:
    """One word for the run, for the ``outcome`` output: passed, flaky, failed, ..."""
    code = report.exit_code
    if code == 0:
        return "flaky" if report.totals.flaky else "passed"
    return {1: "failed", 2: "interrupted", 4: "usage-error", 5: "no-tests"}.get(code, "error")


def outputs_for(report: RunReport, report_dir: Path) -> dict[str, str]:
    """The step outputs, all strings, as ``$GITHUB_OUTPUT`` holds them."""
    totals = report.totals
    return {
        "outcome": outcome_of(report),
        "passed": str(totals.passed),
        "failed": str(totals.failed + totals.error),
        "flaky": str(totals.flaky),
        "quarantined": str(totals.quarantined),
        "quarantine-known": str(len(report.quarantine_known)),
        "report-dir": str(report_dir),
        # As `coverage report` shows it, with the project's precision.
        "coverage": "" if report.coverage is None else report.coverage.percent_display,
    }


# -- emitting ------------------------------------------------------------------


def command_properties(annotation: Annotation) -> dict[str, str]:
    """Only the properties that are set: ``title``, then ``file`` and ``line`` when attached."""
    properties = {"title": annotation.title}
    if annotation.file is not None:
        properties["file"] = annotation.file
        if annotation.line is not None:
            properties["line"] = str(annotation.line)
    return properties


def format_command(annotation: Annotation) -> str:
    """The workflow-command line for one annotation, escaped by actions-toolkit.

    The toolkit escapes as the runner unescapes: in the message ``%``, CR and LF;
    in property values also ``:`` and ``,``. Its ``core.error``/``warning``/
    ``notice`` would also write an empty value for every unset property
    (``endLine=,col=``), so its ``Command`` is given only the properties we set.
    """
    # Imported here: the summary uses this module's planning on every run, even off GitHub.
    from actions_toolkit.command import Command  # type: ignore[import-untyped]

    return str(Command(annotation.kind, command_properties(annotation), annotation.message))


def emit_annotations(plan: AnnotationPlan, stream: Optional[IO[str]] = None) -> None:
    """Write the planned annotations as workflow commands, one line each, on stdout."""
    out = sys.stdout if stream is None else stream
    for annotation in plan.annotations:
        out.write(format_command(annotation) + "\n")
    out.flush()


def warn(message: str, title: str = "flakewarden") -> None:
    """One warning line: an annotation on GitHub Actions, a plain stderr line elsewhere."""
    line = " ".join(message.split())
    if os.environ.get("GITHUB_ACTIONS") == "true":
        sys.stdout.write(format_command(Annotation(WARNING, title, line)) + "\n")
        sys.stdout.flush()
    else:
        sys.stderr.write(f"flakewarden: warning: {one_line(line)}\n")


def write_outputs(outputs: Mapping[str, str], env: Optional[Mapping[str, str]] = None) -> None:
    """Append outputs to ``$GITHUB_OUTPUT`` with a random heredoc delimiter per value."""
    path = (os.environ if env is None else env).get("GITHUB_OUTPUT")
    if not path:
        return
    from actions_toolkit.file_command import (  # type: ignore[import-untyped]
        prepare_key_value_message,
    )

    with open(path, "a", encoding="utf-8", newline="") as handle:
        for name, value in outputs.items():
            handle.write(prepare_key_value_message(name, value) + "\n")


def append_step_summary(text: str, env: Optional[Mapping[str, str]] = None) -> None:
    """Append to ``$GITHUB_STEP_SUMMARY`` (the runner concatenates each step's file)."""
    path = (os.environ if env is None else env).get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    with open(path, "a", encoding="utf-8", newline="") as handle:
        handle.write(text if text.endswith("\n") else text + "\n")


def publish(report: RunReport, report_dir: Path, *, artifact_name: Optional[str] = None) -> None:
    """Annotate, summarise and set outputs for one run inside a GitHub Actions step.

    Nothing here prints a token or the environment; only the report's own text
    (test ids, failure lines) reaches the log, escaped.
    """
    # Imported here: the summary reads this module's ranking to state what did not fit.
    from .summary import render_summary

    workspace = os.environ.get("GITHUB_WORKSPACE")
    emit_annotations(plan_annotations(report, workspace))
    append_step_summary(render_summary(report, artifact_name=artifact_name))
    write_outputs(outputs_for(report, report_dir))
