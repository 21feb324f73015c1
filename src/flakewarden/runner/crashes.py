"""A test process that died mid-test: name the test, then run the rest in a continuation.

The plugin flushes a ``start`` record before each test runs, so when a process
dies before its session finishes (a segfault, an abort, ``os._exit``, the OOM
killer's SIGKILL, or ``--attempt-timeout``), the test it was running is the one
that started and never finished. That test gets a ``crashed`` run; the tests of
the attempt it never reached run in a fresh continuation process, counted as the
same attempt (not a rerun), and the crashed test is then rerun like any failure.
More crashes in one attempt than ``--max-failures`` is a real break: it stops.
A crash with no test running (in a conftest, at shutdown) cannot be blamed on a
test and is left to the caller as a session that never finished.
"""

from __future__ import annotations

import dataclasses
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Callable, Optional

from flakewarden.model import Attempt, Continuation, ExitCode, PhaseRecord, TestRecord
from flakewarden.outside_json import read_tail
from flakewarden.runner import consistency
from flakewarden.runner.attempt_process import Part
from flakewarden.runner.process import ChildResult
from flakewarden.runner.process_results import ProcessResults

TAIL_LINES = 40
TAIL_CHARS = 6000
LOG_WINDOW = 256 * 1024  # bytes read from the end of a process's output
FATAL = "Fatal Python error:"
SHOWN = 5  # test ids named in one console line


RunPart = Callable[[Path, list[str], Optional[list[str]]], Part]  # directory, command, selection


@dataclasses.dataclass
class Continued:
    """What an attempt's processes recorded together, and what the caller must report."""

    results: ProcessResults
    problems: list[str] = dataclasses.field(default_factory=list)
    not_green: bool = False  # some tests of the attempt never ran
    stopped: bool = False  # more crashes than allowed: a real break
    unexplained: bool = False  # the session never finished and no test can be blamed
    # A continuation's session failed a test that its records do not (consistency).
    missed_failure: bool = False


def finished(part: Part) -> bool:
    """True when the session ended on its own.

    A process the timeout stopped is a crash even when pytest caught the signal and
    wrapped up its session (a suite that turns SIGTERM into KeyboardInterrupt).
    """
    return part.results.exitstatus is not None and not part.child.timed_out


def how_it_ended(child: ChildResult, timeout: Optional[float]) -> str:
    """What happened to a process that never finished its session, in a few words."""
    if child.timed_out:
        return f"timed out after {timeout:g} s (--attempt-timeout) and was stopped"
    code = child.exit_code
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = "; the out-of-memory killer sends it" if -code == signal.SIGKILL else ""
        return f"was killed by {name} (signal {-code}{hint})"
    return f"exited with status {code} before pytest's session finished (os._exit?)"


def crash_message(how: str) -> str:
    """The one line a report shows for a crashed run."""
    if how.startswith("timed out"):
        return f"crashed: {how}"
    return f"crashed: the test process {how}"


def log_tail(log: Path, test_id: str = "") -> str:
    """What the dying process printed: faulthandler's report when there is one, else the end.

    Of faulthandler's report the first line and the crashing thread's stack matter;
    with several (xdist workers), the one whose stack runs through ``test_id``'s
    function is chosen.
    """
    lines = read_tail(log, LOG_WINDOW).splitlines()
    # pytest's progress dots may share the line: faulthandler writes straight to fd 2.
    reports = [_fault_report(lines, i) for i, ln in enumerate(lines) if FATAL in ln]
    if reports:
        name = test_id.rpartition("::")[2].partition("[")[0]
        mine = [r for r in reports if name and any(ln.endswith(f" in {name}") for ln in r)]
        return "\n".join((mine or reports)[-1])[:TAIL_CHARS]
    return "\n".join(lines[-TAIL_LINES:])[-TAIL_CHARS:]


