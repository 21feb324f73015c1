"""Verdicts of real stress runs: false races on flat rates, found races, and time to a verdict.

Runs ``flakewarden stress`` with its default options (or ``--budget-seconds``) on small
real projects, trial after trial, the cases interleaved so that the machine's drift hits
them alike, and prints per case how often each verdict came out, with a 95% Clopper-Pearson
interval on the share that matters, and the median seconds and runs:

- flat-rate tests (a ``random`` coin at 2% and 8%, with and without a 5 ms sleep): a
  ``race`` verdict is a false race (the goal is at most 5%, as the simulation claims);
- the corpus's knob-only races (eight threads losing an update between a read and a
  write; a lost update inside one line; two asyncio tasks relying on their order): a
  verdict other than ``race`` is a miss (the goal is 100% ``race``);
- a trivial clean test (goal: bounded ``not-reproducible`` in 15 s or less) and a flat
  2.5% coin (goal: ``flaky`` with quarantine allowed within 120 s).

    python benchmarks/bench_stress_verdicts.py --trials 10              # every case
    python benchmarks/bench_stress_verdicts.py --cases coin --trials 10  # names containing "coin"

Timings depend on the machine and its load; they are measurements, never assertions.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from flakewarden.model.binomial import clopper_pearson

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:randomly"]


def _coin(rate: float, sleep: float) -> str:
    wait = f"time.sleep({sleep!r})" if sleep else "pass"
    return f"""
        import random
        import time


        def test_coin():
            {wait}
            assert random.random() >= {rate!r}
        """


LOST_UPDATE = """
    import threading


    class Stock:
        def __init__(self, units):
            self.units = units

        def reserve(self, count):
            current = self.units
            for _ in range(400):
                pass
            self.units = current - count


    def test_race():
        stock = Stock(1000)
        barrier = threading.Barrier(8)

        def customer():
            barrier.wait()
            stock.reserve(1)

        threads = [threading.Thread(target=customer) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert stock.units == 992
    """
ONE_LINE = """
    import threading


    class Counter:
        def __init__(self):
            self.count = 0

        def add(self):
            self.count += 1


    def test_race():
        counter = Counter()
        barrier = threading.Barrier(4)

        def work():
            barrier.wait()
            for _ in range(2000):
                counter.add()

        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert counter.count == 8000
    """
TASK_ORDER = """
    import asyncio


    async def warm(cache):
        await asyncio.sleep(0)
        cache["config"] = {"retries": 3}


    async def read(cache, seen):
        await asyncio.sleep(0)
        seen.append(cache.get("config"))


    def test_race():
        async def main():
            cache, seen = {}, []
            await asyncio.gather(warm(cache), read(cache, seen))
            return seen

        assert asyncio.run(main()) == [{"retries": 3}]
    """
TRIVIAL = """
    def test_trivial():
        assert 1 + 1 == 2
    """

# name: (source, test name, kind): "flat" counts races as false, "race" counts misses
CASES = {
    "coin 2%": (_coin(0.02, 0), "test_coin", "flat"),
    "coin 2% + 5 ms": (_coin(0.02, 0.005), "test_coin", "flat"),
    "coin 8%": (_coin(0.08, 0), "test_coin", "flat"),
    "coin 8% + 5 ms": (_coin(0.08, 0.005), "test_coin", "flat"),
    "coin 2.5%": (_coin(0.025, 0), "test_coin", "flat"),
    "lost update (8 threads)": (LOST_UPDATE, "test_race", "race"),
    "lost update in one line": (ONE_LINE, "test_race", "race"),
    "asyncio task order": (TASK_ORDER, "test_race", "race"),
    "trivial clean": (TRIVIAL, "test_trivial", "clean"),
}


def run_stress(project: Path, test_id: str, budget: float | None) -> dict[str, object]:
    report = project / "flakewarden-stress"
    budget_args = [] if budget is None else ["--budget-seconds", f"{budget:g}"]
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "flakewarden", "stress", test_id, *budget_args,
         "--report-dir", str(report), "--", *PYTEST],
        cwd=project, capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    data = json.loads((report / "verdict.json").read_text(encoding="utf-8"))
    return {
        "verdict": data["verdict"],
        "knob": data.get("knob"),
        "allowed": bool(data["quarantine_allowed"]),
        "runs": int(data["runs"]),
        "seconds": seconds,
    }


def _share(hits: int, trials: int) -> str:
    low, high = clopper_pearson(hits, trials)
    return (
        f"{hits}/{trials} = {100 * hits / trials:.1f}% (95% CI {100 * low:.1f}-{100 * high:.1f}%)"
    )


def summarise(name: str, kind: str, results: list[dict[str, object]]) -> str:
    trials = len(results)
    verdicts = collections.Counter(
        f"{r['verdict']}{'/' + str(r['knob']) if r['knob'] else ''}"
        f"{' (allowed)' if r['allowed'] else ''}"
        for r in results
    )
    seconds = statistics.median(float(str(r["seconds"])) for r in results)
    runs = statistics.median(int(str(r["runs"])) for r in results)
    shown = ", ".join(f"{v} x{n}" for v, n in verdicts.most_common())
    if kind == "flat":
        key = f"false race {_share(sum(r['verdict'] == 'race' for r in results), trials)}"
    elif kind == "race":
        key = f"race {_share(sum(r['verdict'] == 'race' for r in results), trials)}"
    else:
        allowed = sum(r["verdict"] == "not-reproducible" and bool(r["allowed"]) for r in results)
        key = f"bounded not-reproducible {_share(allowed, trials)}"
    return f"{name:<24} {key}; median {seconds:.1f} s, {runs:.0f} runs; {shown}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--cases", default="", help="run only the cases whose name contains it")
    parser.add_argument("--budget-seconds", type=float, default=None)
    parser.add_argument("--json", type=Path, default=None, help="write every trial's result")
    args = parser.parse_args()
    chosen = {k: v for k, v in CASES.items() if args.cases in k}
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()}")
    results: dict[str, list[dict[str, object]]] = {name: [] for name in chosen}
    with tempfile.TemporaryDirectory() as tmp:
        projects = {}
        for i, (name, (source, _, _)) in enumerate(chosen.items()):
            project = Path(tmp) / f"case{i}"
            project.mkdir()
            (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
            (project / "test_case.py").write_text(
                textwrap.dedent(source).lstrip(), encoding="utf-8"
            )
            projects[name] = project
        for trial in range(args.trials):
            for name, (_, test, _) in chosen.items():
                result = run_stress(projects[name], f"test_case.py::{test}", args.budget_seconds)
                results[name].append(result)
                print(
                    f"trial {trial + 1} {name}: {result['verdict']} "
                    f"{result['knob'] or ''} {float(str(result['seconds'])):.1f} s",
                    flush=True,
                )
    print()
    for name, (_, _, kind) in chosen.items():
        print(summarise(name, kind, results[name]))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
