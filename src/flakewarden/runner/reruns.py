"""The attempt loop: run the suite, rerun only what failed, each attempt in a fresh process.

The policy, in order:
- attempt 1 runs the user's command as given (plus our plugin);
- a pytest usage error, an internal error, an interrupted session, a collection
  error with nothing run, or no tests collected ends the run with pytest's code;
- more than ``max_failures`` distinct failed tests is a real break: no reruns;
- otherwise the tests still failing are rerun together in one fresh process,
  up to ``reruns`` times, keeping every option and replacing only the selection;
- a failure the rerun policy holds back (``rerun.only``, ``rerun.except``) is not rerun.
What failed is decided from the plugin's records keyed by node id, never from
an exit code or from JUnit. Turning the records into outcomes and an exit code is
in ``folding``; measuring coverage through the attempts is in ``coverage_run``.

What is needed only once a process has exited (judging its session, crashes, the
consistency check, the fold, the report's types) is imported where it is used, and
imported beside attempt 1's process by ``_import_what_follows``: every run's first
test waits for what is imported before the tests start, nothing else does.
"""

from __future__ import annotations

import importlib
import os
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple, Optional

from flakewarden import __version__
from flakewarden.model import Attempt, ExitCode, timings
from flakewarden.reports.report_dir import claim_directory
from flakewarden.runner import pytest_args
from flakewarden.runner.attempt_process import PartRunner
from flakewarden.runner.coverage_run import coverage_command, merge_coverage
from flakewarden.runner.early_fold import EarlyFold
from flakewarden.runner.loop_state import LoopState
from flakewarden.runner.process import Interrupted, plugin_dir, resolve_executable
from flakewarden.runner.process_results import ProcessResults, gc_paused
from flakewarden.runner.run_options import REPORT_FILES, RunOptions, Say, now_iso

if TYPE_CHECKING:
    from flakewarden.model import RunReport
    from flakewarden.reports.rendered import RenderedTests
    from flakewarden.runner.rerun_forks import RerunForks


class Ran(NamedTuple):
    """What ``run_attempts`` gives: the report, and its tests rendered while they ran."""

    report: RunReport
    rendered: Optional[RenderedTests]  # for write_reports; None when nothing was


def run_attempts(options: RunOptions, say: Say) -> Ran:
    """Run the attempts, fold them into a ``RunReport`` (not yet written)."""
    started_at, started = time.time(), time.monotonic()
    resolve_executable(options.command, options.cwd)
    with timings.phase("claim report dir"):
        claim_directory(options.report_dir, REPORT_FILES)
    state = LoopState(early=EarlyFold(options.quarantined))

    command = list(options.command)
    located = pytest_args.locate(command)
    fail_under = options.cov_fail_under
    if located is not None:
        given = pytest_args.cov_fail_under(located.args)
        if fail_under is None:
            fail_under = given
        command = located.prefix + pytest_args.without_cov_fail_under(located.args)
    measure = options.coverage or (
        located is not None and pytest_args.measures_coverage(located.args)
    )
    if located is not None and pytest_args.measures_coverage(located.args):
        # pytest-cov would hold each attempt to a configured threshold; only the
        # merged total is judged (merge reads [report] fail_under itself).
        command.append("--cov-fail-under=0")
    if options.coverage:
        command = coverage_command(command, options.cwd)

    with plugin_dir() as plugin:
        from flakewarden.runner.rerun_forks import RerunForks

        forks = RerunForks(
            command, options.cwd, plugin, enabled=options.fork_reruns, measure=measure
        )
        try:
            _loop(options, command, plugin, measure, state, say, forks)
        except Interrupted as exc:
            state.interrupted = True
            state.exit_code = ExitCode.INTERRUPTED
            running = f" while {', '.join(state.running[:5])} ran" if state.running else ""
            state.problems.append(f"interrupted by {exc}{running}: the report shows what ran")
            say(f"interrupted by {exc}; writing the report of what ran")
        finally:
            forks.close()

    from flakewarden.model import RunReport
    from flakewarden.runner.folding import exit_code, fold, mark_collection_hints

    with timings.phase("fold"), gc_paused():
        tests = fold(
            state.order, state.records, options.quarantined, state.early.folded, state.not_rerun
        )
        mark_collection_hints(tests, state.collected_files, state.records)
    report = RunReport(
        command=list(options.command),
        rootdir=state.rootdir or str(options.cwd),
        tests=tests,
        attempts=state.attempts,
        order=state.order,
        exit_code=0,
        started_at=now_iso(started_at),
        finished_at=now_iso(),
        duration=time.monotonic() - started,
        version=__version__,
        cutoff=state.cutoff,
        interrupted=state.interrupted,
        problems=state.problems,
        max_failures=options.max_failures,
        reruns=options.reruns,
        quarantine_known=sorted(options.quarantined),
        shard=None if options.shard is None else f"{options.shard[0]}/{options.shard[1]}",
        uid=os.urandom(16).hex(),
    )
    if measure and state.attempts:
        with timings.phase("coverage merge"):
            report.coverage = merge_coverage(
                state.attempts,
                options.report_dir,
                command=options.command,
                cwd=options.cwd,
                fail_under=fail_under,
            )
    forgiven = frozenset[str]()
    if options.judge is not None:
        forgiven = options.judge(report, state.first_config)
    report.exit_code = exit_code(
        report,
        ended_with=state.exit_code,
        not_green=state.not_green,
        fail_on_flaky=options.fail_on_flaky,
        forgiven=forgiven,
    )
    return Ran(report, state.early.rendered)


