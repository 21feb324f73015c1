"""The where phase: the lines to open, for every verdict with failures.

A refining phase (``engine.REFINERS``): it reads the finding and the evidence, runs a few
targeted processes that count the lines each run executed (``FLAKEWARDEN_LINES``), under
what made the test fail (the failing and the passing seeds, the knob that found a race,
the polluter, in-process repeats, or the baseline), and ranks the lines of the project's
code (test code included) by three kinds of evidence:

- the *spectrum* of failing against passing runs (``spectra``): a line only failing runs
  take, or one they run more often;
- a *cue* of the cause's kind in the line's code (``cues``): a set for the hash seed, a
  draw for the random seed, a write to shared state for a race, an ``await`` for an
  asyncio race, a deadline for a load knob;
- the failure's *traceback* (``model.signatures.project_frames``): where it was raised.

The targeted runs take at most ``SHARE`` of the time the phases before them took (never
less than ``MIN_SECONDS``), within the budget. A line is a suspect at ``THRESHOLD`` or
above; when none is, the verdict says that nothing stands out instead of ranking noise.
A test that never failed gets no ``where`` and costs nothing here.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping, Sequence

from flakewarden.model.records import TestRecord
from flakewarden.model.signatures import project_frames
from flakewarden.model.suspects import THRESHOLD, Suspect
from flakewarden.model.verdicts import NOT_REPRODUCIBLE, ORDER_DEPENDENT, RACE
from flakewarden.stress import cues, polluted
from flakewarden.stress.arm import Arm, Sample
from flakewarden.stress.cues import Source, Sources
from flakewarden.stress.draws import replay_job
from flakewarden.stress.isolation import REPEAT_RUNS
from flakewarden.stress.knobs import knob_env
from flakewarden.stress.phase import PhaseContext, PhaseEvidence, PhaseResult
from flakewarden.stress.runs import NO_RANDOMLY, Job
from flakewarden.stress.spectra import LineScore, score_lines

SHARE = 0.25  # of the time spent before: "in under a quarter more time"
MIN_SECONDS = 10.0
SHOWN = 10  # suspects kept in the verdict
WANTED = 6  # failing and passing runs with line counts that end the targeted runs
ENOUGH_RUNS = 200  # counted runs after which the targeted runs end, whatever their outcomes
MAX_ROUNDS = 10
LINES = {"FLAKEWARDEN_LINES": "1"}
STATE = {"FLAKEWARDEN_STATE": "1"}
CUE_WEIGHT = 0.3
SEED_CUE_WEIGHT = 0.6  # a seed the replays confirmed: a line with its cue is direct evidence
TRACEBACK_WEIGHT = 0.1
WHOLE_FUNCTION = 0.05  # a line whose whole function diverges: the divergence began earlier
# The cues that fit each cause.
RACE_CUES = {
    "yield": (cues.WRITE,),
    "switch-interval": (cues.WRITE,),
    "asyncio": (cues.AWAIT, cues.WRITE),
    "cpu-load": (cues.DEADLINE,),
    "throttle": (cues.DEADLINE,),
}
SEED_CUES = {"random": (cues.DRAW,), "hash": (cues.SET,), "either": (cues.DRAW, cues.SET)}


def applies(ctx: PhaseContext) -> bool:
    """A finding, and some run failed: a test that never failed gets no ``where``."""
    finding = ctx.finding
    if finding is None or finding.verdict == NOT_REPRODUCIBLE:
        return False
    return any(arm.failures for arm in ctx.arms)


def _kind_cues(ctx: PhaseContext) -> tuple[str, ...]:
    finding = ctx.finding
    assert finding is not None
    if finding.verdict == RACE:
        return RACE_CUES.get(finding.knob or "", ())
    return SEED_CUES.get(str(finding.seeds.get("kind") or ""), ())


def _targeted_jobs(ctx: PhaseContext, repeat: int) -> tuple[list[Job], int]:
    """Processes that make the test fail and pass as it did, and the load to run them under."""
    finding = ctx.finding
    assert finding is not None
    test = [ctx.test_id]
    seeds = finding.seeds
    failing, passing = seeds.get("failing"), seeds.get("passing")
    if isinstance(failing, dict) and isinstance(passing, dict):  # the draws phase's seeds
        runs = [
            (int(pair["random_seed"]), int(pair["hash_seed"]), int(pair.get("run", 1)) - 1)
            for pair in (failing, passing)
        ] * 2
        return [replay_job(ctx, "where", "seeds", seeds, **LINES) for seeds in runs], 0
    if finding.seed is not None and seeds.get("failing_seeds"):  # pytest-randomly's
        tried = [int(s) for s in seeds.get("seeds_tried", [])]
        good = next((s for s in tried if s not in seeds["failing_seeds"]), None)
        chosen = [finding.seed] + ([good] if good is not None else [])
        return [
            Job("where", "seed", test, 1, ["-p", "randomly", f"--randomly-seed={s}"], dict(LINES))
            for s in chosen * 2
        ], 0
    if finding.verdict == ORDER_DEPENDENT and finding.polluter:
        before = finding.polluter.split(" + ")
        env = {**LINES, **STATE}  # and what each run leaves behind (``polluted``)
        ordered = Job("where", "order", [*before, ctx.test_id], 1, NO_RANDOMLY, env, True)
        alone = Job("where", "alone", test, 1, NO_RANDOMLY, dict(LINES))
        return [ordered, alone] * 2, 0
    knob = finding.knob if finding.verdict == RACE else None
    burn = ctx.options.cores if knob == "cpu-load" else 0
    draw = random.SystemRandom()
    # A test that leaks into its own repeats: what its first run leaves behind (``polluted``)
    own = STATE if ctx.facts.non_idempotent and knob is None else {}
    return [
        Job(
            "where",
            knob or "baseline",
            test,
            repeat,
            NO_RANDOMLY,
            {**LINES, **own, **knob_env(knob or "", draw.randrange(1, 2**31))},
        )
        for _ in range(2)
    ], burn


def _repeat(ctx: PhaseContext) -> int:
    """Runs per process: about a second's worth at the probe's pace, counted lines' cost aside.

    For a test that leaks state into itself, the isolation's repeats: its first run passes
    and its repeats fail, and the lines that differ are where it leaks.
    """
    if ctx.facts.non_idempotent:
        return REPEAT_RUNS
    return max(1, min(50, int(1.0 / max(ctx.probe.test_seconds, 1e-3))))


def where_phase(ctx: PhaseContext) -> PhaseResult:
    """Targeted runs with line counts, within the share; the ranked suspects in the finding."""
    found = PhaseEvidence(ctx)
    finding = ctx.finding
    assert finding is not None
    spent_before = ctx.budget.elapsed()
    allowed = min(max(MIN_SECONDS, SHARE * spent_before), max(0.0, ctx.budget.left()))
    deadline = spent_before + allowed
    arm = Arm("where", "lines")
    found.arms.append(arm)
    ctx.say(f"where: counting the lines each run executes, within {allowed:.0f} s")
    jobs, burn = _targeted_jobs(ctx, _repeat(ctx))
    polluter_runs: list[list[TestRecord]] = []  # each ordered replay's polluter records
    for _ in range(MAX_ROUNDS):
        if ctx.budget.elapsed() >= deadline:
            break
        results = ctx.run(jobs, ctx.options.cores, burn)
        polluter_runs += [
            [t for t in r.results.tests if t.id != ctx.test_id]
            for r in results
            if r.job.knob == "order"
        ]
        polluter_runs += [  # a leak into its own repeats: its first run is the polluter
            [t for t in r.results.tests if t.id == ctx.test_id and t.iteration == 0]
            for r in results
            if "FLAKEWARDEN_STATE" in r.job.env and r.job.knob != "order"
        ]
        if jobs[0].knob == "seeds":  # replays of one run each: that run alone counts
            results = [r.at_iteration(r.job.repeat - 1) for r in results]
        arm = found.tally(arm, results)
        runs = [s for s in arm.samples if s.lines is not None]
        if sum(s.failed for s in runs) >= WANTED and sum(not s.failed for s in runs) >= WANTED:
            break
        if runs and all(s.failed for s in runs) and len(runs) >= WANTED // 2:
            break  # it fails every time here: the traceback and the failing path are the evidence
        if len(runs) >= ENOUGH_RUNS:
            break  # one side stays rare: compare what there is
    suspects, note = localise(ctx, arm.samples, _kind_cues(ctx))
    left: list[polluted.Left] = []
    if polluter_runs:
        left, suspects, note = _with_state(ctx, polluter_runs, arm.samples, suspects, note)
    found.note(f"where: {note}")
    where = {
        "suspects": [s.to_json() for s in suspects],
        "note": note,
        "runs": {
            "failing": sum(s.failed for s in arm.samples if s.lines is not None),
            "passing": sum(not s.failed for s in arm.samples if s.lines is not None),
        },
        "threshold": THRESHOLD,
        "rootdir": str(ctx.probe.rootdir),  # the suspects' files are relative to it
        "seconds": round(ctx.budget.elapsed() - spent_before, 3),
        "before": round(spent_before, 3),  # the verdict's own time: the refiners' share of it
    }
    if not left:
        return found.result(dataclasses.replace(finding, where=where))
    where["state"] = [x.to_json() for x in left]
    who = "it leaves behind" if finding_is_order(ctx) else "its first run leaves behind"
    reason = f"{finding.reason}; {who} {left[0].describe()}"
    return found.result(dataclasses.replace(finding, where=where, reason=reason))


def finding_is_order(ctx: PhaseContext) -> bool:
    return ctx.finding is not None and ctx.finding.verdict == ORDER_DEPENDENT


def _with_state(
    ctx: PhaseContext,
    polluter_runs: Sequence[Sequence[TestRecord]],
    samples: Sequence[Sample],
    suspects: list[Suspect],
    note: str,
) -> tuple[list[polluted.Left], list[Suspect], str]:
    """The polluter's leftovers first: the lines that wrote them lead the suspects."""
    polluter_lines: dict[str, dict[int, int]] = {}
    for records in polluter_runs:
        for record in records:
            for file, counts in (record.lines or {}).items():
                into = polluter_lines.setdefault(file, {})
                for line, count in counts.items():
                    into[line] = into.get(line, 0) + count
    victim_lines: dict[str, dict[int, int]] = {}
    for sample in samples:
        if sample.failed and sample.lines:
            for name, ran in sample.lines.items():
                victim_lines.setdefault(name, {}).update(ran)
    source = Sources(ctx.probe.rootdir)

    left, writers = polluted.localise(polluter_runs, polluter_lines, victim_lines, source)
    if not left:
        return [], suspects, f"{note}; the replays changed no shared state taken"
    taken = {s.location for s in writers}
    merged = [*writers, *(s for s in suspects if s.location not in taken)][:SHOWN]
    who = "the polluter" if finding_is_order(ctx) else "its first run in a process"
    said = f"{who} leaves behind {len(left)} change(s) in shared state"
    return left, merged, f"{said}; {note}"


