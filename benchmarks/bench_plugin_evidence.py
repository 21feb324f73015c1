"""Cost of the plugin's evidence (a failure's exceptions, in-test retries) on a green suite.

Run:  python benchmarks/bench_plugin_evidence.py [--tests 2000] [--pairs 9] [--baseline REV]

A green suite of trivial tests is generated in a temporary directory. Each pair runs, as
whole subprocesses, ``python -m pytest`` with the plugin of ``--baseline`` (default
``2ce069b``, the last single-file plugin, loaded as a plain module) and then with this
tree's plugin package as ``flakewarden run`` injects it; both record into a results file.
Pairs alternate so a noisy neighbour slows both sides alike; one warm-up of each is not
counted. Printed: the median wall and CPU time of each side, and the median of the
per-pair ratios (candidate / baseline). What is added per test is a hook wrapper around
``pytest_runtest_makereport`` (three phases per test) that attaches nothing on a pass.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from flakewarden.runner.process import PLUGIN_MODULE, plugin_dir, plugin_env  # noqa: E402

PYTEST_INI = "[pytest]\naddopts = -p no:randomly -p no:cacheprovider\n"


def make_suite(root: Path, tests: int, modules: int = 40) -> None:
    (root / "pytest.ini").write_text(PYTEST_INI)
    per = tests // modules
    for m in range(modules):
        body = "".join(f"def test_{m}_{i}():\n    assert {i} == {i}\n\n" for i in range(per))
        (root / f"test_mod{m:03d}.py").write_text(body)


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system of the child) seconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"the suite failed:\n{done.stdout[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument("--baseline", default="2ce069b", help="commit of the baseline plugin")
    options = parser.parse_args()
    old_source = subprocess.run(
        ["git", "show", f"{options.baseline}:src/flakewarden/runner/plugin.py"],
        cwd=HERE.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with tempfile.TemporaryDirectory(prefix="flakewarden-bench-evidence-") as work:
        root = Path(work, "suite")
        root.mkdir()
        make_suite(root, options.tests)
        old_dir = Path(work, "old")
        old_dir.mkdir()
        (old_dir / f"{PLUGIN_MODULE}.py").write_text(old_source)
        command = [sys.executable, "-m", "pytest", "-q"]
        with plugin_dir() as new_dir:
            sides = {"baseline": old_dir, "candidate": new_dir}
            envs = {
                name: plugin_env(directory, Path(work, f"{name}.jsonl"))
                for name, directory in sides.items()
            }
            for env in envs.values():
                env.pop("PYTEST_XDIST_WORKER", None)
            results: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
            for name in sides:  # warm-up
                timed(command, root, envs[name])
            for _ in range(options.pairs):
                for name in sides:
                    Path(work, f"{name}.jsonl").unlink(missing_ok=True)
                    results[name].append(timed(command, root, envs[name]))
            lines = {
                name: len(Path(work, f"{name}.jsonl").read_text().splitlines()) for name in sides
            }
    print(f"{options.tests} passing tests, {options.pairs} interleaved pairs")
    for name, runs in results.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        print(
            f"{name:>9}: wall median {statistics.median(walls):.3f} s, "
            f"cpu median {statistics.median(cpus):.3f} s, {lines[name]} record lines"
        )
    pairs = list(zip(results["baseline"], results["candidate"]))
    print(
        f"ratio candidate/baseline: wall {statistics.median(c[0] / b[0] for b, c in pairs):.3f}, "
        f"cpu {statistics.median(c[1] / b[1] for b, c in pairs):.3f} (medians of pair ratios)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
