"""Counting what pytest and flakewarden each say happened, in pytest's own terms.

pytest's side is read from its terminal summary line (``=== 3 passed, 1 xfailed in
0.1s ===``), nothing else. flakewarden's side is read from its report directory: the
plugin's records of attempt 1 (``attempts/1/results.jsonl``), counted the way pytest's
terminal reporter counts reports, and ``report.json``'s per-test outcomes, which must
fold those counts without losing or inventing a test.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

# pytest's categories that both sides can name; what pytest prints besides them
# (warnings, deselected, subtests ...) is kept apart, not compared.
CATEGORIES = ("passed", "failed", "skipped", "xfailed", "xpassed", "errors")
_SUMMARY = re.compile(r"^=+ (?P<body>.+?) in [\d.]+s(?: \([^)]*\))? =+$")
_PIECE = re.compile(r"^(?P<n>\d+) (?P<what>[a-z ]+)$")
_ALIASES = {"error": "errors", "warning": "warnings"}


class NoSummary(ValueError):
    """pytest's output has no terminal summary line (it crashed, or -q -q was given)."""


def summary_counts(output: str) -> dict[str, int]:
    """The counts of pytest's last terminal summary line, keyed by pytest's words."""
    body = None
    for line in output.splitlines():
        match = _SUMMARY.match(line.strip())
        if match:
            body = match.group("body")
    if body is None:
        raise NoSummary("no '=== N passed ... in Xs ===' line in pytest's output")
    counts: dict[str, int] = dict.fromkeys(CATEGORIES, 0)
    if body.strip() == "no tests ran":
        return counts
    for piece in body.split(", "):
        match = _PIECE.match(piece.strip())
        if match is None:
            raise NoSummary(f"cannot read {piece!r} in pytest's summary line {body!r}")
        what = _ALIASES.get(match.group("what"), match.group("what"))
        counts[what] = counts.get(what, 0) + int(match.group("n"))
    return counts


def compared(counts: dict[str, int]) -> dict[str, int]:
    """Only the categories both sides can name."""
    return {k: counts.get(k, 0) for k in CATEGORIES}


def phase_category(phase: dict[str, Any]) -> str:
    """The category pytest's terminal reporter files one phase report under ('' for none)."""
    outcome, when, xfail = phase["outcome"], phase["when"], bool(phase.get("wasxfail"))
    if outcome == "failed":
        return "failed" if when == "call" else "errors"
    if outcome == "skipped":
        return "xfailed" if xfail else "skipped"
    if when == "call":
        return "xpassed" if xfail else "passed"
    return ""


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as stream:
        return [json.loads(line) for line in stream if line.strip()]


def attempt_counts(report_dir: Path, attempt: int = 1) -> dict[str, int]:
    """What flakewarden recorded in one attempt, counted like pytest's summary line."""
    counts: Counter[str] = Counter(dict.fromkeys(CATEGORIES, 0))
    for record in read_jsonl(report_dir / "attempts" / str(attempt) / "results.jsonl"):
        if record["kind"] == "collect_error":
            counts["errors"] += 1
        elif record["kind"] == "test":
            for phase in record["phases"]:
                category = phase_category(phase)
                if category:
                    counts[category] += 1
    return dict(counts)


def extra_call_reports(report_dir: Path, attempt: int = 1) -> int:
    """Call-phase reports beyond one per test: subtests, which the records do not mark."""
    extra = 0
    for record in read_jsonl(report_dir / "attempts" / str(attempt) / "results.jsonl"):
        if record["kind"] == "test":
            calls = sum(1 for phase in record["phases"] if phase["when"] == "call")
            extra += max(0, calls - 1)
    return extra


def attempt_config(report_dir: Path, attempt: int) -> dict[str, Any]:
    for record in read_jsonl(report_dir / "attempts" / str(attempt) / "results.jsonl"):
        if record["kind"] == "config":
            return record
    raise ValueError(f"attempt {attempt} has no config record")


def report(report_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    return data


def folded_expectation(counts: dict[str, int]) -> dict[str, int]:
    """The per-test totals ``report.json`` must show for pytest's ``counts`` of one green
    or red attempt with no reruns: xpassed tests pass, xfailed tests are skips.

    Valid when no test contributed two reports (a failed call and a failed teardown);
    the corpus checks that separately by counting tests, not reports.
    """
    return {
        "passed": counts["passed"] + counts["xpassed"],
        "skipped": counts["skipped"] + counts["xfailed"],
        "failed": counts["failed"],
    }


def folded_totals(data: dict[str, Any]) -> dict[str, int]:
    totals = data["totals"]
    return {k: int(totals[k]) for k in ("passed", "skipped", "failed")}


def coverage_total(json_report: Path) -> float:
    """The unrounded total of a ``coverage json`` report."""
    data = json.loads(json_report.read_text(encoding="utf-8"))
    return float(data["totals"]["percent_covered"])
