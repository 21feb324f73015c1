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
from typing import IO, Optional

from flakewarden.console import one_line
from flakewarden.model import RunReport
from flakewarden.reports.annotations import (
    WARNING,
    Annotation,
    AnnotationPlan,
    plan_annotations,
)


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
    from flakewarden.reports.summary import render_summary

    workspace = os.environ.get("GITHUB_WORKSPACE")
    emit_annotations(plan_annotations(report, workspace))
    append_step_summary(render_summary(report, artifact_name=artifact_name))
    write_outputs(outputs_for(report, report_dir))