def localise(
    ctx: PhaseContext, samples: Sequence[Sample], kind_cues: Sequence[str]
) -> tuple[list[Suspect], str]:
    """The ranked suspects and a sentence on how they were found."""
    counted = [s for s in samples if s.lines is not None]
    failing = [s.lines for s in counted if s.failed and s.lines is not None]
    passing = [s.lines for s in counted if not s.failed and s.lines is not None]
    traceback = _traceback_lines(ctx)
    if not failing:
        return [], (
            f"no targeted run failed ({len(passing)} passed with their lines counted): "
            "nothing to compare"
        )
    rootdir = ctx.probe.rootdir
    source = Sources(rootdir)

    if not passing:
        return _raised(traceback, failing, source)
    scored = score_lines(failing, passing)
    weight = SEED_CUE_WEIGHT if _seeded(ctx) else CUE_WEIGHT
    frames = set(traceback)
    suspects = [
        _suspect(line, source(line.file), scored, kind_cues, weight, frames) for line in scored
    ]
    ranked = sorted(suspects, key=lambda s: (-s.score, s.file, s.line))
    kept = [s for s in ranked if s.score >= THRESHOLD][:SHOWN]
    base = f"{len(failing)} failing and {len(passing)} passing runs with their lines counted"
    if not kept:
        best = ranked[0].score if ranked else 0.0
        return [], f"no line stands out (best score {best:.2f} < {THRESHOLD}) in {base}"
    return kept, f"{len(kept)} suspect line(s) from {base}"


