"""The slowest tests and files of one or more ``flakewarden run`` report directories.

The project's CI (``.ci/run``) writes ``ci-report/{parallel,serial,hostile}/report.json``;
every attempt of every test carries its duration. This prints where the suite's time goes,
so the tests to make cheaper are picked from a real run instead of a guess:

    python benchmarks/slowest_tests.py ci-report/*/report.json            # top 30 tests
    python benchmarks/slowest_tests.py --top 10 --files ci-report/*/report.json

A test's time is the sum of its attempts (a rerun counts); a part's "wall" is the run's own
duration, its "test time" the sum over its tests (above the wall when workers ran at once).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any


def test_seconds(test: dict[str, Any]) -> float:
    """Every attempt's duration: a test rerun twice cost the suite three runs."""
    return float(sum(attempt.get("duration") or 0.0 for attempt in test.get("attempts", ())))


def read_part(path: Path) -> tuple[str, float, list[tuple[float, str, str]]]:
    """The part's name (its directory), its wall time, and (seconds, file, id) per test."""
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = [(test_seconds(t), str(t.get("file", "")), str(t["id"])) for t in data["tests"]]
    return path.parent.name, float(data.get("duration") or 0.0), rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", type=Path, help="report.json files")
    parser.add_argument("--top", type=int, default=30, help="how many tests (default 30)")
    parser.add_argument("--files", action="store_true", help="also the time per test file")
    args = parser.parse_args(argv)
    everything: list[tuple[float, str, str, str]] = []
    for path in args.reports:
        try:
            part, wall, rows = read_part(path)
        except (OSError, ValueError, KeyError, TypeError) as error:
            print(f"slowest_tests: {path}: not a readable report.json ({error})", file=sys.stderr)
            return 2
        total = sum(seconds for seconds, _, _ in rows)
        print(f"{part}: {len(rows)} tests, wall {wall:.0f} s, test time {total:.0f} s")
        everything += [(seconds, part, file, test_id) for seconds, file, test_id in rows]
    everything.sort(reverse=True)
    print(f"\nslowest {args.top} tests (seconds, part, id):")
    for seconds, part, _, test_id in everything[: args.top]:
        print(f"{seconds:8.1f}  {part:<9} {test_id}")
    if args.files:
        per_file: dict[tuple[str, str], list[float]] = defaultdict(list)
        for seconds, part, file, _ in everything:
            per_file[(part, file)].append(seconds)
        print("\ntest files (seconds, tests, part, file):")
        for (part, file), times in sorted(per_file.items(), key=lambda kv: -sum(kv[1])):
            print(f"{sum(times):8.1f}  {len(times):5d}  {part:<9} {file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
