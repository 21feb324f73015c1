"""Writing the report directory from a ``RunReport``: every writer reads the same model."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

from flakewarden.errors import ReportError, ReportMissing
from flakewarden.model import RunReport, timings
from flakewarden.outside_json import parse_json, read_text
from flakewarden.reports.junit import write_junit
from flakewarden.reports.rendered import RenderedTests, encode
from flakewarden.reports.report_dir import SENTINEL, claim_directory, record_written
from flakewarden.reports.summary import render_summary

REPORT_JSON = "report.json"
RERUN_REPORT = "rerun-report.txt"
JUNIT_XML = "junit.xml"
#: ``--junit-xunit1``: the same JUnit with pytest's file, line and nodeid attributes.
JUNIT_XUNIT1_XML = "junit-xunit1.xml"
SUMMARY_MD = "summary.md"
REPORT_HTML = "report.html"

__all__ = [
    "SENTINEL",
    "claim_directory",
    "parse_report",
    "read_report",
    "record_written",
    "write_reports",
]


def write_text_atomic(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a reader never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def report_json(data: dict[str, Any], encoded: Mapping[str, Sequence[str]] = {}) -> str:
    """JSON with one top-level key, and one test or attempt, per line.

    Readable in a diff and by eye, and written with the C encoder: ``indent=``
    would fall back to the pure-Python one, several times slower on big suites.
    ``encoded`` holds lists whose items are JSON already: they replace those keys' values.
    """
    lines = []
    for key, value in data.items():
        items = encoded.get(key)
        if items is None and isinstance(value, list) and value and isinstance(value[0], dict):
            items = list(map(encode, value))
        if items:
            lines.append(f"  {json.dumps(key)}: [\n    " + ",\n    ".join(items) + "\n  ]")
        else:
            lines.append(f"  {json.dumps(key)}: {encode([] if items is not None else value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def rerun_report(report: RunReport) -> str:
    """gotestsum's format: one line per rerun test, ``ID: N runs, M failures``."""
    lines = [
        f"{test.id}: {len(test.attempts)} runs, {len(test.failures)} failures"
        for test in report.rerun_tests
    ]
    return "".join(line + "\n" for line in lines)


def write_reports(
    report: RunReport,
    report_dir: Path,
    artifact_name: Optional[str] = None,
    rendered: Optional[RenderedTests] = None,
    xunit1: bool = False,
) -> None:
    """Write report.json, rerun-report.txt, junit.xml, summary.md and report.html into
    ``report_dir``.

    ``rendered`` holds tests rendered while the tests ran; the rest are rendered here.
    ``xunit1``: also junit-xunit1.xml, with pytest's ``file``/``line``/``nodeid`` attributes.
    """
    rendered = rendered or RenderedTests()
    try:
        with timings.phase("report.json"):
            tests = [rendered.json_item(test) for test in report.tests]
            text = report_json(report.to_json(with_tests=False), {"tests": tests})
            write_text_atomic(report_dir / REPORT_JSON, text)
        with timings.phase("rerun-report.txt"):
            write_text_atomic(report_dir / RERUN_REPORT, rerun_report(report))
        with timings.phase("junit.xml"):
            write_junit(report, report_dir / JUNIT_XML, rendered.testcase)
            if xunit1:
                write_junit(report, report_dir / JUNIT_XUNIT1_XML, xunit1=True)
        with timings.phase("summary.md"):
            summary = render_summary(report, artifact_name=artifact_name)
            write_text_atomic(report_dir / SUMMARY_MD, summary)
        with timings.phase("report.html"):
            from flakewarden.reports.html.report_page import render_report_html

            write_text_atomic(report_dir / REPORT_HTML, render_report_html(report, report_dir))
        with timings.phase("manifest"):
            record_written(report_dir)
    except OSError as exc:
        raise ReportError(f"cannot write the report in {report_dir}: {exc.strerror}") from exc


def read_report(location: Path) -> RunReport:
    """Read ``report.json`` (or the report dir holding it) back into a ``RunReport``.

    ``ReportMissing`` when there is none, ``ReportError`` naming the file when it
    is unreadable or not a flakewarden report, a link out of its directory, not a regular
    file (a FIFO is refused, never waited on) or past the limits of ``outside_json``;
    never anything else.
    """
    is_dir = location.is_dir()
    path = location / REPORT_JSON if is_dir else location
    try:
        text = read_text(path, location if is_dir else path.parent)
    except FileNotFoundError:
        raise ReportMissing(
            f"{path} not found: run flakewarden run first, or point --report-dir at its report"
        ) from None
    return parse_report(text, str(path))


def parse_report(text: str | bytes | bytearray, where: str) -> RunReport:
    """A ``report.json``'s text (read from a file or an artifact zip) as a ``RunReport``.

    ``ReportError`` naming ``where`` when it is not a valid flakewarden report.
    """
    data = parse_json(text, where)
    if not isinstance(data, dict):
        raise ReportError(f"{where} is not a flakewarden report (not a JSON object)")
    try:
        return RunReport.from_json(data)
    except (AttributeError, KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ReportError(f"{where} is not a valid flakewarden report: {exc}") from None