def _traceback_lines(ctx: PhaseContext) -> list[tuple[str, int]]:
    """The project's frames of the first failure's traceback, innermost last."""
    text = ctx.first_failure.traceback if ctx.first_failure is not None else ""
    return project_frames(text)


def _suspect(
    line: LineScore,
    source: Source,
    scored: Sequence[LineScore],
    kind_cues: Sequence[str],
    weight: float,
    traceback: set[tuple[str, int]],
) -> Suspect:
    parts = {"spectrum": line.score}
    said = [line.says()]
    matched = [c for c in kind_cues if c in source.cues.get(line.line, set())]
    if matched:
        parts["cue"] = weight
        said.append(cues.SAYS[matched[0]])
    if (line.file, line.line) in traceback:
        parts["traceback"] = TRACEBACK_WEIGHT
        said.append("in the failure's traceback")
    if line.score > 0 and _whole_function(line, source, scored):
        parts["whole_function"] = -WHOLE_FUNCTION
        said.append("its whole function diverges: the divergence began at its call")
    score = max(0.0, sum(parts.values()))
    return Suspect(line.file, line.line, source.text(line.line), score, "; ".join(said), parts)


def _seeded(ctx: PhaseContext) -> bool:
    """The cause is a seed the replays confirmed: a line with its cue is direct evidence."""
    return ctx.finding is not None and bool(ctx.finding.seeds.get("kind"))


