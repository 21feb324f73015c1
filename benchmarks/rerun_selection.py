"""What a rerun process costs for each way of handing it the tests to rerun.

Used by ``bench_reruns_vs_rerunfailures.py --selection``. Every way runs a fresh
``python -m pytest`` with flakewarden's plugin injected (for its stamps: when pytest
imported it, configured, collected, finished), in rounds that rotate the order:

- the files holding the tests plus a file of node ids the plugin keeps (what
  ``flakewarden run`` does: exact for any id, only those files collected);
- the node ids on the command line (pytest's own selection);
- the whole suite plus the file of ids (what a rerun costs when the ids cannot be
  named as files, so the plugin selects from everything);
- the files alone (every test in them runs: the collection floor, not a valid rerun).

Two more rows time ``python -c pass`` and ``python -c "import pytest"``: the
interpreter's and pytest's import share of the start-up.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import timings_split

from flakewarden.runner.process import plugin_dir, plugin_env

PYTHON = sys.executable


def _ids(root: Path, flaky: int) -> list[str]:
    return [f"test_mod{module:03d}.py::test_flaky_{module}" for module in range(flaky)]


def _run(
    root: Path, args: list[str], env: dict[str, str], where: Path, select: Optional[list[str]]
) -> dict[str, float]:
    where.mkdir(parents=True, exist_ok=True)
    results = where / "results.jsonl"
    results.unlink(missing_ok=True)
    select_file = None
    if select is not None:
        select_file = where / "select.json"
        select_file.write_text(json.dumps(select), encoding="utf-8")
    started = time.time()
    done = subprocess.run(
        [PYTHON, "-m", "pytest", *args],
        cwd=root,
        env=plugin_env(PLUGIN, results, select=select_file, base=env),
        capture_output=True,
        text=True,
    )
    ended = time.time()
    if done.returncode not in (0, 1):
        raise SystemExit(f"pytest {args[:3]}... exited {done.returncode}:\n{done.stdout[-1500:]}")
    split = timings_split.child_split(
        {"log": str(where / "output.log"), "start": started, "exited": ended}
    )
    return {"wall": ended - started, **split}


def _bare(code: str, env: dict[str, str]) -> dict[str, float]:
    started = time.time()
    subprocess.run([PYTHON, "-c", code], env=env, check=True)
    return {"wall": time.time() - started}


PLUGIN = Path()


def compare(root: Path, env: dict[str, str], flaky: int, rounds: int, work: Path) -> None:
    global PLUGIN
    ids = _ids(root, flaky)
    files = [str(root / i.split("::")[0]) for i in ids]
    rootdir = f"--rootdir={root}"
    ways = {
        "files + id file (flakewarden)": lambda w: _run(root, [rootdir, *files], env, w, ids),
        "node ids on the command line": lambda w: _run(root, [rootdir, *ids], env, w, None),
        "whole suite + id file": lambda w: _run(root, [rootdir], env, w, ids),
        "files alone (runs all their tests)": lambda w: _run(root, [rootdir, *files], env, w, None),
        "python -c pass": lambda w: _bare("pass", env),
        'python -c "import pytest"': lambda w: _bare("import pytest", env),
    }
    names = list(ways)
    measured: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    with plugin_dir() as PLUGIN:
        for name in names:  # warm-up
            ways[name](work / "warm")
        for number in range(rounds):
            order = names[number % len(names) :] + names[: number % len(names)]
            for name in order:
                measured[name].append(ways[name](work / f"r{number}"))
            print(f"  round {number + 1} done", flush=True)
    columns = ("wall", *timings_split.CHILD)
    width = max(len(n) for n in names)
    print()
    print(f"medians of {rounds} rounds, seconds (q1-q3 of the wall time)")
    header = "".join(f"  {c[:12]:>12}" for c in columns)
    print(f"{'rerun process':<{width}}  {'kept':>5}{header}  {'wall q1-q3':>13}")
    for name in names:
        runs = measured[name]
        cells = []
        for column in columns:
            values = [r[column] for r in runs if column in r]
            cells.append(f"{timings_split.quartiles(values)[0]:.3f}" if values else "")
        kept = str(int(runs[-1]["items"])) if "items" in runs[-1] else ""
        _, q1, q3 = timings_split.quartiles([r["wall"] for r in runs])
        print(
            f"{name:<{width}}  {kept:>5}"
            + "".join(f"  {c:>12}" for c in cells)
            + f"  {q1:.3f}-{q3:.3f}"
        )
