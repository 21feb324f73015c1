"""An interleaving or a deadline: what a race's knob changed, told apart.

A refining phase after ``where``, for a ``race``. The load knobs only slow the test, so a
race they found is a deadline: the phase names the timeout, ``join``, ``wait_for`` or
sleep-then-assert the failing runs waited on (``cues.Source.deadline``) and its value. The
``yield`` knob both interleaves threads and slows them: the phase runs the test with the
pauses limited to the suspect lines (``FLAKEWARDEN_YIELD_LINES``), and with the pauses
limited to every other line it ran, each at the probability that gives as many pauses in
all as the knob gave. Pauses at a few lines that fail it where pauses elsewhere do not are
an interleaving at those lines (one-sided Fisher, p < 0.05); pauses elsewhere that fail it
too, on a test whose failing runs take no path the passing ones do not, follow the time
they add: a deadline, when one is found. Anything else is said as it is.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

from flakewarden.model.signatures import project_frames
from flakewarden.model.suspects import Suspect
from flakewarden.model.verdicts import RACE
from flakewarden.stress import cues, stats
from flakewarden.stress.arm import Arm, Sample
from flakewarden.stress.cues import Sources
from flakewarden.stress.knobs import YIELD_PROBABILITY
from flakewarden.stress.load import LOAD_KNOBS
from flakewarden.stress.phase import Finding, PhaseContext, PhaseEvidence, PhaseResult
from flakewarden.stress.runs import NO_RANDOMLY, Job
from flakewarden.stress.where import MIN_SECONDS, SHARE

MAX_PROBABILITY = 0.2  # pauses limited to a few lines: never at every opcode
SUSPECTS = 3  # the lines the pauses are limited to
WANTED = 40  # runs per arm
PROCESSES = 2  # per arm and round
ROUNDS = 3


def applies(ctx: PhaseContext) -> bool:
    finding = ctx.finding
    if finding is None or finding.verdict != RACE or finding.knob not in ("yield", *LOAD_KNOBS):
        return False
    return bool(counted(ctx.arms))


def counted(arms: Sequence[Arm]) -> list[Sample]:
    """The where phase's runs, with their line counts."""
    return [s for a in arms if a.phase == "where" for s in a.samples if s.lines is not None]


def interleaving_phase(ctx: PhaseContext) -> PhaseResult:
    """Tell the race's knob apart; the finding comes back with ``timing`` (and its seconds)."""
    started = ctx.budget.elapsed()
    result = _told_apart(ctx)
    if result.finding is None or not result.finding.timing:
        return result
    timing = {**result.finding.timing, "seconds": round(ctx.budget.elapsed() - started, 3)}
    return dataclasses.replace(result, finding=dataclasses.replace(result.finding, timing=timing))


def _told_apart(ctx: PhaseContext) -> PhaseResult:
    found = PhaseEvidence(ctx)
    finding = ctx.finding
    assert finding is not None
    runs = counted(ctx.arms)
    source = Sources(ctx.probe.rootdir)

    deadline = _deadline(ctx, runs, source)
    if finding.knob in LOAD_KNOBS:
        timing = {"kind": "deadline", "by": f"the {finding.knob} knob only slows the test"}
        return found.result(_as_deadline(finding, timing, deadline))
    chosen = _suspect_lines(finding, runs, source)
    if not chosen:
        found.note("interleaving: no suspect line to limit the pauses to")
        return found.result()
    at, elsewhere = _limited_runs(ctx, found, runs, chosen)
    p = stats.fisher_greater(elsewhere.failures, elsewhere.runs, at.failures, at.runs)
    counts: dict[str, Any] = {
        "lines": [f"{f}:{n}" for f, n in chosen],
        "at_lines": {"runs": at.runs, "failures": at.failures},
        "elsewhere": {"runs": elsewhere.runs, "failures": elsewhere.failures},
        "p_value": p,
    }
    shown = ", ".join(f"{f}:{n}" for f, n in chosen)
    said = (
        f"pauses at {shown} alone failed it {at.failures}/{at.runs} runs, pauses elsewhere "
        f"(as many in all) {elsewhere.failures}/{elsewhere.runs}"
    )
    if p < stats.ALPHA and at.rate > elsewhere.rate:
        chosen, alone = _narrowed(ctx, found, runs, chosen, elsewhere)
        if alone:
            counts["alone"] = alone
            said = (
                "; ".join(
                    f"pauses at {line} alone failed it {c['failures']}/{c['runs']} runs"
                    for line, c in alone.items()
                )
                + f", pauses elsewhere (as many in all) {elsewhere.failures}/{elsewhere.runs}"
            )
        counts["lines"] = [f"{f}:{n}" for f, n in chosen]
        timing = {"kind": "interleaving", **counts}
        reason = f"{finding.reason.rstrip('.')}; {said}: an interleaving at those lines"
        where = confirmed(finding.where, chosen, said, source)
        return found.result(dataclasses.replace(finding, reason=reason, timing=timing, where=where))
    diverges = any(_diverges(s) for s in suspects_of(finding.where))
    if elsewhere.failures and not diverges and deadline is not None:
        timing = {"kind": "deadline", "by": said, **counts}
        return found.result(_as_deadline(finding, timing, deadline))
    found.note(
        f"interleaving: {said}: not told apart from a wide window or the time the pauses add"
    )
    timing = {"kind": "not shown", **counts}
    return found.result(dataclasses.replace(finding, timing=timing))