def _loop(
    options: RunOptions,
    command: list[str],
    plugin: Path,
    measure: bool,
    state: LoopState,
    say: Say,
    forks: RerunForks,
) -> None:
    state.command = command
    run = partial(_attempt, options, state, plugin, forks=forks, measure=measure, say=say)
    first = run(1, command, "the full command", None)
    if first.config is None:
        state.exit_code = _never_started(first, state, options)
        return
    state.order = first.order
    if state.exit_code is not None:
        return
    failing = state.failing_after_first()
    if not failing:
        return
    if len(failing) > options.max_failures:
        from flakewarden.runner.cutoff import over_max_failures

        verdict = over_max_failures(failing, state.records, options)
        say(verdict.said)
        if verdict.cut:
            state.cutoff = True
            return
    failing = state.rerunnable(options.rerun_policy, failing, say)
    for number in range(2, options.reruns + 2):
        if not failing:
            return
        noun = "test" if len(failing) == 1 else "tests"
        reason = f"rerun of {len(failing)} failed {noun}"
        rerun_command = _selection_command(state, failing)
        results = run(number, rerun_command, reason, failing, last=number == options.reruns + 1)
        if state.exit_code is not None:
            return
        missing = [tid for tid in failing if tid not in results.by_id()]
        if missing:
            state.problems.append(
                f"attempt {number}: {len(missing)} selected test(s) did not run: "
                + ", ".join(missing[:5])
            )
        failing = state.rerunnable(options.rerun_policy, state.still_failing(failing, number), say)


def _shard_env(options: RunOptions, plugin: Path) -> Optional[dict[str, str]]:
    """What makes attempt 1's first process run one shard (read by the plugin)."""
    if options.shard is None:
        return None
    import json

    env = {"FLAKEWARDEN_SHARD": f"{options.shard[0]}/{options.shard[1]}"}
    if options.shard_durations:
        durations = plugin / "shard-durations.json"
        durations.write_text(json.dumps(options.shard_durations), encoding="utf-8")
        env["FLAKEWARDEN_SHARD_DURATIONS"] = str(durations)
    return env


def _selection_command(state: LoopState, node_ids: list[str]) -> list[str]:
    """Attempt 1's command with only the selection replaced: for reruns and continuations."""
    args = (state.first_config or {}).get("args", [])
    split = pytest_args.split_with_invocation(state.command, args)
    if split is None:
        return state.command  # not a plain pytest command: the plugin selects
    positionals = [str(p) for p in (state.first_config or {}).get("file_or_dir", [])]
    return split.prefix + pytest_args.rerun_args(
        split.args, positionals=positionals, node_ids=node_ids, rootdir=Path(state.rootdir)
    )


