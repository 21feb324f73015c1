"""The order phase's import side: a test broken by what collecting another module does.

pytest imports every collected module before it runs any test, so a module that
changes shared state when it is imported (a setting chosen at import, a
module-level ``configure()``, a patch at module scope) fails its victim whenever
it is collected, whatever runs first: ``-k victim`` over the suite, every xdist
worker, a shard. Two ways lead here from the order phase (``order``):

- the predecessors' replay fails the test and bisects to a polluter, but
  collecting the polluter's module alone, running only the test, fails it too:
  the module's import pollutes, not the test's run (``from_polluters``);
- the recorded run failed the test, and replaying its predecessors does not
  (or none ran before it): the collection of the command is replayed, running
  only the test, and a failure there is bisected over the collected modules
  (``from_collection``).

Either way the pair *module collected, test* is confirmed in fresh processes
against isolation (which collects only the test's own file) with a one-sided
Fisher test of failures. Every process collects the given paths and the plugin
runs only the test (``FLAKEWARDEN_SELECT``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Optional

from flakewarden.model import RunReport
from flakewarden.model.verdicts import ORDER_DEPENDENT
from flakewarden.runner.pytest_args import test_file
from flakewarden.stress import stats
from flakewarden.stress.bisection import ORDER_CONFIRM, ORDER_REPLAYS, bisect
from flakewarden.stress.knobs import ALL_KNOBS
from flakewarden.stress.phase import Finding, PhaseContext, PhaseEvidence, also_non_idempotent
from flakewarden.stress.runs import NO_RANDOMLY, Job, JobResult
from flakewarden.stress.verdict import Arm

TIMING_KNOBS = {knob: i for i, knob in enumerate(ALL_KNOBS)}  # as the timing phase runs them


def recorded_failure(report: RunReport, test_id: str, source: object) -> str:
    """How the test failed in the recorded run (``it failed attempt 1 of 2 ...``), or ''."""
    result = next((t for t in report.tests if t.id == test_id), None)
    if result is None or not result.failures:
        return ""
    first = result.failures[0]
    runs = len(result.attempts)
    message = f": {first.message}" if first.message else ""
    return (
        f"it failed in its recorded run ({source}, attempt {first.attempt} of {runs}, "
        f"outcome {result.outcome.value}{message})"
    )


def _own_file(ctx: PhaseContext) -> str:
    return test_file(ctx.test_id)


def _absolute(ctx: PhaseContext, modules: Sequence[str]) -> list[str]:
    return [str(ctx.probe.rootdir / module) for module in modules]


def _collecting(
    ctx: PhaseContext, found: PhaseEvidence, paths: Sequence[str], arm: Arm, processes: int
) -> tuple[Arm, bool, list[JobResult]]:
    """Collect ``paths``, run only the test, ``processes`` times: the arm grown, more failures?"""
    jobs = [
        Job("order", arm.knob, [ctx.test_id], 1, NO_RANDOMLY, collect=list(paths))
        for _ in range(processes)
    ]
    results = ctx.run(jobs, ctx.options.cores)
    grown = found.tally(arm, results)
    return grown, grown.failures > arm.failures, results


def _with_modules(
    ctx: PhaseContext, found: PhaseEvidence, modules: Sequence[str], arm: Arm
) -> tuple[Arm, bool]:
    """The modules collected before the test's own file, only the test run."""
    paths = _absolute(ctx, [*modules, _own_file(ctx)])
    grown, failed, _ = _collecting(ctx, found, paths, arm, ORDER_REPLAYS)
    return grown, failed


def from_polluters(
    ctx: PhaseContext, found: PhaseEvidence, polluters: Sequence[str], detail: dict[str, object]
) -> Optional[Finding]:
    """The import verdict when collecting the polluters' modules, not running them, fails it.

    None when it does not (their run is what pollutes), when there is no other module
    to collect (a polluter in the test's own file is collected in isolation too), or
    when the module's pair does not confirm: the executed pair is confirmed then.
    """
    own = _own_file(ctx)
    modules = list(dict.fromkeys(test_file(p) for p in polluters))
    modules = [m for m in modules if m != own and (ctx.probe.rootdir / m).is_file()]
    if not modules or ctx.probe.split is None:
        return None
    ctx.say(f"order: collecting {', '.join(modules)} without running its tests")
    check = Arm("order", "polluter-collected-only", command=ctx.reproduce([ctx.test_id, *modules]))
    found.arms.append(check)
    check, polluted = _with_modules(ctx, found, modules, check)
    detail["collected_only"] = {"modules": modules, "runs": check.runs, "failures": check.failures}
    if not polluted:
        return None
    detail["executed_polluters"] = list(polluters)
    found.note(
        f"order: bisection ended at {' + '.join(polluters)}, but collecting "
        f"{', '.join(modules)} without running any of its tests failed it too "
        f"({check.failures}/{check.runs}): the module's import pollutes, not the test's run"
    )
    return _bisect_and_confirm(ctx, found, modules, detail)