def suspects_of(where: Mapping[str, Any]) -> list[Suspect]:
    found = where.get("suspects") or []
    return [Suspect.from_json(s) for s in found if isinstance(s, dict)]


def _diverges(suspect: Suspect) -> bool:
    """The failing runs took a path the passing ones did not (a spectrum near 1)."""
    return suspect.parts.get("spectrum", 0.0) >= 0.99


def _suspect_lines(finding: Finding, runs: Sequence[Sample], source: Any) -> list[tuple[str, int]]:
    """At most ``SUSPECTS`` lines: the where phase's suspects found by spectrum or cue, then
    the busiest writes of shared state the runs executed (a traceback alone names no race)."""
    found = [
        (s.file, s.line)
        for s in suspects_of(finding.where)
        if s.parts.get("spectrum", 0.0) > 0 or s.parts.get("cue", 0.0) > 0
    ]
    ran = sorted({(f, n) for s in runs if s.lines for f, lines in s.lines.items() for n in lines})
    writes = [(f, n) for f, n in ran if cues.WRITE in source(f).cues.get(n, set())]
    busiest = sorted(writes, key=lambda key: -mean_count(runs, key))
    return list(dict.fromkeys([*found, *busiest]))[:SUSPECTS]


def mean_count(runs: Sequence[Sample], key: tuple[str, int]) -> float:
    file, line = key
    total = sum((s.lines or {}).get(file, {}).get(line, 0) for s in runs)
    return total / len(runs) if runs else 0.0


def _limited_runs(
    ctx: PhaseContext, found: PhaseEvidence, runs: Sequence[Sample], chosen: list[tuple[str, int]]
) -> tuple[Arm, Arm]:
    """Pauses at the chosen lines only, and at every other line the runs executed."""
    ran = {(f, n) for s in runs if s.lines for f, lines in s.lines.items() for n in lines}
    rest = sorted(ran - set(chosen))
    ctx.say(f"interleaving: pauses at {len(chosen)} suspect line(s), then at the other {len(rest)}")
    arms = pause_arms(ctx, found, runs, {"at-suspects": chosen, "elsewhere": rest})
    return arms["at-suspects"], arms["elsewhere"]


