"""Where a stress run's time goes: process start, pytest's set-up, the runs, the end, the gaps.

Runs ``flakewarden stress`` in this process on a small project (a trivial test by default,
or ``--sleep`` seconds per run) with the process pool's start and end of every child
recorded, and splits the wall time of every fresh process by the plugin's own records:

- start: from the fork (or spawn) to the plugin's import (interpreter, pytest, plugins);
- set-up: from the plugin's import to the first run's start (configuration, collection);
- runs: the test's own phases (setup, call, teardown, as pytest timed them);
- per-run overhead: the rest of the time between the first run's start and the session's
  end (pytest's run protocol, the plugin's records);
- end: from the session's end to the process's exit as the pool saw it (terminal summary,
  interpreter shut-down, the pool's polling);
- and the time between processes (the engine: burners, throttle, reading records, rules).

    python benchmarks/stress_time_split.py               # a trivial test, default options
    python benchmarks/stress_time_split.py --sleep 0.005

Timings depend on the machine and its load; they are measurements, never assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flakewarden import cli
from flakewarden.stress import pool, runs

TEST = """
    import time


    def test_case():
        {body}
    """


def _records(directory: Path) -> list[dict[str, Any]]:
    try:
        lines = (directory / "results.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    return [json.loads(line) for line in lines if line.strip()]


PARTS = ("start", "set-up", "runs", "per-run overhead", "end")


def split(children: Sequence[tuple[float, float, Path]]) -> dict[str, float]:
    """Seconds per part over every child; ``children`` holds (start, end, directory)."""
    parts = dict.fromkeys(PARTS, 0.0)
    for started, ended, directory in children:
        records = _records(directory)
        config = next((r for r in records if r["kind"] == "config"), None)
        first = next((r for r in records if r["kind"] == "start"), None)
        session = next((r for r in records if r["kind"] == "session"), None)
        if config is None or first is None or session is None:
            continue
        phases = sum(
            float(p.get("duration", 0.0))
            for r in records
            if r["kind"] == "test"
            for p in r.get("phases", [])
        )
        parts["start"] += config["loaded"] - started
        parts["set-up"] += first["time"] - config["loaded"]
        parts["runs"] += phases
        parts["per-run overhead"] += session["time"] - first["time"] - phases
        parts["end"] += ended - session["time"]
    return parts


def _by_group(children: Sequence[tuple[float, float, Path]]) -> list[str]:
    """One line per phase and knob: each part's median over its processes."""
    groups: dict[str, list[tuple[float, float, Path]]] = {}
    for child in children:
        groups.setdefault(child[2].name.split("-", 1)[1], []).append(child)
    lines = []
    for name, members in groups.items():
        medians = [statistics.median(split([member])[part] for member in members) for part in PARTS]
        shown = "  ".join(f"{part} {value:.3f}" for part, value in zip(PARTS, medians))
        lines.append(f"  {name:<24} x{len(members):<3} {shown}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--budget-seconds", type=float, default=None)
    args = parser.parse_args()
    children: list[tuple[float, float, Path]] = []
    started_at: dict[Path, float] = {}
    original_start, original_run_all = pool._start, runs.run_all

    def start(spec: pool.ChildSpec, server: Any, stop: Any) -> Any:
        started_at[spec.log.parent] = time.time()
        return original_start(spec, server, stop)

    def timed(specs: Sequence[pool.ChildSpec], parallel: int, **kw: Any) -> Any:
        outcomes = original_run_all(specs, parallel, **kw)
        for spec, outcome in zip(specs, outcomes):
            begin = started_at[spec.log.parent]
            children.append((begin, begin + outcome.duration, spec.log.parent))
        return outcomes

    pool._start = start  # type: ignore[assignment]
    runs.run_all = timed  # type: ignore[assignment]
    body = f"time.sleep({args.sleep!r})" if args.sleep else "pass"
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        source = textwrap.dedent(TEST.format(body=body)).lstrip()
        (project / "test_case.py").write_text(source, encoding="utf-8")
        report = project / "report"
        budget = (
            [] if args.budget_seconds is None else ["--budget-seconds", str(args.budget_seconds)]
        )
        os.chdir(project)
        started = time.time()
        code = cli.main(
            ["stress", "test_case.py::test_case", *budget, "--report-dir", str(report),
             "--", sys.executable, "-m", "pytest", "-p", "no:randomly"]
        )  # fmt: skip
        wall = time.time() - started
        verdict = json.loads((report / "verdict.json").read_text(encoding="utf-8"))
        parts = split(children)
        by_group = _by_group(children)
    in_children = sum(end - begin for begin, end, _ in children)
    print(
        f"verdict {verdict['verdict']} (exit {code}) after {verdict['runs']} runs in "
        f"{len(children)} processes, {wall:.1f} s"
    )
    for name, seconds in parts.items():
        print(f"  {name:<17} {seconds:7.1f} s  {100 * seconds / wall:5.1f}% of the wall time")
    print(
        f"  {'outside processes':<17} {wall - in_children:7.1f} s  "
        "(the engine, where one process ran at a time)"
    )
    print(f"runs per second: {verdict['runs'] / wall:.0f}")
    print("per process, by phase and knob (medians, s):")
    for line in by_group:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
