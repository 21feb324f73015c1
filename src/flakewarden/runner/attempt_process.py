"""One process of an attempt, with the plugin injected: the first one, or a continuation.

Each process gets its own directory (``attempts/N``, or ``attempts/N/continuation-K``
after a crash) holding its selection (``select.json``), the plugin's records
(``results.jsonl``), its output (``output.log``) and, when measured, its coverage
data. The records are handed over even when the run is interrupted, so nothing a
process recorded is lost.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Callable, NamedTuple, Optional

from flakewarden.model import timings
from flakewarden.model.attempts import FORKED, NEW_PROCESS
from flakewarden.runner.process import ChildResult, plugin_env, run_child
from flakewarden.runner.process_results import ProcessResults, RecordFollower
from flakewarden.runner.summary_counts import SummaryCounts

if TYPE_CHECKING:
    from flakewarden.model import TestRecord
    from flakewarden.runner.forkserver import Forked
    from flakewarden.runner.rerun_forks import RerunForks


class Part(NamedTuple):
    """One process of an attempt and what it recorded."""

    results: ProcessResults
    child: ChildResult
    directory: Path
    counts: SummaryCounts  # the records' counts, kept up while they were read (consistency)
    started: str = NEW_PROCESS  # or ``FORKED`` from a warm pytest (``rerun_forks``)
    start_note: str = ""  # why a rerun's process is a new one


class PartRunner:
    """Runs the processes of attempts alike: same plugin, environment rules and timeout.

    (A plain class, made before the tests start: see ``loop_state``.)
    """

    def __init__(
        self,
        plugin: Path,
        cwd: Path,
        echo: Optional[IO[bytes]],
        timeout: Optional[float],  # seconds each process may run (--attempt-timeout)
        measure: bool,
        on_results: Callable[[ProcessResults], None],  # called even when interrupted
        *,
        # Called once, beside the first process (run_child's while_running), then dropped.
        while_running: Optional[Callable[[], object]] = None,
        # Given the first process's test records in batches as they are read, then dropped.
        early: Optional[Callable[[ProcessResults, Sequence[TestRecord]], None]] = None,
        # Added to the environment of a process that selects nothing (attempt 1's first).
        first_env: Optional[dict[str, str]] = None,
        # More environment for every process of the attempt, given its directory.
        part_env: Optional[Callable[[Path], dict[str, str]]] = None,
        # Forks the processes that select tests (reruns, continuations) when it can.
        forks: Optional[RerunForks] = None,
        last: bool = False,  # no attempt follows this one
    ) -> None:
        self.plugin, self.cwd, self.echo, self.timeout = plugin, cwd, echo, timeout
        self.measure, self.on_results = measure, on_results
        self.while_running, self.early = while_running, early
        self.first_env, self.part_env = first_env, part_env
        self.forks, self.last = forks, last

    def __call__(self, where: Path, command: list[str], select: Optional[list[str]]) -> Part:
        where.mkdir(parents=True, exist_ok=True)
        select_file = None
        if select is not None:
            select_file = where / "select.json"
            text = json.dumps(select, ensure_ascii=False, indent=0)
            select_file.write_text(text, encoding="utf-8")
        results_file = where / "results.jsonl"
        extra: dict[str, str] = {}
        if self.measure:
            from flakewarden.runner import coverage_merge

            extra.update(coverage_merge.attempt_env(where))
        if select is None and self.first_env:
            extra.update(self.first_env)
        if self.part_env is not None:
            extra.update(self.part_env(where))
        env = plugin_env(self.plugin, results_file, select=select_file, extra=extra)
        forked, note = None, ""
        if self.forks is not None and select is not None:
            forked = self.forks.start(command, env, where / "output.log", last=self.last)
            note = self.forks.reason
        if forked is not None:
            from flakewarden.runner.forkserver import ForkServerLost

            try:
                return self._run(where, command, env, forked)
            except ForkServerLost:
                note = "the fork server died while the rerun ran: it ran again in a new process"
                for path in (results_file, where / "output.log"):
                    path.unlink(missing_ok=True)
        return self._run(where, command, env, None)._replace(start_note=note)

    def _run(
        self, where: Path, command: list[str], env: dict[str, str], forked: Optional[Forked]
    ) -> Part:
        results_file = where / "results.jsonl"
        child: Optional[ChildResult] = None
        counts, early = SummaryCounts(), self.early
        self.early = None

        def on_records(results: ProcessResults, records: Sequence[TestRecord]) -> None:
            counts.update(results)
            if early is not None:
                early(results, records)

        follower = RecordFollower(results_file, on_records)
        lost = False
        try:
            if forked is not None:
                from flakewarden.runner.forkserver import ForkServerLost
                from flakewarden.runner.rerun_forks import run_forked

                try:
                    child = run_forked(
                        forked, log=where / "output.log", echo=self.echo, timeout=self.timeout
                    )
                except ForkServerLost:
                    lost = True
                    raise
            else:
                child = run_child(
                    command,
                    cwd=self.cwd,
                    env=env,
                    log=where / "output.log",
                    echo=self.echo,
                    timeout=self.timeout,
                    while_running=self.while_running,
                )
                self.while_running = None
        finally:
            with timings.phase("read records", tests=0) as timed:
                results = follower.stop()
                timed["tests"] = len(results.tests)
            if child is not None and child.timed_out:
                _blame_the_timeout(results)
            if not lost:  # a lost fork's process runs again: what it recorded is dropped
                self.on_results(results)
        assert child is not None  # the child returned
        if forked is None:
            return Part(results, child, where, counts)
        return Part(results, child, where, counts, FORKED)


def _blame_the_timeout(results: ProcessResults) -> None:
    """The timeout stopped a test that pytest then wrote as unfinished: it is the crash's.

    A suite that turns SIGTERM into ``KeyboardInterrupt`` lets pytest end its session and
    write the running test as ended mid-test; the hang is still that test's.
    """
    running = {start.id for start in results.running}
    results.tests = [r for r in results.tests if not (r.unfinished and r.id in running)]
