"""Stress truth on real projects: measure each test's cause with plain pytest, then compare.

For every case the script downloads the project's sdist at a pinned version
(``sdist.fetch``), builds a venv with pinned test tools, and establishes the
truth by plain pytest loops only (no flakewarden): fresh single runs, in-process
repeats (pytest-repeat's ``--count``), the suspected polluter right before the
test, and pytest-randomly seeds one by one. Then it runs ``flakewarden stress``
with default options (plus ``--order-from`` where the case has a recorded run)
and writes the table to ``stress_truth.md`` beside this file (the raw figures
to ``stress_truth.json``; ``--only`` reruns some cases and keeps the others).

    python benchmarks/realworld/stress_truth.py [--work DIR] [--only NAME]

Exit status 1 when a verdict does not match the measured truth.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import sdist

HERE = Path(__file__).resolve().parent
TOOLS = ["pytest==9.2.0", "pytest-repeat==0.9.4", "pytest-randomly==5.1.0"]
FRESH_RUNS = 10
REPEAT_COUNT = 5
PAIR_RUNS = 5
SEEDS = range(1, 31)
SWEEP = range(1, 21)
CONFIRM_RUNS = 5


@dataclasses.dataclass
class Case:
    name: str
    project: str
    version: str
    test_id: str
    polluter: Optional[str] = None  # run right before the test to measure an order dependency
    order_run: bool = False  # record a shuffled full run (pytest-randomly) for --order-from
    suite: str = "."
    requirements: tuple[str, ...] = ()
    randomly: bool = False  # the suite runs under pytest-randomly: the seed may decide


CASES = [
    # IDoFT lists six's test_lazy as both non-idempotent and order-dependent: it asserts
    # html.parser is not imported yet, then imports it through six.moves.
    Case(
        "six-lazy-order",
        "six",
        "1.17.0",
        "test_six.py::test_lazy",
        polluter="test_six.py::test_move_items[html_parser]",
        order_run=True,
        suite="test_six.py",
    ),
    # The same test without a recorded run: only its self-pollution can be found.
    Case("six-lazy-alone", "six", "1.17.0", "test_six.py::test_lazy", suite="test_six.py"),
    # Negative control: a pure function of its inputs.
    Case("six-control", "six", "1.17.0", "test_six.py::test_add_doc", suite="test_six.py"),
    # IDoFT lists it as non-idempotent: it asserts tests.another_module is not imported
    # yet, then imports it; no other test imports that module.
    Case(
        "freezegun-import",
        "freezegun",
        "1.5.1",
        "tests/test_class_import.py::test_import_after_start",
        requirements=("python-dateutil==2.9.0.post0",),
    ),
    # IDoFT lists it as order-dependent (brittle): the module seeds the global random
    # at import and the reservoir sampler draws from it during the test. Under
    # pytest-randomly (reseeded before each test) the seed decides the outcome.
    Case(
        "lithoxyl-random",
        "lithoxyl",
        "21.0.0",
        "lithoxyl/tests/test_stats.py::test_acc_random",
        requirements=("boltons==25.0.0",),
        randomly=True,
    ),
]


def pytest_outcome(python: Path, root: Path, args: list[str], test_id: str) -> list[str]:
    """Outcomes of ``test_id`` (each repetition) in one plain pytest process."""
    done = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = []
    base = re.escape(test_id)
    for line in done.stdout.splitlines():
        match = re.match(rf"^(PASSED|FAILED|ERROR) {base}(\[\d+-\d+\])?( |$)", line)
        if match:
            found.append(match.group(1))
    return found


def measure(case: Case, python: Path, root: Path) -> dict[str, object]:
    """The truth by plain pytest loops: fresh runs, in-process repeats, after the polluter."""
    fixed = ["-p", "no:randomly"]
    fresh = [
        pytest_outcome(python, root, [*fixed, case.test_id], case.test_id)
        for _ in range(FRESH_RUNS)
    ]
    fresh_failed = sum(o[:1] != ["PASSED"] for o in fresh)
    repeats = pytest_outcome(
        python,
        root,
        [*fixed, "-p", "repeat", f"--count={REPEAT_COUNT}", case.test_id],
        case.test_id,
    )
    figures: dict[str, object] = {
        "fresh": f"{fresh_failed}/{FRESH_RUNS}",
        "repeats": f"{sum(o != 'PASSED' for o in repeats[1:])}/{len(repeats) - 1}",
        "first_of_repeats": repeats[:1],
    }
    pair_failed = None
    if case.polluter:
        pair = [
            pytest_outcome(python, root, [*fixed, case.polluter, case.test_id], case.test_id)
            for _ in range(PAIR_RUNS)
        ]
        pair_failed = sum(o[-1:] != ["PASSED"] for o in pair)
        figures["after_polluter"] = f"{pair_failed}/{PAIR_RUNS}"
    repeat_failed = sum(o != "PASSED" for o in repeats[1:])
    seeded = measure_seeds(case, python, root, figures) if case.randomly else False
    if seeded:
        truth = "seed-dependent"
    elif fresh_failed == FRESH_RUNS:
        truth = "deterministic"
    elif fresh_failed == 0 and pair_failed == PAIR_RUNS:
        truth = "order-dependent"
    elif fresh_failed == 0 and repeats[:1] == ["PASSED"] and repeat_failed == len(repeats) - 1:
        truth = "non-idempotent"
    elif fresh_failed == 0 and repeat_failed == 0:
        truth = "not-reproducible"
    else:
        truth = "flaky"
    figures["non_idempotent"] = (
        fresh_failed == 0 and repeats[:1] == ["PASSED"] and repeat_failed > 0
    )
    figures["truth"] = truth
    return figures


def measure_seeds(case: Case, python: Path, root: Path, figures: dict[str, object]) -> bool:
    """Seeds one by one; seed-dependent when a failing seed always fails and a passing one never."""

    def fails(seed: int) -> bool:
        args = ["-p", "randomly", f"--randomly-seed={seed}", case.test_id]
        return pytest_outcome(python, root, args, case.test_id)[:1] != ["PASSED"]

    failing = [seed for seed in SWEEP if fails(seed)]
    passing = [seed for seed in SWEEP if seed not in failing]
    figures["failing_seeds"] = failing
    figures["seeds"] = f"{len(failing)}/{len(SWEEP)} seeds failed"
    if not failing or not passing:
        return False
    bad = sum(fails(failing[0]) for _ in range(CONFIRM_RUNS))
    good = sum(fails(passing[0]) for _ in range(CONFIRM_RUNS))
    figures["seeds"] += (
        f"; seed {failing[0]} failed {bad}/{CONFIRM_RUNS}, seed {passing[0]} failed "
        f"{good}/{CONFIRM_RUNS}"
    )
    return bad == CONFIRM_RUNS and good == 0


def order_report(case: Case, python: Path, root: Path, work: Path) -> Optional[Path]:
    """A recorded shuffled full run in which the test failed: the first such seed."""
    for seed in SEEDS:
        outcome = pytest_outcome(
            python, root, ["-p", "randomly", f"--randomly-seed={seed}", case.suite], case.test_id
        )
        if outcome == ["FAILED"]:
            report_dir = work / f"{case.name}-run"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "flakewarden",
                    "run",
                    "--reruns",
                    "0",
                    "--report-dir",
                    str(report_dir),
                    "--",
                    str(python),
                    "-m",
                    "pytest",
                    "-p",
                    "randomly",
                    f"--randomly-seed={seed}",
                    case.suite,
                ],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=600,
            )
            return report_dir / "report.json"
    return None


def stress(case: Case, python: Path, root: Path, work: Path) -> tuple[dict[str, object], float]:
    report_dir = work / f"{case.name}-stress"
    options = ["--report-dir", str(report_dir)]
    if case.order_run:
        report = order_report(case, python, root, work)
        if report is not None:
            options += ["--order-from", str(report)]
    started = time.monotonic()
    command = [str(python), "-m", "pytest", *([] if case.randomly else ["-p", "no:randomly"])]
    subprocess.run(
        [sys.executable, "-m", "flakewarden", "stress", case.test_id, *options, "--", *command],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    elapsed = time.monotonic() - started
    data = json.loads((report_dir / "verdict.json").read_text(encoding="utf-8"))
    return data, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/flakewarden-stress-truth"))
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args()
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    results_path = HERE / "stress_truth.json"
    results: dict[str, dict[str, object]] = {}
    if args.only and results_path.exists():
        results = json.loads(results_path.read_text(encoding="utf-8"))
    venvs: dict[str, Path] = {}
    for case in CASES:
        if args.only and case.name not in args.only:
            continue
        root = sdist.fetch(case.project, case.version, work)
        key = f"{case.project}-{case.version}"
        if key not in venvs:
            venvs[key] = sdist.make_venv(work / f"venv-{key}", [*TOOLS, *case.requirements])
        python = venvs[key]
        truth = measure(case, python, root)
        print(f"{case.name}: measured {truth}", flush=True)
        data, elapsed = stress(case, python, root, work)
        verdict = str(data["verdict"])
        match = verdict == truth["truth"]
        if case.polluter and verdict == "order-dependent":
            match = match and data.get("polluter") == case.polluter
        if verdict == "seed-dependent":
            failing = truth.get("failing_seeds")
            match = match and isinstance(failing, list) and data.get("seed") in failing
        if truth["non_idempotent"]:
            match = match and bool(data.get("non_idempotent"))
        print(f"{case.name}: verdict {verdict} ({'match' if match else 'MISMATCH'})", flush=True)
        results[case.name] = {
            "truth": truth,
            "verdict": verdict,
            "polluter": data.get("polluter"),
            "seed": data.get("seed"),
            "non_idempotent": bool(data.get("non_idempotent")),
            "runs": data.get("runs"),
            "seconds": round(elapsed, 1),
            "match": match,
        }
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    write_table(results)
    return 0 if all(r["match"] for r in results.values()) else 1


def write_table(results: dict[str, dict[str, object]]) -> None:
    lines = [
        "# Stress truth on real projects",
        "",
        "Generated by `python benchmarks/realworld/stress_truth.py`. Truth is measured with plain",
        f"pytest loops: {FRESH_RUNS} fresh single runs under `-p no:randomly`, one process with",
        f"`--count={REPEAT_COUNT}` (failures among the repeats after the first), and",
        f"{PAIR_RUNS} runs of the suspected polluter right before the test, and for a suite",
        f"under pytest-randomly seeds {SWEEP.start}-{SWEEP.stop - 1} one per process (then",
        f"the first failing and first passing seed {CONFIRM_RUNS} times each). The verdict is",
        "`flakewarden stress` with default options (`--order-from` a recorded shuffled run",
        "where the case has one).",
        "",
        "| case | project | version | test | measured truth (loops) | verdict | named "
        "| non-idempotence noted | match | runs | time |",
        "|---|---|---|---|---|---|---|---|---|---:|---:|",
    ]
    for case in CASES:
        if case.name not in results:
            continue
        row = results[case.name]
        truth = row["truth"]
        assert isinstance(truth, dict)
        loops = f"fresh {truth['fresh']} failed; repeats {truth['repeats']} failed"
        if "after_polluter" in truth:
            loops += f"; after polluter {truth['after_polluter']} failed"
        if "seeds" in truth:
            loops += f"; {truth['seeds']}"
        named = ""
        if row.get("polluter"):
            named = f"polluter `{row['polluter']}`"
        elif row.get("seed") is not None:
            named = f"seed {row['seed']}"
        lines.append(
            f"| {case.name} | {case.project} | {case.version} | `{case.test_id}` "
            f"| **{truth['truth']}** ({loops}) | `{row['verdict']}` | {named} "
            f"| {'yes' if row['non_idempotent'] else 'no'} "
            f"| {'yes' if row['match'] else '**no**'} | {row['runs']} | {row['seconds']:.0f} s |"
        )
    lines += ["", *NOT_COVERED, ""]
    (HERE / "stress_truth.md").write_text("\n".join(lines), encoding="utf-8")


NOT_COVERED = [
    "## Found and fixed in flakewarden by these cases",
    "",
    "- six's `test_lazy` passes once per fresh process and fails every in-process repeat:",
    "  isolation used to repeat it 5 times per process and call it `flaky`. Isolation now",
    "  runs once per fresh process and records the repeats as non-idempotence evidence.",
    "- lithoxyl's `test_acc_random` fails every fresh run under `-p no:randomly` (the",
    "  module's own fixed seed) but passes under most pytest-randomly seeds: once isolation",
    "  ran once per fresh process it was called `deterministic`. With pytest-randomly in",
    "  use, the seed sweep now runs before a test is called deterministic.",
    "",
    "## Not covered yet",
    "",
    "- **race** on a real project: no real test with a measured timing sensitivity has been",
    "  found and added yet, so that verdict is exercised only by the synthetic projects in",
    "  `tests/test_stress.py` (a check-then-act thread race, a too-tight deadline).",
]


if __name__ == "__main__":
    sys.exit(main())