def _raised(
    traceback: Sequence[tuple[str, int]],
    failing: Sequence[Mapping[str, Mapping[int, int]]],
    source: Callable[[str], Source],
) -> tuple[list[Suspect], str]:
    """No passing run to compare: the lines the failure was raised through, innermost first."""
    suspects = []
    for depth, (file, line) in enumerate(reversed(traceback)):
        ran = sum(1 for run in failing if run.get(file, {}).get(line))
        score = max(0.0, 1.0 - 0.1 * depth)
        said = "where the failure was raised" if depth == 0 else f"its caller, {depth} frame(s) out"
        evidence = f"{said}; ran in {ran}/{len(failing)} failing runs, and no run passed"
        suspects.append(
            Suspect(file, line, source(file).text(line), score, evidence, {"traceback": score})
        )
    kept = [s for s in suspects if s.score >= THRESHOLD][:SHOWN]
    if not kept:
        return [], "every targeted run failed, and its traceback holds no line of the project's"
    return kept, (
        f"every one of {len(failing)} targeted runs failed: the lines it was raised through"
    )


def _whole_function(line: LineScore, source: Source, scored: Sequence[LineScore]) -> bool:
    span = source.function_of(line.line)
    if span is None:
        return False
    same = [s for s in scored if s.file == line.file and span[0] <= s.line <= span[1]]
    return bool(same) and all(s.exclusive for s in same)
