"""Shards of a 2,000-test suite: the merge equals the unsharded run, the shards are balanced.

Run:  python benchmarks/bench_shards.py [--tests 2000] [--shards 4] [--merges 5]

A suite is generated in a temporary directory: ``--tests`` tests over 40 modules, each
covering one function of a 100-function package, with durations drawn (seeded) from a
long-tailed distribution (most a few milliseconds, a few up to 0.4 s), 1 in 400 failing its
first attempt only (a flake) and one failing always. It is run once unsharded with coverage,
then as ``--shards`` shards twice: balanced by a stable hash of each id, and balanced by the
unsharded run's durations (``--shard-durations``). The table shows, for each split, the
longest shard's test time against a quarter of the total (the target: within 1.2x), and
whether the merged totals, outcomes and coverage equal the unsharded run's. Then
``flakewarden merge`` of the duration-balanced shards is timed ``--merges`` times as a whole
subprocess (interpreter start-up included): median and range.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PYTHON = sys.executable
SEED = 2026
_LEAKY = ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "COVERAGE_FILE")


def _env() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if k not in _LEAKY and not k.startswith(("GITHUB_", "RUNNER_", "FLAKEWARDEN_"))
    }


def generate(root: Path, tests: int) -> None:
    rng = random.Random(SEED)
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "funcs.py").write_text(
        "".join(f"def f{n}(x):\n    return x + {n}\n\n\n" for n in range(100))
    )
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:randomly -p no:cacheprovider\n")
    (root / ".coveragerc").write_text("[run]\nsource = pkg\n")
    per_module = tests // 40
    for m in range(40):
        lines = ["import time", "from pathlib import Path", "from pkg import funcs", ""]
        for t in range(per_module):
            n = m * per_module + t
            # Long-tailed: most tests take milliseconds, a few take hundreds.
            seconds = min(
                0.4, rng.expovariate(1 / 0.004) if rng.random() < 0.97 else rng.uniform(0.05, 0.4)
            )
            lines.append(f"def test_{n}():")
            lines.append(f"    time.sleep({seconds:.4f})")
            lines.append(f"    assert funcs.f{n % 97}(0) == {n % 97}")
            if n % 400 == 7:
                lines.append(f"    mark = Path(__file__).with_name('.seen-{n}')")
                lines.append("    if not mark.exists():")
                lines.append("        mark.write_text('x')")
                lines.append("        raise AssertionError('flaked')")
            if n == tests // 2:
                lines.append("    raise AssertionError('always broken')")
            lines.append("")
        (root / f"test_m{m:02d}.py").write_text("\n".join(lines) + "\n")


def _run(root: Path, report: str, *args: str) -> dict[str, Any]:
    for mark in root.glob(".seen-*"):
        mark.unlink()
    subprocess.run(
        [
            PYTHON,
            "-m",
            "flakewarden",
            "run",
            "-q",
            "--coverage",
            "--report-dir",
            report,
            *args,
            "--",
            PYTHON,
            "-m",
            "pytest",
            "-q",
        ],
        cwd=root,
        env=_env(),
        capture_output=True,
        check=False,
    )
    return json.loads((root / report / "report.json").read_text(encoding="utf-8"))


def _test_time(report: dict[str, Any]) -> float:
    return sum(a["duration"] for t in report["tests"] for a in t["attempts"])


def _merge(root: Path, dirs: list[str], out: str) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    subprocess.run(
        [PYTHON, "-m", "flakewarden", "merge", *dirs, "--report-dir", out],
        cwd=root,
        env=_env(),
        capture_output=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    return json.loads((root / out / "report.json").read_text(encoding="utf-8")), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--merges", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp:
        root = Path(tmp) / "suite"
        generate(root, args.tests)
        whole = _run(root, "whole")
        outcomes = {t["id"]: t["outcome"] for t in whole["tests"]}
        print(
            f"suite: {len(outcomes)} tests, {_test_time(whole):.1f} s of test time, "
            f"coverage {whole['coverage']['percent']:.2f}%, totals {whole['totals']}"
        )
        print(
            f"{'split':<10} {'longest s':>10} {'total/N s':>10} {'ratio':>6} {'merge = whole':>14}"
        )
        timed: list[float] = []
        for split, extra in (("hash", []), ("durations", ["--shard-durations", "whole"])):
            dirs, times = [], []
            for k in range(1, args.shards + 1):
                name = f"{split}-{k}"
                shard = _run(root, name, "--shard", f"{k}/{args.shards}", *extra)
                dirs.append(name)
                times.append(_test_time(shard))
            merged, _ = _merge(root, dirs, f"merged-{split}")
            same = (
                merged["totals"] == whole["totals"]
                and {t["id"]: t["outcome"] for t in merged["tests"]} == outcomes
                and merged["coverage"]["percent"] == whole["coverage"]["percent"]
            )
            quarter = sum(times) / args.shards
            print(
                f"{split:<10} {max(times):>10.2f} {quarter:>10.2f} {max(times) / quarter:>6.2f} "
                f"{'yes' if same else 'NO':>14}"
            )
            if split == "durations":
                for _ in range(args.merges):
                    shutil.rmtree(root / "timed", ignore_errors=True)
                    timed.append(_merge(root, dirs, "timed")[1])
        print(
            f"flakewarden merge of {args.shards} shards: median {statistics.median(timed):.2f} s "
            f"(range {min(timed):.2f}-{max(timed):.2f}, {args.merges} runs, whole subprocess)"
        )


if __name__ == "__main__":
    main()