def from_collection(
    ctx: PhaseContext, found: PhaseEvidence, recorded: str, detail: dict[str, object]
) -> Optional[Finding]:
    """A recorded failure the predecessors do not explain: replay the collection, bisect it."""
    if not recorded:
        return None
    if ctx.probe.split is None:
        found.note(
            "order: the command does not start pytest directly, so the recorded run's "
            "collection could not be replayed apart from its runs"
        )
        return None
    if ctx.probe.narrowed:
        found.note(
            "order: the recorded run's collection was not replayed, so no module's import "
            "was searched: what the command collects does not collect (see the narrowed "
            "collection above)"
        )
        return None
    paths = _recorded_collection(ctx)
    ctx.say("order: collecting what the command collects, running only the test")
    replayed = Arm("order", "recorded-collection", command=_collection_command(ctx, paths))
    found.arms.append(replayed)
    replayed, failed, results = _collecting(ctx, found, paths, replayed, ORDER_REPLAYS + 1)
    own = _own_file(ctx)
    collected = next((r.results.collected_files for r in results if r.results.collected_files), [])
    modules = [m for m in collected or [] if m != own]
    detail["collection"] = {
        "paths": paths,
        "modules": len(modules),
        "runs": replayed.runs,
        "failures": replayed.failures,
    }
    if not replayed.runs:
        found.note("order: the command's collection does not include the test")
        return None
    if not failed:
        found.note(
            f"order: collecting the command's {len(collected or [])} modules and running only "
            f"the test did not reproduce either ({replayed.failures}/{replayed.runs})"
        )
        return None
    if not modules:
        found.note("order: the collection failed it, but it holds no module besides its own")
        return None
    ctx.say(f"order: bisecting the {len(modules)} other collected modules")
    return _bisect_and_confirm(ctx, found, modules, detail)


def _recorded_collection(ctx: PhaseContext) -> list[str]:
    """The command's positional arguments, absolute; [] when it gives none (pytest's default)."""
    return [str(ctx.options.cwd / p) for p in ctx.probe.positionals]


def _collection_command(ctx: PhaseContext, paths: Sequence[str]) -> str:
    """Collect what the command collects and keep the test by name (``-k``), by hand."""
    name = ctx.test_id.rsplit("::", 1)[-1].split("[", 1)[0]
    where = list(paths) or ([] if ctx.options.cwd == ctx.probe.rootdir else [str(ctx.options.cwd)])
    return ctx.reproduce([*where, "-k", name])


def _bisect_and_confirm(
    ctx: PhaseContext, found: PhaseEvidence, modules: Sequence[str], detail: dict[str, object]
) -> Optional[Finding]:
    candidates, detail["module_bisection"] = bisect(
        ctx, modules, lambda subset, arm: _with_modules(ctx, found, subset, arm)
    )
    return _confirm(ctx, found, candidates, detail)


def _confirm(
    ctx: PhaseContext, found: PhaseEvidence, modules: list[str], detail: dict[str, object]
) -> Optional[Finding]:
    """The module collected and the test run, in fresh processes, against isolation."""
    isolation = ctx.facts.isolation
    assert isolation is not None
    polluter = " + ".join(modules)
    confirm = Arm("order", "module-collected", command=ctx.reproduce([ctx.test_id, *modules]))
    found.arms.append(confirm)
    paths = _absolute(ctx, [*modules, _own_file(ctx)])
    confirm, _, _ = _collecting(ctx, found, paths, confirm, ORDER_CONFIRM)
    p = stats.fisher_greater(isolation.failures, isolation.runs, confirm.failures, confirm.runs)
    confirm = found.replace(confirm, dataclasses.replace(confirm, p_value=p))
    counts = {"modules": modules, "runs": confirm.runs, "failures": confirm.failures, "p_value": p}
    if p < stats.ALPHA:
        detail.update(
            kind="import",
            modules=modules,
            confirm=counts,
            reproduce={"collected": confirm.command, "not_collected": isolation.command},
        )
        return Finding(
            ORDER_DEPENDENT,
            f"passes alone ({isolation.failures}/{isolation.runs} failures) but failed "
            f"{confirm.failures}/{confirm.runs} times when {polluter} is collected, with none "
            "of its tests run: importing it changes state the test relies on, so the test "
            "fails wherever that module is collected (-k, xdist workers, --lf, shards)"
            + also_non_idempotent(ctx.facts.non_idempotent),
            "order-dependent (import): one-sided Fisher exact test of failures with the "
            f"module collected against isolation, p = {p:.3g} < {stats.ALPHA}",
            polluter=polluter,
            order=detail,
        )
    detail["module_confirm"] = counts
    found.note(
        f"order: the collected modules bisected to {polluter}, but the pair did not confirm "
        f"(p = {p:.3g})"
    )
    return None


def unreproduced_clause(recorded: str, arms: Sequence[Arm]) -> str:
    """What a not-reproducible reason adds for a failure the recorded run holds."""
    knobs = {(arm.phase, arm.knob) for arm in arms}
    varied = ["fresh processes (isolation)"]
    if ("order", "after-predecessors") in knobs:
        varied.append("the tests that ran before it (replayed in the recorded order)")
    collection = ("order", "recorded-collection") in knobs
    if collection:
        varied.append("the collection (the command's modules collected, only the test run)")
    if any(phase == "seed" for phase, _ in knobs):
        varied.append("pytest-randomly's seed")
    timing = {knob for phase, knob in knobs if phase == "timing" and knob != "baseline"}
    varied.extend(sorted(timing, key=lambda knob: (TIMING_KNOBS.get(knob, 9), knob)))
    unvaried = [
        *([] if collection else ["the collection"]),
        "the environment (variables, files, network, services, the machine)",
        "other processes running beside the tests",
    ]
    return (
        f". The failure is evidence all the same: {recorded}, and no phase reproduced it. "
        f"Stress varied {', '.join(varied)}; it did not vary {', '.join(unvaried)}: "
        "the cause is likely among those"
    )
