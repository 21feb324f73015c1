"""Time to a verdict: ``flakewarden stress`` against a naive ``pytest --count=200`` loop.

Two tests: a 10 ms test that always passes (the default stress run must
finish and bound its failure rate) and a check-then-act thread race (which
the naive loop almost never sees fail). Each measurement is repeated and the
median wall time is printed, with what each approach concluded.

    python benchmarks/bench_stress.py [--repeats 3] [--runs 200]

Needs pytest-repeat for the naive loop. Timings depend on the machine and its
load; they are measurements, never assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

TEN_MS = """
    import time


    def test_ten_ms():
        time.sleep(0.01)
"""
RACE = """
    import threading

    _registry = {}
    created = []


    def _make(key):
        created.append(key)
        return {"key": key, "name": "item-%d" % key, "tags": [str(key)]}


    def get_or_create(key):
        if key not in _registry:
            value = _make(key)
            _registry[key] = value
        return _registry[key]


    def test_each_key_is_created_once():
        _registry.clear()
        created.clear()
        barrier = threading.Barrier(4)

        def worker():
            barrier.wait()
            for key in range(1000):
                get_or_create(key)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(created) == 1000
"""
CASES = {
    "10 ms test": ("test_ten_ms.py", TEN_MS, "test_ten_ms.py::test_ten_ms"),
    "race test": ("test_race.py", RACE, "test_race.py::test_each_key_is_created_once"),
}
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:randomly"]


def naive(project: Path, test_id: str, count: int) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(
        [*PYTEST, "-q", "-p", "no:cacheprovider", f"--count={count}", test_id],
        cwd=project,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    failed = re.search(r"(\d+) failed", result.stdout)
    return elapsed, f"{int(failed.group(1)) if failed else 0}/{count} failed"


def stress(project: Path, test_id: str, runs: int) -> tuple[float, str]:
    """Default options: the evidence or the 600 s budget ends sampling (``runs`` is unused)."""
    report = project / "flakewarden-stress"
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "flakewarden", "stress", test_id,
         "--report-dir", str(report), "--", *PYTEST],
        cwd=project,
        capture_output=True,
        text=True,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    data = json.loads((report / "verdict.json").read_text(encoding="utf-8"))
    allowed = "allowed" if data["quarantine_allowed"] else "refused"
    return elapsed, f"{data['verdict']} (quarantine {allowed}) after {data['runs']} runs"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()}")
    print(f"{'case':<12} {'approach':<34} {'median s':>9}  runs of it (s)   outcome")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (filename, source, test_id) in CASES.items():
            project = Path(tmp) / filename[:-3]
            project.mkdir()
            (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
            (project / filename).write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
            approaches = [
                (f"pytest --count={args.runs}", naive),
                ("flakewarden stress (defaults)", stress),
            ]
            for label, measure in approaches:
                times, outcomes = [], []
                for _ in range(args.repeats):
                    elapsed, outcome = measure(project, test_id, args.runs)
                    times.append(elapsed)
                    outcomes.append(outcome)
                shown = " ".join(f"{t:.1f}" for t in times)
                print(
                    f"{name:<12} {label:<34} {statistics.median(times):>9.1f}  "
                    f"{shown:<15}  {'; '.join(sorted(set(outcomes)))}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
