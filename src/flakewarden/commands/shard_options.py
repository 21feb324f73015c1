"""``--shard K/N`` and ``--shard-durations PATH``: one shard of a suite split across jobs."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from flakewarden.errors import FlakewardenError, UsageError

#: More shards than this is a typo: a matrix is capped at 256 jobs.
MAX_SHARDS = 256
#: Runs of the history a duration is averaged over.
HISTORY_RUNS = 20


def shard_spec(text: str) -> tuple[int, int]:
    """``K/N`` with 1 <= K <= N <= MAX_SHARDS."""
    index, slash, count = text.strip().partition("/")
    if not slash or not index.isdigit() or not count.isdigit() or len(text) > 12:
        raise argparse.ArgumentTypeError(f"expected K/N such as 2/4, got {text[:40]!r}")
    k, n = int(index), int(count)
    if not 1 <= n <= MAX_SHARDS:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_SHARDS} shards, got {n}")
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"expected a shard from 1 to {n}, got {k}")
    return k, n


def add_shard_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--shard",
        type=shard_spec,
        default=None,
        metavar="K/N",
        help="run only shard K of N of the collected tests (every test lands in exactly one "
        "shard); reruns stay within the shard",
    )
    parser.add_argument(
        "--shard-durations",
        type=Path,
        action="append",
        default=None,
        metavar="PATH",
        help="balance the shards by the test durations in this report directory, "
        "report.json or flake history database (repeatable); without it, by a stable hash "
        "of each test id",
    )


def durations_from(paths: list[Path]) -> dict[str, float]:
    """Seconds per test id: each report's first attempts, the history's recent mean.

    A later path's figure for a test replaces an earlier one's. Anything that cannot be
    read is a ``UsageError`` naming it: a shard balanced on nothing would be silent.
    """
    found: dict[str, float] = {}
    for path in paths:
        if not path.exists():
            raise UsageError(f"--shard-durations {path}: not found")
        read = _from_history(path) if _is_sqlite(path) else _from_report(path)
        found.update(read)
    return {k: v for k, v in found.items() if math.isfinite(v) and v >= 0}


def _is_sqlite(path: Path) -> bool:
    if not path.is_file():
        return False
    with open(path, "rb") as stream:
        return stream.read(16) == b"SQLite format 3\x00"


def _from_report(path: Path) -> dict[str, float]:
    from flakewarden.reports.report_json import read_report

    try:
        report = read_report(path)
    except FlakewardenError as exc:
        raise UsageError(f"--shard-durations: {exc}") from None
    return {t.id: t.attempts[0].duration for t in report.tests if t.attempts}


def _from_history(path: Path) -> dict[str, float]:
    import sqlite3  # here: it brings datetime, which a run imports only after its tests

    from flakewarden.history.store import HistoryStore

    try:
        with HistoryStore.open(path, create=False) as store:
            keys = [run.run_key for run in store.runs(limit=HISTORY_RUNS)]
            sums: dict[str, list[float]] = {}
            for entry in store.entries(keys):
                sums.setdefault(entry.test_id, []).append(entry.duration / max(entry.attempts, 1))
    except (FlakewardenError, sqlite3.Error) as exc:
        raise UsageError(f"--shard-durations {path}: {exc}") from None
    return {test: sum(values) / len(values) for test, values in sums.items()}
