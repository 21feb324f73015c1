"""Verdicts of real stress runs: false races on flat rates, found races, and time to a verdict.

Runs ``flakewarden stress`` with its default options (or ``--budget-seconds``) on small
real projects, trial after trial, the cases interleaved so that the machine's drift hits
them alike, and prints per case how often each verdict came out, with a 95% Clopper-Pearson
interval on the share that matters, and the median seconds and runs:

- flat-rate tests (a coin drawn from the operating system, at 2% and 8%, with and
  without a 5 ms sleep): a ``race`` verdict is a false race (the goal is at most 5%, as
  the simulation claims);
- the corpus's knob-only races (eight threads losing an update between a read and a
  write; a lost update inside one line; two asyncio tasks relying on their order): a
  verdict other than ``race`` is a miss (the goal is 100% ``race``);
- a trivial clean test (goal: bounded ``not-reproducible`` in 15 s or less) and a flat
  2.5% coin (goal: ``flaky`` with quarantine allowed within 120 s).

    python benchmarks/bench_stress_verdicts.py --trials 10              # every case
    python benchmarks/bench_stress_verdicts.py --cases "coin 2%" --cases "coin 8%" --trials 10

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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers.stress_corpus import (
    LOST_UPDATE,
    ONE_LINE_LOST_UPDATE,
    TASK_ORDER_RACE,
)

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:randomly"]


def _coin(rate: float, sleep: float) -> str:
    wait = f"time.sleep({sleep!r})" if sleep else "pass"
    return f"""
        import random
        import time


        def test_coin():
            {wait}
            # The operating system's draw: no seed reaches it, so the rate is flat. (A draw of
            # the ``random`` module replays from the process's seed: seed-dependent.)
            assert random.SystemRandom().random() >= {rate!r}
        """


TRIVIAL = """
    def test_trivial():
        assert 1 + 1 == 2
    """

# name: (files, test id, kind): "flat" counts races as false, "race" counts misses
CASES = {
    "coin 2%": ({"test_case.py": _coin(0.02, 0)}, "test_case.py::test_coin", "flat"),
    "coin 2% + 5 ms": ({"test_case.py": _coin(0.02, 0.005)}, "test_case.py::test_coin", "flat"),
    "coin 8%": ({"test_case.py": _coin(0.08, 0)}, "test_case.py::test_coin", "flat"),
    "coin 8% + 5 ms": ({"test_case.py": _coin(0.08, 0.005)}, "test_case.py::test_coin", "flat"),
    "coin 2.5%": ({"test_case.py": _coin(0.025, 0)}, "test_case.py::test_coin", "flat"),
    "lost update (8 threads)": (
        LOST_UPDATE,
        "test_stock.py::test_concurrent_reservations_are_all_counted",
        "race",
    ),
    "lost update in one line": (
        ONE_LINE_LOST_UPDATE,
        "test_counter.py::test_every_increment_is_counted",
        "race",
    ),
    "asyncio task order": (
        TASK_ORDER_RACE,
        "test_cache.py::test_the_reader_sees_the_warmed_cache",
        "race",
    ),
    "trivial clean": ({"test_case.py": TRIVIAL}, "test_case.py::test_trivial", "clean"),
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
    parser.add_argument(
        "--cases",
        action="append",
        default=[],
        help="run only this case, or the cases whose name contains it (repeatable)",
    )
    parser.add_argument("--budget-seconds", type=float, default=None)
    parser.add_argument("--json", type=Path, default=None, help="write every trial's result")
    args = parser.parse_args()
    # A case named exactly is taken alone; else every case whose name contains the text.
    chosen = {k: v for k, v in CASES.items() if k in args.cases} or {
        k: v for k, v in CASES.items() if not args.cases or any(c in k for c in args.cases)
    }
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()}")
    results: dict[str, list[dict[str, object]]] = {name: [] for name in chosen}
    with tempfile.TemporaryDirectory() as tmp:
        projects = {}
        for i, (name, (files, _, _)) in enumerate(chosen.items()):
            project = Path(tmp) / f"case{i}"
            project.mkdir()
            (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
            for filename, text in files.items():
                (project / filename).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
            projects[name] = project
        for trial in range(args.trials):
            for name, (_, test_id, _) in chosen.items():
                result = run_stress(projects[name], test_id, args.budget_seconds)
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
