"""What pytest said about an attempt's session, as the run's fate.

A usage error, an internal error, an interrupted session, a collection error
with nothing run or no tests collected ends the run with pytest's code; a
collection error or a session that stopped before running every test (``-x``,
``--maxfail``) leaves a run that cannot be green. A session that never finished
(a crash) is judged by ``crashes`` first.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

from flakewarden.model import ExitCode, first_line
from flakewarden.outside_json import read_tail
from flakewarden.runner.process_results import ProcessResults

#: Bytes read from the end of pytest's output to find the line that says what went wrong.
LOG_TAIL = 1024 * 1024


@dataclasses.dataclass
class SessionVerdict:
    problems: list[str] = dataclasses.field(default_factory=list)
    exit_code: Optional[int] = None  # set when the run must end with this code
    not_green: bool = False  # at best exit 1


def refusals(results: ProcessResults, number: int) -> list[str]:
    """The problem to list when the code under test wrote a record out of the limits: said
    whether its session finished or its process crashed."""
    return [f"attempt {number}: {results.refused}"] if results.refused else []


def judge_session(results: ProcessResults, number: int) -> SessionVerdict:
    """What attempt ``number``'s session means for the run (nothing, for a plain finish)."""
    verdict = SessionVerdict(problems=refusals(results, number))
    if results.config is None:
        return verdict
    status = results.exitstatus
    if status == ExitCode.USAGE_ERROR:
        verdict.problems.append(f"attempt {number}: pytest reported a usage error")
        verdict.exit_code = ExitCode.USAGE_ERROR if number == 1 else ExitCode.INTERNAL_ERROR
    elif status == ExitCode.INTERNAL_ERROR:
        verdict.problems.append(f"attempt {number}: pytest reported an internal error")
        verdict.exit_code = ExitCode.INTERNAL_ERROR
    elif status == ExitCode.NO_TESTS_COLLECTED and number == 1:
        verdict.problems.append("no tests were collected")
        verdict.exit_code = ExitCode.NO_TESTS_COLLECTED
    elif results.collect_errors and not results.tests:
        first_id, text = results.collect_errors[0]
        verdict.problems.append(
            f"attempt {number}: collection error in {first_id or '.'}: {first_line(text)}"
        )
        verdict.exit_code = ExitCode.INTERRUPTED
    elif status == ExitCode.INTERRUPTED:
        verdict.problems.append(f"attempt {number}: pytest's session was interrupted")
        verdict.exit_code = ExitCode.INTERRUPTED
    else:
        if results.collect_errors:
            verdict.problems.append(
                f"attempt {number}: {len(results.collect_errors)} collection error(s): "
                + ", ".join(cid or "." for cid, _ in results.collect_errors[:5])
            )
            verdict.not_green = True
        ran = len(results.order)
        if number == 1 and results.testscollected > ran:
            never = results.testscollected - ran
            if results.corrupt_lines:  # their records, not the tests, may be what is missing
                verdict.problems.append(
                    f"attempt 1: {never} of {results.testscollected} tests have no record "
                    f"({results.corrupt_lines} record(s) could not be read or were refused), "
                    "so the run cannot be green"
                )
            else:
                verdict.problems.append(
                    f"attempt 1: pytest stopped after {ran} of {results.testscollected} tests "
                    f"(-x, --maxfail, or a test that stopped the session?): {never} never ran, "
                    "so the run cannot be green"
                )
            verdict.not_green = True
    return verdict


def never_started(exit_code: Optional[int], log: Path) -> SessionVerdict:
    """Attempt 1's command exited with ``exit_code`` before pytest loaded the plugin."""
    tail = _last_line(log)
    if exit_code == ExitCode.USAGE_ERROR:
        return SessionVerdict([f"pytest reported a usage error: {tail}"], ExitCode.USAGE_ERROR)
    if exit_code == ExitCode.NO_TESTS_COLLECTED:
        return SessionVerdict(["no tests were collected"], ExitCode.NO_TESTS_COLLECTED)
    problem = (
        f"the command exited with {exit_code} without running pytest's session "
        f"with the flakewarden plugin (is it a pytest command?): {tail}"
    )
    code = ExitCode.USAGE_ERROR if exit_code == 127 else ExitCode.INTERNAL_ERROR
    return SessionVerdict([problem], code)


def _last_line(log: Path) -> str:
    """The line that says what went wrong: the last ``error:`` line, else the last line."""
    lines = read_tail(log, LOG_TAIL).strip().splitlines()
    meaningful = [ln.strip() for ln in lines if ln.strip() and not set(ln.strip()) <= set("=-_ ")]
    errors = [ln for ln in meaningful if "error:" in ln.lower()]
    chosen = errors[-1] if errors else (meaningful[-1] if meaningful else "")
    return chosen[:300]
