"""What loading the plugin costs a pytest process: its parts from their installed bytecode
against compiled from source in the process, as before the bytecode was copied.

Run:  python benchmarks/bench_plugin_load.py [--pairs 40]

A one-test project is generated in a temporary directory. Each pair runs, as whole
subprocesses, ``python -m pytest`` with the plugin of a ``plugin_dir`` as ``flakewarden run``
injects it, and the same with the bytecode left out of its pack (every part compiled from
source), in alternating order; plugin autoloading is off (a bare pytest's start-up).
One warm-up pair is not counted. Printed: each side's median wall and CPU time (user and
system) and the medians of the per-pair differences. Every pytest process flakewarden
starts pays this: attempt 1, each rerun and each stress process.
"""

from __future__ import annotations

import argparse
import marshal
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from flakewarden.runner.process import PLUGIN_PACK, plugin_dir, plugin_env  # noqa: E402


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """The process's wall time and its CPU time (user and system: steadier when the machine
    is shared)."""
    started, cpu = time.perf_counter(), _cpu()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"pytest exited {done.returncode}:\n{done.stdout.decode()[-2000:]}")
    return time.perf_counter() - started, _cpu() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40, help="measured pairs")
    options = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COVERAGE"))}
    base["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    with plugin_dir() as bytecode, tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        project = work / "project"
        project.mkdir()
        (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        (project / "test_one.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
        source = work / "source"
        shutil.copytree(bytecode, source)
        pack = marshal.loads((source / PLUGIN_PACK).read_bytes())
        copies = [name for name, (_, data) in pack["parts"].items() if data]
        if not copies:
            raise SystemExit("the plugin has no current bytecode here: run compileall on src")
        pack["parts"] = {name: (text, b"") for name, (text, _) in pack["parts"].items()}
        (source / PLUGIN_PACK).write_bytes(marshal.dumps(pack, 4))
        sides = {"bytecode": bytecode, "source": source}
        walls: dict[str, list[float]] = {name: [] for name in sides}
        cpus: dict[str, list[float]] = {name: [] for name in sides}
        for number in range(options.pairs + 1):
            order = list(sides) if number % 2 else list(reversed(sides))
            for name in order:
                env = plugin_env(sides[name], work / f"{name}-{number}.jsonl", base=base)
                wall, cpu = _time(command, project, env)
                if number:  # the first pair warms the disk cache
                    walls[name].append(wall)
                    cpus[name].append(cpu)
    print(f"{len(copies)} parts with bytecode; {options.pairs} interleaved pairs")
    for name, values in walls.items():
        print(
            f"  {name:9s} median wall {statistics.median(values) * 1000:.1f} ms, "
            f"CPU {statistics.median(cpus[name]) * 1000:.1f} ms"
        )
    diffs = [s - b for s, b in zip(walls["source"], walls["bytecode"])]
    cpu_diffs = [s - b for s, b in zip(cpus["source"], cpus["bytecode"])]
    print(
        "source - bytecode, median of pair differences: "
        f"{statistics.median(diffs) * 1000:.1f} ms wall, "
        f"{statistics.median(cpu_diffs) * 1000:.1f} ms CPU"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
