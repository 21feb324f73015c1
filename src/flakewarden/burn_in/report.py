"""What a burn-in leaves for review: ``burn-in.json``, ``burn-in.md`` and annotations.

The JSON is versioned for tools; the Markdown is for the reviewer of the pull request,
and every test id and command in it is escaped (they come from the change under test);
the annotations put a new flaky test's verdict on its definition line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from flakewarden import __version__
from flakewarden.errors import ReportError
from flakewarden.model.verdicts import ERROR as ERROR_VERDICT
from flakewarden.reports import markdown as md
from flakewarden.reports.annotations import (
    ERROR,
    MESSAGE_LIMIT,
    WARNING,
    Annotation,
    AnnotationPlan,
    limit_annotations,
    workspace_path,
)

from .outcome import PLAIN_RETRIES, TestOutcome, percent, rate_bound
from .run import BurnIn

SCHEMA_VERSION = 1
JSON_FILE = "burn-in.json"
MARKDOWN_FILE = "burn-in.md"


def to_json(burn_in: BurnIn) -> dict[str, Any]:
    options, diff, selection = burn_in.options, burn_in.diff, burn_in.selection
    return {
        "schema": SCHEMA_VERSION,
        "tool": {"name": "flakewarden", "version": __version__},
        "command": options.command,
        "base": None if diff is None else diff.base,
        "base_branch": burn_in.base_branch,
        "merge_base": None if diff is None else diff.merge_base,
        "head": None if diff is None else diff.head,
        "unavailable": burn_in.unavailable,
        "budget_seconds": options.budget_seconds,
        "cap": options.cap,
        "fail_on_flaky": options.fail_on_flaky,
        "selection": None
        if selection is None
        else {
            "collected": selection.collected,
            "selected": selection.selected,
            "too_broad": selection.too_broad,
            "run": [
                {"id": s.node_id, "reasons": list(s.reasons)}
                for s in selection.run
                if s.node_id not in {n.node_id for n in burn_in.over_budget}
            ],
            "not_run": [
                {"id": n.node_id, "why": n.why} for n in (*selection.not_run, *burn_in.over_budget)
            ],
            "unmapped": [{"id": n.node_id, "why": n.why} for n in selection.unmapped],
            "notes": list(selection.notes),
        },
        "collection_seconds": None
        if burn_in.collection is None
        else round(burn_in.collection.seconds, 3),
        "collect_errors": [{"where": w, "text": t} for w, t in burn_in.collect_errors],
        "notes": burn_in.notes,
        "tests": [o.to_json() for o in burn_in.outcomes],
        "failing": [o.node_id for o in burn_in.failing],
        "interrupted": burn_in.interrupted,
        "seconds": round(burn_in.seconds, 1),
        "exit_code": burn_in.exit_code,
    }


def _test_section(outcome: TestOutcome) -> list[str]:
    out = [
        f"### {md.code(outcome.node_id)}: {md.escape(outcome.verdict)}",
        "",
        f"- selected: {md.escape('; '.join(outcome.reasons))}",
        f"- {md.escape(outcome.summary())}",
        f"- budget {outcome.budget_seconds:.0f} s, took {outcome.duration:.1f} s; "
        f"stress verdict: `{outcome.directory}/verdict.md`",
    ]
    if outcome.failing or outcome.engine_verdict == ERROR_VERDICT:
        out.append(f"- why: {md.escape(outcome.reason)}")
    if outcome.reproduce:
        out += ["", "Reproduce:", "", md.code_block(outcome.reproduce, "sh")]
    return [*out, ""]


def render_markdown(burn_in: BurnIn) -> str:
    out = ["# Burn-in", ""]
    if burn_in.unavailable:
        return "\n".join([*out, f"No diff, nothing run: {md.escape(burn_in.unavailable)}", ""])
    failing = burn_in.failing
    if failing:
        word = "fail" if burn_in.options.fail_on_flaky else "warn (burn_in.fail_on_flaky: false)"
        out += [f"**{len(failing)} new flaky or broken test(s)**: the check will {word}.", ""]
    elif burn_in.outcomes:
        out += [f"No failure in {len(burn_in.outcomes)} burned-in test(s).", ""]
    out += _selection_lines(burn_in)
    if burn_in.outcomes:
        out += [
            "## Verdicts",
            "",
            f"A clean test's bound is the one-sided 95% upper bound on its failure rate "
            f"after its runs; {PLAIN_RETRIES} plain retries bound it only below "
            f"{percent(rate_bound(PLAIN_RETRIES))}.",
            "",
            "| test | verdict | runs | failures | rate below (95%) |",
            "|---|---|---:|---:|---:|",
        ]
        for o in burn_in.outcomes:
            bound = "" if o.bound is None else percent(o.bound)
            out.append(
                f"| {md.table_code(o.node_id)} | {md.escape(o.verdict)} | {o.runs} "
                f"| {o.failures} | {bound} |"
            )
        out.append("")
        for outcome in burn_in.outcomes:
            out += _test_section(outcome)
    if burn_in.interrupted:
        out += ["**Interrupted**: the tests after the last verdict did not run.", ""]
    return "\n".join(out)


def _selection_lines(burn_in: BurnIn) -> list[str]:
    selection = burn_in.selection
    diff = burn_in.diff
    out = []
    if diff is not None:
        out += [
            f"HEAD `{diff.head[:12]}` against {md.code(diff.base)} (merge base "
            f"`{diff.merge_base[:12]}`), {len(diff.files)} file(s) changed.",
            "",
        ]
    if selection is None:
        return [*out, *(f"- {md.escape(n)}" for n in burn_in.notes), ""]
    out += [f"## Selection ({selection.selected} of {selection.collected} collected tests)", ""]
    over = {n.node_id for n in burn_in.over_budget}
    out += [
        f"- run: {md.code(s.node_id)} — {md.escape('; '.join(s.reasons))}"
        for s in selection.run
        if s.node_id not in over
    ]
    out += [
        f"- not run: {md.code(n.node_id)} — {md.escape(n.why)}"
        for n in (*selection.not_run, *burn_in.over_budget)
    ]
    out += [f"- not mapped: {md.code(n.node_id)} — {md.escape(n.why)}" for n in selection.unmapped]
    out += [f"- note: {md.escape(n)}" for n in (*selection.notes, *burn_in.notes)]
    out += [f"- collection error in {md.code(w or '.')}" for w, _ in burn_in.collect_errors]
    if not selection.selected:
        out.append("- no test selected: nothing to burn in")
    return [*out, ""]


def write_report(burn_in: BurnIn, directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / JSON_FILE).write_text(
            json.dumps(to_json(burn_in), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (directory / MARKDOWN_FILE).write_text(render_markdown(burn_in), encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"cannot write the burn-in report to {directory}: {exc}") from exc


def plan_annotations(burn_in: BurnIn, workspace: Optional[str]) -> AnnotationPlan:
    """One annotation per failing (or unstressable) test, on its definition line."""
    rootdir = "" if burn_in.collection is None else str(burn_in.collection.rootdir)
    kind = ERROR if burn_in.options.fail_on_flaky else WARNING
    found = []
    for o in burn_in.outcomes:
        if not (o.failing or o.engine_verdict == ERROR_VERDICT):
            continue
        file = workspace_path(rootdir, o.file or "", workspace)
        title = f"New flaky test ({o.verdict}): {o.node_id}" if o.failing else o.node_id
        if o.engine_verdict == "deterministic":
            title = f"New test fails every run: {o.node_id}"
        text = f"Burn-in: {o.summary()}"
        if o.reproduce:
            text += f"\nReproduce: {o.reproduce}"
        found.append(
            Annotation(
                kind if o.failing else WARNING,
                title if o.failing else f"Burn-in could not stress {o.node_id}",
                text[:MESSAGE_LIMIT],
                file,
                o.line if file is not None else None,
            )
        )
    return limit_annotations(found)
