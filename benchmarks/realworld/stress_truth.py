"""Stress truth on real projects: measure each test's cause with plain pytest, then compare.

For every case the script downloads the project's sdist at a pinned version
(``sdist.fetch``), builds a venv with pinned test tools, and establishes the
truth by plain pytest loops only (no flakewarden): fresh single runs, in-process
repeats (pytest-repeat's ``--count``), and the suspected polluter right before
the test. Then it runs ``flakewarden stress`` with default options (plus
``--order-from`` where the case has a recorded run) and writes the table to
``stress_truth.md`` beside this file.

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


@dataclasses.dataclass
class Case:
    name: str
    project: str
    version: str
    test_id: str
    polluter: Optional[str] = None  # run right before the test to measure an order dependency
    order_run: bool = False  # record a shuffled full run (pytest-randomly) for --order-from
    suite: str = "."


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
    if fresh_failed == FRESH_RUNS:
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
    subprocess.run(
        [
            *(sys.executable, "-m", "flakewarden", "stress", case.test_id, *options, "--"),
            *(str(python), "-m", "pytest", "-p", "no:randomly"),
        ],
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
    rows = []
    mismatches = 0
    venvs: dict[str, Path] = {}
    for case in CASES:
        if args.only and case.name not in args.only:
            continue
        root = sdist.fetch(case.project, case.version, work)
        key = f"{case.project}-{case.version}"
        if key not in venvs:
            venvs[key] = sdist.make_venv(work / f"venv-{key}", TOOLS)
        python = venvs[key]
        truth = measure(case, python, root)
        print(f"{case.name}: measured {truth}", flush=True)
        data, elapsed = stress(case, python, root, work)
        verdict = str(data["verdict"])
        match = verdict == truth["truth"]
        if case.polluter and verdict == "order-dependent":
            match = match and data.get("polluter") == case.polluter
        if truth["non_idempotent"]:
            match = match and bool(data.get("non_idempotent"))
        mismatches += not match
        print(f"{case.name}: verdict {verdict} ({'match' if match else 'MISMATCH'})", flush=True)
        rows.append((case, truth, data, elapsed, match))
    write_table(rows)
    return 1 if mismatches else 0


def write_table(rows: list[tuple[Case, dict[str, object], dict[str, object], float, bool]]) -> None:
    lines = [
        "# Stress truth on real projects",
        "",
        "Generated by `python benchmarks/realworld/stress_truth.py`. Truth is measured with plain",
        f"pytest loops: {FRESH_RUNS} fresh single runs under `-p no:randomly`, one process with",
        f"`--count={REPEAT_COUNT}` (failures among the repeats after the first), and",
        f"{PAIR_RUNS} runs of the suspected polluter right before the test. The verdict is",
        "`flakewarden stress` with default options (`--order-from` a recorded shuffled run",
        "where the case has one).",
        "",
        "| case | project | version | test | measured truth (loops) | verdict | polluter "
        "| non-idempotence noted | match | time |",
        "|---|---|---|---|---|---|---|---|---|---:|",
    ]
    for case, truth, data, elapsed, match in rows:
        loops = f"fresh {truth['fresh']} failed; repeats {truth['repeats']} failed"
        if "after_polluter" in truth:
            loops += f"; after polluter {truth['after_polluter']} failed"
        lines.append(
            f"| {case.name} | {case.project} | {case.version} | `{case.test_id}` "
            f"| **{truth['truth']}** ({loops}) | `{data['verdict']}` "
            f"| {('`' + str(data['polluter']) + '`') if data.get('polluter') else ''} "
            f"| {'yes' if data.get('non_idempotent') else 'no'} "
            f"| {'yes' if match else '**no**'} | {elapsed:.0f} s |"
        )
    lines += ["", *NOT_COVERED, ""]
    (HERE / "stress_truth.md").write_text("\n".join(lines), encoding="utf-8")


NOT_COVERED = [
    "## Not covered yet",
    "",
    "- **seed-dependent** and **race** on a real project: no real test with a measured seed",
    "  dependency or a measured timing sensitivity has been found and added yet, so those",
    "  verdicts are exercised only by the synthetic projects in `tests/test_stress*.py`.",
]


if __name__ == "__main__":
    sys.exit(main())