def _fault_report(lines: list[str], first: int) -> list[str]:
    """faulthandler's first line, then the stack of the thread that crashed."""
    end = len(lines)
    for index in range(first + 1, len(lines)):
        if FATAL in lines[index] or lines[index].startswith("[gw"):  # next one, xdist's notice
            end = index
            break
    head = lines[first]
    block = [head[head.index(FATAL) :], *lines[first + 1 : end]]
    current = next((i for i, ln in enumerate(block) if ln.startswith("Current thread")), None)
    if current is not None:
        block = [block[0], *block[current:]]
    return block[:TAIL_LINES]


def _detail(message: str, log: Path, report_dir: Path, test_id: str = "") -> str:
    tail = log_tail(log, test_id)
    where = _relative(log, report_dir)
    if not tail:
        return f"{message}\n\n({where} is empty)"
    return f"{message}\n\nFrom {where}:\n{tail}"


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def crash_records(part: Part, message: str, report_dir: Path) -> list[TestRecord]:
    """A ``crashed`` record for each test the process started and never finished."""
    ended = time.time()
    index = len(part.results.order)
    records = []
    for offset, start in enumerate(part.results.running):
        detail = _detail(message, part.directory / "output.log", report_dir, start.id)
        duration = max(0.0, ended - start.time) if start.time else 0.0
        phase = PhaseRecord(when="", outcome="failed", duration=duration, longrepr=detail)
        records.append(
            TestRecord(
                id=start.id,
                file=start.file,
                line=start.line,
                phases=[phase],
                index=index + offset,
                crash=message,
            )
        )
    return records


def worker_crashes(part: Part, number: int, report_dir: Path) -> list[str]:
    """xdist named the test a dead worker was running: add what it printed as it died.

    Returns one console line per crashed test, naming it.
    """
    crashed = [record for record in part.results.tests if record.crash]
    if not crashed:
        return []
    log = part.directory / "output.log"
    for record in crashed:
        detail = _detail("", log, report_dir, record.id).lstrip()
        for phase in record.phases:
            if phase.outcome == "failed":
                phase.longrepr = f"{phase.longrepr}\n\n{detail}".strip()
    return [f"attempt {number}: {r.id} crashed: {r.crash}" for r in crashed]


def _named(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:SHOWN])
    return shown + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def continue_attempt(
    attempt: Attempt,
    first: Part,
    *,
    run_part: RunPart,
    select_command: Callable[[list[str]], list[str]],
    add: Callable[[list[TestRecord]], None],
    report_dir: Path,
    timeout: Optional[float],
    max_crashes: int,
    say: Callable[[str], None],
) -> Continued:
    """Blame each crash on the test that was running and run what is left, until done.

    Each continuation either finishes its session, or crashes on a test that
    then has a record (so the rest shrinks), or crashes with no test running,
    which ends the attempt as a session that never finished.
    """
    return _Continuing(
        attempt, first, run_part, select_command, add, report_dir, timeout, max_crashes, say
    ).run()