def _attempt(
    options: RunOptions,
    state: LoopState,
    plugin: Path,
    number: int,
    command: list[str],
    reason: str,
    select: Optional[list[str]],
    *,
    forks: RerunForks,
    measure: bool,
    say: Say,
    last: bool = False,
) -> ProcessResults:
    directory = options.report_dir / "attempts" / str(number)
    if select is not None:
        shown = ", ".join(select[:5]) + (f" and {len(select) - 5} more" if len(select) > 5 else "")
        say(f"attempt {number}: {reason} in a fresh process: {shown}")
    else:
        say(f"attempt {number}: {' '.join(command)}")
    attempt = Attempt(
        number=number,
        command=command,
        reason=reason,
        selected=list(select or []),
        directory=str(directory.relative_to(options.report_dir)),
    )
    state.attempts.append(attempt)

    def on_results(results: ProcessResults) -> None:
        from flakewarden.model import first_line

        # Even an interrupted attempt keeps the records it wrote.
        state.add(number, results)
        state.running = [start.id for start in results.running]
        attempt.collection_errors += [
            f"{cid or '.'}: {first_line(text)}" for cid, text in results.collect_errors
        ]

    run_part = PartRunner(
        plugin,
        options.cwd,
        options.echo,
        options.attempt_timeout,
        measure,
        on_results,
        while_running=_beside_first_process(options.while_first_runs) if number == 1 else None,
        early=forks.watch_first(state.early) if number == 1 else forks.watch_rerun(last),
        first_env=_shard_env(options, plugin) if number == 1 else None,
        part_env=None if options.part_env is None else partial(options.part_env, number, measure),
        forks=forks,
        last=last,
    )
    first = run_part(directory, command, select)
    attempt.process, attempt.process_note = first.started, first.start_note
    if forks.tell(first.start_note):
        say(f"attempt {number} ran in a new process: {first.start_note}")
    from flakewarden.runner import consistency
    from flakewarden.runner.crashes import continue_attempt, finished, worker_crashes

    for line in worker_crashes(first, number, options.report_dir):
        say(line)
    attempt.exit_code = first.child.exit_code
    attempt.duration = first.child.duration
    if not directory.is_dir():
        state.problems.append(
            f"attempt {number}: the report directory was deleted while the tests ran "
            f"(by a test?), so what they recorded is lost: {options.report_dir}"
        )
        state.exit_code = ExitCode.INTERNAL_ERROR
        return first.results
    if number == 1 and first.results.config is not None:
        state.first_config = first.results.config
        state.rootdir = first.results.rootdir or str(options.cwd)
    if first.results.config is None or finished(first):
        state.judge_session(first.results, number)
        if consistency.check_attempt(attempt, first.results, say, first.counts):
            state.not_green = True  # pytest failed a test the records do not: never green
        return first.results
    continued = continue_attempt(
        attempt,
        first,
        run_part=run_part,
        select_command=lambda ids: _selection_command(state, ids),
        add=lambda records: state.add_records(number, records),
        report_dir=options.report_dir,
        timeout=options.attempt_timeout,
        max_crashes=options.max_failures,
        say=say,
    )
    attempt.duration = first.child.duration + sum(c.duration for c in attempt.continuations)
    state.problems.extend(continued.problems)
    state.cutoff = state.cutoff or continued.stopped
    state.not_green = state.not_green or (continued.not_green and number == 1)
    state.not_green = state.not_green or continued.missed_failure
    if continued.unexplained:
        from flakewarden.runner.sessions import refusals

        state.problems.extend(refusals(continued.results, number))
        if number == 1:
            # Tests after the crash never ran: nothing can make this run green.
            state.exit_code = ExitCode.INTERNAL_ERROR
    else:
        state.judge_session(continued.results, number)
    return continued.results


def _beside_first_process(
    also: Optional[Callable[[], object]],
) -> Callable[[], None]:
    """The work run beside attempt 1's process: ``_import_what_follows``, then ``also``."""

    def work() -> None:
        _import_what_follows()
        if also is not None:
            also()

    return work


#: What the loop imports where it is used, once a process has exited.
IMPORTED_AFTER_A_PROCESS = (
    "flakewarden.runner.consistency",
    "flakewarden.runner.crashes",
    "flakewarden.runner.folding",
    "flakewarden.runner.sessions",
    "flakewarden.model.run",
    "flakewarden.model.failure_lines",
    "datetime",
)


def _import_what_follows() -> None:
    """Import what the loop needs once a process has exited (see the module's docstring)."""
    for name in IMPORTED_AFTER_A_PROCESS:
        importlib.import_module(name)


def _never_started(results: ProcessResults, state: LoopState, options: RunOptions) -> int:
    """The command ran but pytest never loaded the plugin."""
    if state.exit_code is not None:
        return int(state.exit_code)  # its records were lost: already said why
    from flakewarden.runner.sessions import never_started

    log = options.report_dir / "attempts" / "1" / "output.log"
    verdict = never_started(state.attempts[-1].exit_code, log)
    state.problems.extend(verdict.problems)
    assert verdict.exit_code is not None
    return verdict.exit_code
