"""How ``flakewarden run`` is asked to run: the command, the policy, the report's files.

Apart from the attempt loop (``reruns``) so that what configures a run (the ``run``
command, blame, burn-in, the cutoff) reads it without the loop's imports.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, NamedTuple, Optional

if TYPE_CHECKING:
    from flakewarden.model import RerunPolicy, RunReport


class RunOptions(NamedTuple):
    """How to run: the command, where, and the policy. (Like every class this module
    makes before the tests start, not a dataclass: see ``loop_state``.)"""

    command: list[str]
    cwd: Path
    report_dir: Path
    reruns: int = 2
    max_failures: int = 10
    coverage: bool = False  # wrap the command in ``coverage run``
    cov_fail_under: Optional[float] = None
    fail_on_flaky: bool = False
    quarantined: frozenset[str] = frozenset()
    echo: Optional[IO[bytes]] = None  # where the children's output is shown
    attempt_timeout: Optional[float] = None  # seconds each test process may run
    # Called once attempt 1's process has started: the caller imports what it needs after
    # the tests (the report writers) while pytest starts, not after it exits.
    while_first_runs: Optional[Callable[[], object]] = None
    # ``--shard K/N``: attempt 1 runs only shard K (1-based) of N, balanced by these
    # seconds per test id when given; reruns and continuations select by id within it.
    shard: Optional[tuple[int, int]] = None
    shard_durations: Optional[dict[str, float]] = None
    rerun_policy: Optional[RerunPolicy] = None  # which failures are rerun, by what they raised
    # More environment for one process of an attempt: (attempt number, measured by
    # coverage, the process's directory) -> variables (blame measures the change this way).
    part_env: Optional[Callable[[int, bool, Path], dict[str, str]]] = None
    # Called with the folded report (and attempt 1's pytest configuration, as the plugin
    # recorded it) before its exit code is set; answers the failed tests that do not fail
    # the run (blame's ``ignore-in-gate``).
    judge: Optional[Callable[[RunReport, Optional[dict[str, Any]]], frozenset[str]]] = None
    # Causes of the environment's (``causes.environment``; none unless given): failures that
    # are one of them are rerun past max_failures, up to a limit (``runner/cutoff.py``).
    environment: tuple[str, ...] = ()
    environment_rerun_limit: int = 200
    fork_reruns: bool = True  # reruns forked from a warm pytest where safe (``rerun_forks``)


Say = Callable[[str], None]


def now_iso(seconds: Optional[float] = None) -> str:
    """UTC, to the millisecond: now, or ``seconds`` since the epoch (``time.time()``).

    The start time is part of a run's history key (``model.history.run_key``): two runs of one
    job, or of one command on a laptop, within the same second must not share a key.
    """
    import datetime  # not before the tests start: a run reads the clock, formats it after

    when = time.time() if seconds is None else seconds
    return datetime.datetime.fromtimestamp(when, datetime.timezone.utc).isoformat(
        timespec="milliseconds"
    )


REPORT_FILES = (
    "attempts",
    "report.json",
    "rerun-report.txt",
    "junit.xml",
    "junit-xunit1.xml",
    "summary.md",
    "report.html",
    ".coverage",
    "coverage.xml",
    "blame-base",
)
