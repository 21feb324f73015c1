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
from flakewarden.reports.markdown import code, code_block, escape, table_code
from flakewarden.stress.draws import KINDS
from flakewarden.stress.verdict import KNOB_DESCRIPTIONS, Arm, Failure, Verdict


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


def _number(value: object, default: float) -> float:
    """A figure read back from a shard's ``verdict.json``: ``default`` when it is not one."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return default


def _cell(value: object) -> str:
    """Any value of a shard's ``verdict.json`` as an escaped table cell."""
    return escape(str(value))


def _arm_label(arm: Arm) -> str:
    name = arm.knob if arm.phase == "timing" else f"{arm.phase}:{arm.knob}"
    return f"{name}@{arm.shard}" if arm.shard else name


def _power_lines(verdict: Verdict) -> list[str]:
    """What each knob's runs exclude: the power behind an allowed flaky or not-reproducible."""
    power = verdict.power
    knobs = power.get("knobs")
    if not isinstance(knobs, dict) or not knobs:
        return []
    met = "every knob is" if power.get("met") else "**not every knob is**"
    out = [
        "## What the runs rule out\n",
        f"Margin: {escape(str(power.get('margin', '')))}; {met} bounded within it.\n",
        "| knob | state | runs | failures | evidence of a race (e) | needed | rate below "
        "| increase bound | margin |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for knob, row in knobs.items():
        if not isinstance(row, dict):
            continue
        runs, failures = row.get("runs", ""), row.get("failures", "")
        every = row.get("runs_all_levels")
        if isinstance(every, int) and isinstance(runs, int) and every > runs:
            runs = f"{runs} at its last level ({every} over all levels)"
            failures = f"{failures} ({row.get('failures_all_levels', '')} over all levels)"
        out.append(
            f"| {_cell(knob)} | {_cell(row.get('state', ''))} | {_cell(runs)} "
            f"| {_cell(failures)} "
            f"| {_number(row.get('e_value'), 0.0):.3g} "
            f"| {_number(row.get('race_threshold'), 0.0):g} "
            f"| {_percent(_number(row.get('upper'), 1.0))} "
            f"| {_percent(_number(row.get('increase_bound'), 1.0))} "
            f"| {_percent(_number(row.get('margin'), 0.0))} |"
        )
    out.append("")
    out.extend(
        f"- {escape(str(row.get('statement', '')))}"
        for row in knobs.values()
        if isinstance(row, dict)
    )
    skipped = power.get("not_applicable")
    if isinstance(skipped, dict):
        # from shards' verdict.json after a merge: text from an artifact, escaped
        out.extend(f"- {escape(str(knob))}: {escape(str(why))}" for knob, why in skipped.items())
    out.append("")
    return out


def _load_lines(verdict: Verdict) -> list[str]:
    """The slowdown each load arm reached, level by level, and whether it met the target."""
    if not verdict.load:
        return []
    out = ["## Slowdown the load arms reached\n"]
    out.append("| knob | level | runs | slowdown of the test |")
    out.append("|---|---|---:|---:|")
    plain: list[str] = []
    for knob, summary in verdict.load.items():
        if not isinstance(summary, dict):
            continue
        levels = summary.get("levels")
        for row in levels if isinstance(levels, list) else []:
            if not isinstance(row, dict):
                continue
            slowdown = row.get("slowdown")
            shown = "" if slowdown is None else f"{_number(slowdown, 0.0):.2f}x"
            out.append(
                f"| {_cell(knob)} | {_cell(row.get('level', ''))} | {_cell(row.get('runs', ''))} "
                f"| {shown} |"
            )
        name, target = escape(str(knob)), escape(str(summary.get("target")))
        final = summary.get("slowdown")
        if not summary.get("reached"):
            plain.append(
                f"- **{name} did not reach the {target}x target**: the test ran "
                + (
                    "with no measured slowdown"
                    if final is None
                    else f"{_number(final, 0.0):.2f}x slower"
                )
                + f" at the last level ({escape(str(summary.get('final_level', '')))}). This "
                "machine could not slow it that much, or the test's time is spent waiting "
                "rather than computing."
            )
        else:
            plain.append(f"- {name} reached {escape(str(final))}x (target {target}x).")
    out.append("")
    out.extend(plain)
    out.append("")
    return out


def _head_lines(verdict: Verdict) -> list[str]:
    """The verdict, whether it allows quarantine, why, and what it names."""
    allowed = "yes" if verdict.quarantine_allowed else "**no**"
    out = [
        f"# Stress verdict: {code(verdict.verdict)}\n",
        f"Test: {code(verdict.test_id)}\n",
        f"Quarantine allowed: {allowed}\n",
        f"**Why:** {escape(verdict.reason)}\n",
        f"**Rule that decided:** {escape(verdict.rule)}\n",
    ]
    if verdict.knob:
        description = KNOB_DESCRIPTIONS.get(verdict.knob, "")
        out.append(f"**Knob:** {code(verdict.knob)} — {description}\n")
    if verdict.polluter and verdict.order.get("kind") == "import":
        out.append(
            f"**Polluter:** {code(verdict.polluter)}, by being imported: collecting it fails "
            "the test, with none of its tests run\n"
        )
    elif verdict.polluter:
        out.append(f"**Polluter:** {code(verdict.polluter)}\n")
    if verdict.state_setter:
        setters = " + ".join(code(t) for t in verdict.state_setter)
        out.append(f"**State-setter** (it fails without it: brittle): {setters}\n")
    if verdict.seed is not None:
        out.append(f"**Seed:** {code(f'--randomly-seed={verdict.seed}')}\n")
    decides, replay = KINDS.get(str(verdict.seeds.get("kind"))), verdict.seeds.get("replay")
    if decides and isinstance(replay, str):
        out.append(f"**Seed:** {decides}; replay: {code(replay)}\n")
    entry = verdict.known_race_entry()
    if entry:
        out.append("## Known race pattern to record\n")
        out.append("Add this entry to the known-race-patterns list:\n")
        out.append(f"{code_block(entry, 'yaml')}\n")
    return out


def _evidence_lines(arms: list[Arm]) -> list[str]:
    """The chart and one table row per arm: the counts every decision was made on."""
    out = [
        "## Failure rate by arm\n",
        f"{code_block(text_chart(arms))}\n",
        "## Evidence\n",
        "| phase | knob | runs | failures | rate | 95% interval | upper bound (95%, one-sided) "
        "| p | p (adjusted) | processes × repeat "
        "| first runs in a process (failed/runs) | in-process repeats (failed/runs) |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|---|---:|---:|",
    ]
    for arm in arms:
        low, high = arm.interval
        knob = f"{arm.knob}@{arm.shard}" if arm.shard else arm.knob
        out.append(
            f"| {escape(arm.phase)} | {escape(knob)} | {arm.runs} | {arm.failures} "
            f"| {_percent(arm.rate)} "
            f"| {_percent(low)} – {_percent(high)} | {_percent(arm.upper)} "
            f"| {_p(arm.p_value)} | {_p(arm.p_adjusted)} | {arm.processes} × {arm.repeat} "
            f"| {arm.first_failures}/{arm.first_runs} | {arm.repeat_failures}/{arm.repeat_runs} |"
        )
    out.append("")
    return out


def _detail_lines(verdict: Verdict) -> list[str]:
    """The statistics, the non-idempotence, order and seed details, and the notes."""
    out: list[str] = []
    if verdict.statistics:
        out.append("## Statistics\n")
        out.extend(
            f"- {escape(str(key))}: {escape(str(value))}"
            for key, value in verdict.statistics.items()
        )
        out.append("")
    if verdict.non_idempotent:
        out.append("## Non-idempotent: it leaks state into itself\n")
        out.append(
            "It passes its first run in a fresh process and fails when repeated in the same "
            "process, so no later phase repeated it in-process.\n"
        )
        out.append(f"{code_block(json.dumps(verdict.non_idempotent, indent=2), 'json')}\n")
    if verdict.order:
        out.append("## Order phase\n")
        out.append(f"{code_block(json.dumps(verdict.order, indent=2), 'json')}\n")
    if verdict.seeds:
        out.append("## Seed phase\n")
        out.append(f"{code_block(json.dumps(verdict.seeds, indent=2), 'json')}\n")
    if verdict.notes:
        out.append("## Notes\n")
        out.extend(f"- {escape(note)}" for note in verdict.notes)
        out.append("")
    return out


def _failure_lines(failure: Optional[Failure]) -> list[str]:
    out = ["## First failing run\n"]
    if failure is None:
        out.append("No run failed.\n")
        return out
    out.append(
        f"Phase {code(failure.phase)}, knob {code(failure.knob)}, "
        f"process {escape(str(failure.process))}, iteration {escape(str(failure.iteration))}: "
        f"{escape(failure.message)}\n"
    )
    if failure.log:
        out.append(f"Output of that process: {code(failure.log)}\n")
    out.append(f"{code_block(failure.traceback)}\n")
    return out


def _reproduce_lines(arms: list[Arm]) -> list[str]:
    """One command per distinct arm command, to rerun the evidence without flakewarden."""
    out = [
        "## Reproduce by hand\n",
        "Each command runs the test once; the arm repeated it (processes × repeat above). "
        "Loop the command, or add `--count=N` when pytest-repeat is installed.\n",
    ]
    seen: set[str] = set()
    for arm in arms:
        if arm.command and arm.command not in seen:
            seen.add(arm.command)
            block = code_block(arm.command, "sh").replace("\n", "\n  ")
            out.append(f"- {escape(arm.phase)} / {escape(arm.knob)}:\n\n  {block}\n")
    return out


def _environment_lines(verdict: Verdict) -> list[str]:
    out = ["## Environment\n"]
    out.extend(
        f"- {escape(str(key))}: {escape(str(value))}" for key, value in verdict.environment.items()
    )
    out.append(f"- started: {escape(verdict.started_at)}")
    out.append(f"- finished: {escape(verdict.finished_at)}")
    out.append(f"- duration: {verdict.duration:.1f} s")
    out.append(f"- flakewarden: {escape(verdict.version)}")
    if verdict.launcher:
        mechanism = verdict.launcher.get("mechanism", "")
        note = verdict.launcher.get("note", "")
        shown = escape(str(mechanism)) + (f" ({escape(str(note))})" if note else "")
        out.append(f"- fresh processes: {shown}")
    if verdict.command:
        out.append(f"- test command: {code(shlex.join(verdict.command))}")
    if verdict.shards:
        out.append(f"- merged shards: {', '.join(escape(s) for s in verdict.shards)}")
    out.append("")
    return out


def _where_lines(verdict: Verdict) -> list[str]:
    """The lines to open, the first three first, then the rest in a table."""
    if not verdict.where:
        return []
    out = ["## Where to look\n"]
    suspects = verdict.suspects
    note = verdict.where.get("note")
    if isinstance(note, str) and note:
        out.append(f"{escape(note)}.\n")
    for suspect in suspects[:3]:
        out.append(
            f"- {code(suspect.location)}: {code(suspect.text)}, score {suspect.score:.2f}: "
            f"{escape(suspect.evidence)}"
        )
    if len(suspects) > 3:
        out += ["", "| line | code | score | evidence |", "|---|---|---|---|"]
        out += [
            f"| {table_code(s.location)} | {table_code(s.text)} | {s.score:.2f} | "
            f"{escape(s.evidence)} |"
            for s in suspects[3:]
        ]
    out.append("")
    return out


def render_markdown(verdict: Verdict) -> str:
    """``verdict.md``: the decision first, then the evidence a reviewer checks it against."""
    return "\n".join(
        [
            *_head_lines(verdict),
            *_where_lines(verdict),
            *_evidence_lines(verdict.arms),
            *_power_lines(verdict),
            *_load_lines(verdict),
            *_detail_lines(verdict),
            *_failure_lines(verdict.first_failure),
            *_reproduce_lines(verdict.arms),
            *_environment_lines(verdict),
        ]
    )
