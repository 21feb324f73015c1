"""The probe: the user's command once, selecting the test, before anything is stressed.

It shows whether the test can run at all (an error verdict when it cannot),
whether pytest-randomly is in use, what pytest parsed as positional arguments
and how long the test takes: what every later phase's processes are built from.

When collecting what the command collects fails in a module other than the
test's own (an optional test dependency missing, say), the probe runs again
collecting only the test's module, as every later process does: the test is
stressed, the collection is said to be narrowed and why, and only what needs the
whole suite's collection (the search for a module whose import fails the test)
is skipped. An ``error`` stays for a test that cannot itself be collected or run.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Optional

from flakewarden.errors import UsageError
from flakewarden.model import AttemptOutcome, first_line
from flakewarden.model.verdicts import ERROR
from flakewarden.runner import pytest_args
from flakewarden.runner.pytest_args import test_file
from flakewarden.stress.phase import Finding
from flakewarden.stress.runs import (
    Job,
    JobResult,
    Probe,
    Say,
    StressOptions,
    StressProcesses,
    log_tail,
)
from flakewarden.stress.verdict import Failure


@dataclasses.dataclass(frozen=True)
class ProbeResult:
    """What the probe learned (``probe``), or the error that stops the run (``finding``)."""

    probe: Optional[Probe] = None  # None until pytest started its session with the plugin
    finding: Optional[Finding] = None
    notes: tuple[str, ...] = ()
    first_failure: Optional[Failure] = None


def run_probe(options: StressOptions, processes: StressProcesses, say: Say) -> ProbeResult:
    """Run the command once as given; a command pytest rejects is the user's to fix."""
    test_id = options.test_id
    say(f"probe: running {test_id} once with the command as given")
    [result] = processes.run_jobs([Job("probe", "as-given", [test_id])], 1)
    config = result.results.config
    if config is None:
        tail = log_tail(result.directory / "output.log")
        if result.exit_code == 4:
            raise UsageError(f"pytest rejected the command: {first_line(tail) or tail[-300:]}")
        return ProbeResult(
            finding=Finding(
                ERROR,
                f"pytest never started its session with the flakewarden plugin "
                f"(exit code {result.exit_code}): {first_line(tail)}",
                "error: the test cannot run",
            ),
            first_failure=Failure("probe", "as-given", result.number, 0, first_line(tail), tail),
        )
    split = pytest_args.split_with_invocation(options.command, config.get("args", []))
    rootdir = Path(str(config.get("rootdir") or options.cwd))
    notes: tuple[str, ...] = ()
    if split is None:
        notes = (
            "the command does not start pytest directly, so every process collects "
            "what the command collects and the plugin selects the test",
        )
    probe = Probe(
        results=result.results,
        rootdir=rootdir,
        executable=str(config.get("executable") or sys.executable),
        split=split,
        positionals=tuple(str(p) for p in config.get("file_or_dir", [])),
        base_args=("--tb=long",) if split is None else (),
        randomly=config.get("randomly_seed") is not None,
    )
    if not result.records and result.results.collect_errors:
        narrowed = _narrowed(options, processes, say, probe, result.results.collect_errors)
        if narrowed is not None:
            result, probe = narrowed
            notes = (*notes, probe.narrowed)
    if not result.records:
        if result.results.collect_errors:
            where, text = result.results.collect_errors[0]
            return ProbeResult(
                probe,
                Finding(
                    ERROR,
                    f"the test cannot be collected: {first_line(text)} (in {where or '.'})",
                    "error: collection failed, so no run of the test could start",
                ),
                notes,
                Failure("probe", "as-given", result.number, 0, first_line(text), text),
            )
        raise UsageError(
            f"{test_id} was not collected (rootdir {rootdir}); "
            "give the node id as pytest prints it, e.g. tests/test_x.py::test_y"
        )
    durations = [r.duration for r in result.records]
    probe = dataclasses.replace(probe, test_seconds=max(0.001, sum(durations) / len(durations)))
    if all(r.outcome == AttemptOutcome.SKIPPED for r in result.records):
        text = result.records[0].phases[-1].longrepr if result.records[0].phases else ""
        return ProbeResult(
            probe,
            Finding(
                ERROR,
                f"the test is skipped, so it cannot be stressed: {text}",
                "error: the test did not run",
            ),
            notes,
        )
    return ProbeResult(probe, notes=notes)


def _narrowed(
    options: StressOptions,
    processes: StressProcesses,
    say: Say,
    probe: Probe,
    errors: list[tuple[str, str]],
) -> Optional[tuple[JobResult, Probe]]:
    """The probe again on the test's own module, when only other modules failed to collect.

    None when narrowing cannot help or cannot be done: an error in the test's own module
    or a conftest (no node id), or a command that does not start pytest directly (its
    collection is not ours to choose).
    """
    own = test_file(options.test_id)
    where, text = errors[0]
    if probe.split is None or any(
        not cid or cid in (".", own) or not cid.endswith(".py") for cid, _ in errors
    ):
        return None
    say(f"probe: collecting {where} failed; collecting only {own}, as every later process does")
    [result] = processes.run_jobs([Job("probe", "narrowed", [options.test_id])], 1, probe=probe)
    if not result.records:
        return None
    others = "" if len(errors) == 1 else f" and {len(errors) - 1} more module(s)"
    reason = (
        f"collection narrowed to {own}: collecting what the command collects fails in "
        f"{where}{others} ({first_line(text)}), not in the test's module; every process "
        "collects the test's module only, and the search for a module whose import fails "
        "the test, which needs the whole collection, was skipped"
    )
    return result, dataclasses.replace(probe, narrowed=reason)
