"""Rendering a stress verdict for review: ``verdict.md`` and the text chart, and writing both files.

The decision lives in ``verdict`` and the phases; this module only shows the
evidence, so a reviewer reads the same numbers ``verdict.json`` holds.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Optional

from flakewarden.errors import ReportError
from flakewarden.stress.verdict import KNOB_DESCRIPTIONS, Arm, Verdict


def write_verdict(verdict: Verdict, directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "verdict.json").write_text(
            json.dumps(verdict.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (directory / "verdict.md").write_text(render_markdown(verdict), encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"cannot write the verdict to {directory}: {exc}") from exc


def _percent(value: float) -> str:
    return f"{100 * value:.2f}%"


def _p(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.3g}"


def text_chart(arms: list[Arm], width: int = 30) -> str:
    """Failure rate by arm as a fixed-width bar chart (renders anywhere, diff-friendly)."""
    rows = [arm for arm in arms if arm.runs]
    if not rows:
        return "(no runs)"
    label = max(len(_arm_label(arm)) for arm in rows)
    lines = []
    for arm in rows:
        bar = "#" * round(arm.rate * width)
        lines.append(
            f"{_arm_label(arm).ljust(label)} |{bar.ljust(width)}| "
            f"{arm.failures:>4}/{arm.runs:<4} {_percent(arm.rate):>7}"
        )
    return "\n".join(lines)


def _arm_label(arm: Arm) -> str:
    name = arm.knob if arm.phase == "timing" else f"{arm.phase}:{arm.knob}"
    return f"{name}@{arm.shard}" if arm.shard else name


def render_markdown(verdict: Verdict) -> str:
    out: list[str] = []
    out.append(f"# Stress verdict: `{verdict.verdict}`\n")
    out.append(f"Test: `{verdict.test_id}`\n")
    allowed = "yes" if verdict.quarantine_allowed else "**no**"
    out.append(f"Quarantine allowed: {allowed}\n")
    out.append(f"**Why:** {verdict.reason}\n")
    out.append(f"**Rule that decided:** {verdict.rule}\n")
    if verdict.knob:
        out.append(f"**Knob:** `{verdict.knob}` — {KNOB_DESCRIPTIONS.get(verdict.knob, '')}\n")
    if verdict.polluter:
        out.append(f"**Polluter:** `{verdict.polluter}`\n")
    if verdict.seed is not None:
        out.append(f"**Seed:** `--randomly-seed={verdict.seed}`\n")
    entry = verdict.known_race_entry()
    if entry:
        out.append("## Known race pattern to record\n")
        out.append("Add this entry to the known-race-patterns list:\n")
        out.append(f"```yaml\n{entry}```\n")
    out.append("## Failure rate by arm\n")
    out.append(f"```text\n{text_chart(verdict.arms)}\n```\n")
    out.append("## Evidence\n")
    out.append(
        "| phase | knob | runs | failures | rate | 95% interval | upper bound (95%, one-sided) "
        "| p (Fisher, one-sided) | p (Holm) | processes × repeat "
        "| first runs in a process (failed/runs) | in-process repeats (failed/runs) |"
    )
    out.append("|---|---|---:|---:|---:|---|---:|---:|---:|---|---:|---:|")
    for arm in verdict.arms:
        low, high = arm.interval
        knob = f"{arm.knob}@{arm.shard}" if arm.shard else arm.knob
        out.append(
            f"| {arm.phase} | {knob} | {arm.runs} | {arm.failures} | {_percent(arm.rate)} "
            f"| {_percent(low)} – {_percent(high)} | {_percent(arm.upper)} "
            f"| {_p(arm.p_value)} | {_p(arm.p_adjusted)} | {arm.processes} × {arm.repeat} "
            f"| {arm.first_failures}/{arm.first_runs} | {arm.repeat_failures}/{arm.repeat_runs} |"
        )
    out.append("")
    if verdict.statistics:
        out.append("## Statistics\n")
        for key, value in verdict.statistics.items():
            out.append(f"- {key}: {value}")
        out.append("")
    if verdict.non_idempotent:
        out.append("## Non-idempotent: it leaks state into itself\n")
        out.append(
            "It passes its first run in a fresh process and fails when repeated in the same "
            "process, so no later phase repeated it in-process.\n"
        )
        out.append(f"```json\n{json.dumps(verdict.non_idempotent, indent=2)}\n```\n")
    if verdict.order:
        out.append("## Order phase\n")
        out.append(f"```json\n{json.dumps(verdict.order, indent=2)}\n```\n")
    if verdict.seeds:
        out.append("## Seed phase\n")
        out.append(f"```json\n{json.dumps(verdict.seeds, indent=2)}\n```\n")
    if verdict.notes:
        out.append("## Notes\n")
        out.extend(f"- {note}" for note in verdict.notes)
        out.append("")
    failure = verdict.first_failure
    out.append("## First failing run\n")
    if failure is None:
        out.append("No run failed.\n")
    else:
        out.append(
            f"Phase `{failure.phase}`, knob `{failure.knob}`, process {failure.process}, "
            f"iteration {failure.iteration}: {failure.message}\n"
        )
        if failure.log:
            out.append(f"Output of that process: `{failure.log}`\n")
        out.append(f"```text\n{failure.traceback}\n```\n")
    out.append("## Reproduce by hand\n")
    out.append(
        "Each command runs the test once; the arm repeated it (processes × repeat above). "
        "Loop the command, or add `--count=N` when pytest-repeat is installed.\n"
    )
    seen: set[str] = set()
    for arm in verdict.arms:
        if arm.command and arm.command not in seen:
            seen.add(arm.command)
            out.append(f"- {arm.phase} / {arm.knob}:\n\n  ```sh\n  {arm.command}\n  ```\n")
    out.append("## Environment\n")
    for key, value in verdict.environment.items():
        out.append(f"- {key}: {value}")
    out.append(f"- started: {verdict.started_at}")
    out.append(f"- finished: {verdict.finished_at}")
    out.append(f"- duration: {verdict.duration:.1f} s")
    out.append(f"- flakewarden: {verdict.version}")
    if verdict.command:
        out.append(f"- test command: `{shlex.join(verdict.command)}`")
    if verdict.shards:
        out.append(f"- merged shards: {', '.join(verdict.shards)}")
    out.append("")
    return "\n".join(out)