@dataclasses.dataclass
class _Continuing:
    """One attempt's parts, from its first process to its last continuation."""

    attempt: Attempt
    first: Part
    run_part: RunPart
    select_command: Callable[[list[str]], list[str]]
    add: Callable[[list[TestRecord]], None]
    report_dir: Path
    timeout: Optional[float]
    max_crashes: int
    say: Callable[[str], None]
    crashes: int = 0
    statuses: list[int] = dataclasses.field(default_factory=list)

    def run(self) -> Continued:
        first = self.first
        selection = list(first.results.collected or [])
        merged = ProcessResults(
            config=first.results.config, collected=selection, testscollected=len(selection)
        )
        done = Continued(merged)
        part: Optional[Part] = first
        while part is not None:
            _merge(merged, part.results)
            if part is not first and finished(part):
                done.missed_failure |= consistency.check_continuation(
                    self.attempt,
                    len(self.attempt.continuations),
                    part.results,
                    self.say,
                    part.counts,
                )
            if finished(part):
                self.statuses.append(part.results.exitstatus or ExitCode.OK)
                break
            part = self._after_crash(part, selection, done)
            if done.unexplained:
                return done
        self._finish(selection, done)
        return done

    def _after_crash(self, part: Part, selection: list[str], done: Continued) -> Optional[Part]:
        """Record the crash on the test it hit; the next part to run, or None to stop."""
        attempt, merged = self.attempt, done.results
        how = how_it_ended(part.child, self.timeout)
        if part is self.first:
            attempt.crash = how
        else:
            attempt.continuations[-1].crash = how
        message = crash_message(how)
        records = crash_records(part, message, self.report_dir)
        self.add(records)
        merged.tests.extend(records)
        if not records or not selection:
            merged.exitstatus = None
            done.unexplained = True
            log = _relative(part.directory / "output.log", self.report_dir)
            done.problems.append(
                f"attempt {attempt.number}: the test process {how}"
                + ("" if records else " while no test was running (a conftest, a plugin, exit?)")
                + f"; see {log}"
            )
            return None
        self.crashes += len(records)
        self.statuses.append(ExitCode.TESTS_FAILED)
        ids = [r.id for r in records]
        recorded = {r.id for r in merged.tests}
        rest = [test_id for test_id in selection if test_id not in recorded]
        if self.crashes > self.max_crashes:
            done.stopped = done.not_green = True
            done.problems.append(
                f"attempt {attempt.number}: {self.crashes} tests crashed, more than "
                f"--max-failures {self.max_crashes}: that is a real break; "
                f"{len(rest)} tests never ran"
            )
            self.say(
                f"attempt {attempt.number}: {_named(ids)} {message}; {self.crashes} crashes "
                f"are more than --max-failures {self.max_crashes}: stopping, "
                f"{len(rest)} never ran"
            )
            return None
        if not rest:
            self.say(f"attempt {attempt.number}: {_named(ids)} {message}")
            return None
        them = (
            "the test it had not reached runs"
            if len(rest) == 1
            else (f"the {len(rest)} tests it had not reached run")
        )
        self.say(
            f"attempt {attempt.number}: {_named(ids)} {message}; {them} in a fresh process, "
            f"still attempt {attempt.number}"
        )
        return self._continuation(ids, rest)

    def _continuation(self, ids: list[str], rest: list[str]) -> Part:
        """Run the tests the crashed process had not reached, in a fresh process."""
        attempt = self.attempt
        directory = self.first.directory / f"continuation-{len(attempt.continuations) + 1}"
        command = self.select_command(rest)
        attempt.continuations.append(
            Continuation(
                command=command,
                reason=f"continuation after {_named(ids)} crashed",
                selected=len(rest),
                directory=_relative(directory, self.report_dir),
            )
        )
        part = self.run_part(directory, command, rest)
        for line in worker_crashes(part, attempt.number, self.report_dir):
            self.say(line)
        attempt.continuations[-1].exit_code = part.child.exit_code
        attempt.continuations[-1].duration = part.child.duration
        attempt.continuations[-1].process = part.started
        attempt.continuations[-1].process_note = part.start_note
        return part

    def _finish(self, selection: list[str], done: Continued) -> None:
        merged = done.results
        merged.exitstatus = _combined(self.statuses)
        never = [test_id for test_id in selection if test_id not in {r.id for r in merged.tests}]
        if never and not done.stopped:
            done.not_green = True
            done.problems.append(
                f"attempt {self.attempt.number}: {len(never)} test(s) never ran after the crash: "
                + _named(never)
            )
        merged.testscollected = len(merged.order) if done.not_green else len(selection)


def _merge(into: ProcessResults, part: ProcessResults) -> None:
    into.tests.extend(part.tests)
    into.collect_errors.extend(part.collect_errors)
    into.corrupt_lines += part.corrupt_lines
    into.refused = into.refused or part.refused


def _combined(statuses: Sequence[int]) -> int:
    """One session status for the attempt: a stop that ends a run wins, else failed or OK."""
    for status in statuses:
        if status in (ExitCode.INTERRUPTED, ExitCode.INTERNAL_ERROR, ExitCode.USAGE_ERROR):
            return status
    if ExitCode.TESTS_FAILED in statuses:
        return ExitCode.TESTS_FAILED
    return ExitCode.OK