def pause_arms(
    ctx: PhaseContext,
    found: PhaseEvidence,
    runs: Sequence[Sample],
    limits: Mapping[str, Sequence[tuple[str, int]]],
    limited: Optional[Callable[[Sequence[tuple[str, int]]], dict[str, str]]] = None,
    phase: str = "interleaving",
) -> dict[str, Arm]:
    """One arm per named set of lines, the knob limited to it: by default the ``yield``
    knob's pauses, as many in all as the knob's; ``limited`` gives another knob's variables."""
    ran = {(f, n) for s in runs if s.lines for f, lines in s.lines.items() for n in lines}
    every = sum(mean_count(runs, key) for key in ran) or 1.0

    def pauses(lines: Sequence[tuple[str, int]]) -> dict[str, str]:
        share = sum(mean_count(runs, key) for key in lines)
        probability = min(MAX_PROBABILITY, YIELD_PROBABILITY * every / max(share, 1.0))
        seed = random.SystemRandom().randrange(1, 2**31)
        return {
            "FLAKEWARDEN_YIELD": f"{seed}:{probability:.6g}",
            "FLAKEWARDEN_YIELD_LINES": ",".join(f"{f}:{n}" for f, n in lines),
        }

    env = limited or pauses
    repeat = max(1, min(20, WANTED // (PROCESSES * ROUNDS)))
    arms = {name: Arm(phase, name) for name in limits}
    found.arms.extend(arms.values())
    for round_number in range(ROUNDS):
        if all(a.runs >= WANTED for a in arms.values()):
            break
        if round_number and out_of_time(ctx):  # the first round always runs
            break
        jobs = [
            Job(phase, name, [ctx.test_id], repeat, NO_RANDOMLY, env(lines))
            for name, lines in limits.items()
            for _ in range(PROCESSES)
        ]
        results = ctx.run(jobs, ctx.options.cores)
        for index, name in enumerate(limits):
            part = results[index * PROCESSES : (index + 1) * PROCESSES]
            arms[name] = found.tally(arms[name], part)
    return arms


def out_of_time(ctx: PhaseContext) -> bool:
    """The localisation's share of the time is spent (shared with the where phase).

    A quarter of the time the verdict took before the localisation, at least ``MIN_SECONDS``.
    """
    before = float(ctx.finding.where.get("before", 0.0)) if ctx.finding is not None else 0.0
    allowed = max(MIN_SECONDS, SHARE * before)
    return ctx.budget.spent() or ctx.budget.elapsed() > before + allowed


def _narrowed(
    ctx: PhaseContext,
    found: PhaseEvidence,
    runs: Sequence[Sample],
    chosen: list[tuple[str, int]],
    elsewhere: Arm,
) -> tuple[list[tuple[str, int]], dict[str, dict[str, int]]]:
    """The fewest of the chosen lines whose pauses alone fail it: each line alone, confirmed.

    When no line alone does (the interleaving needs pauses at two of them), the set stays.
    """
    if len(chosen) < 2 or out_of_time(ctx):
        return chosen, {}
    names = {f"at {f}:{n}": (f, n) for f, n in chosen}
    ctx.say(f"interleaving: pauses at each of the {len(chosen)} lines alone")
    arms = pause_arms(ctx, found, runs, {name: [line] for name, line in names.items()})
    kept = {
        name: arm
        for name, arm in arms.items()
        if arm.rate > elsewhere.rate
        and stats.fisher_greater(elsewhere.failures, elsewhere.runs, arm.failures, arm.runs)
        < stats.ALPHA
    }
    if not kept:
        return chosen, {}
    alone = {name[3:]: {"runs": a.runs, "failures": a.failures} for name, a in kept.items()}
    return [names[name] for name in kept], alone


def _deadline(ctx: PhaseContext, runs: Sequence[Sample], source: Any) -> Optional[dict[str, Any]]:
    """The deadline the failure went through (a traceback frame), else the waits with a
    deadline that every failing run ran, the most often run first (at most three)."""
    failing = [s for s in runs if s.failed and s.lines]
    text = ctx.first_failure.traceback if ctx.first_failure is not None else ""
    for file, line in reversed([(f.replace("\\", "/"), n) for f, n in project_frames(text)]):
        value = source(file).deadline(line)
        if value:
            return {
                "file": file,
                "line": line,
                "text": source(file).text(line),
                "value": value,
                "raised": True,
                "others": [],
            }
    ran = {(f, n) for s in failing for f, lines in (s.lines or {}).items() for n in lines}
    every = [
        key
        for key in sorted(ran)
        if source(key[0]).deadline(key[1])
        and all((s.lines or {}).get(key[0], {}).get(key[1]) for s in failing)
    ]
    if not every:
        return None
    ranked = sorted(every, key=lambda key: -mean_count(failing, key))[:3]
    file, line = ranked[0]
    others = [f"{f}:{n} ({source(f).deadline(n)})" for f, n in ranked[1:]]
    return {
        "file": file,
        "line": line,
        "text": source(file).text(line),
        "value": source(file).deadline(line),
        "raised": False,
        "others": others,
        "failing_runs": len(failing),
    }


def _as_deadline(
    finding: Finding, timing: dict[str, Any], deadline: Optional[dict[str, Any]]
) -> Finding:
    """The race explained as a deadline: how slowly it runs decides, and the waits it ran."""
    by = timing.get("by", "")
    if deadline is None:
        reason = (
            f"{finding.reason.rstrip('.')}; its failures follow how slowly it runs ({by}), "
            "not an interleaving: a deadline or a wait too short under load, though no wait "
            "with a deadline ran in every failing run"
        )
        return dataclasses.replace(finding, reason=reason, timing=timing)
    place = f"{deadline['file']}:{deadline['line']}"
    if deadline["raised"]:
        which = f"the wait that expired, in the failure's traceback, is at {place}"
        said = f"the deadline the failure went through: {deadline['value']}"
    else:
        which = f"every failing run waited with a deadline at {place}"
        said = (
            f"a wait with a deadline ({deadline['value']}) that each of the "
            f"{deadline['failing_runs']} failing runs ran"
        )
        if deadline["others"]:
            which += f" (and at {', '.join(deadline['others'])})"
    reason = (
        f"a deadline too short under load, not an interleaving: its failures follow how "
        f"slowly it runs ({by}); {which}, {deadline['value']}: give it slack, or wait on "
        f"the event rather than the clock. The knob: {finding.reason}"
    )
    suspect = Suspect(
        deadline["file"], deadline["line"], deadline["text"], 1.0, said, {"deadline": 1.0}
    )
    rest = [
        s for s in suspects_of(finding.where) if (s.file, s.line) != (suspect.file, suspect.line)
    ]
    where = {**finding.where, "suspects": [s.to_json() for s in [suspect, *rest]]}
    timing = {**timing, "deadline": deadline}
    return dataclasses.replace(finding, reason=reason, timing=timing, where=where)


def confirmed(
    where: Mapping[str, Any], chosen: Sequence[tuple[str, int]], said: str, source: Any
) -> dict[str, Any]:
    """The suspects the limited pauses confirmed, first, with that evidence."""
    suspects = {(s.file, s.line): s for s in suspects_of(where)}
    marked = []
    for file, line in chosen:
        known = suspects.pop((file, line), None)
        if known is None:
            known = Suspect(file, line, source(file).text(line), 0.0, "", {})
        evidence = f"{known.evidence}; {said}" if known.evidence else said
        parts = {**known.parts, "replay": 1.0}
        marked.append(known._replace(score=known.score + 1.0, evidence=evidence, parts=parts))
    others = list(suspects.values())
    return {**where, "suspects": [s.to_json() for s in [*marked, *others]]}
