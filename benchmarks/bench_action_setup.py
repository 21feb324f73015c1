"""The action's own setup, old against new: from the first step's start to the first test starting.

Each run is one job on a fresh runner-like machine, simulated by the runner in
tests/helpers/actions_runner.py (the action's ``run:`` steps executed with bash, its
``uses:`` steps not executed): an empty ``$RUNNER_TEMP``, an empty pip (and uv)
cache, pip's configuration files and find-links left out so packages come from
PyPI as on a hosted runner. The project has one test, which writes the time it
starts; setup is that time less the time the first step started.

Scenarios, interleaved in pairs so the machine's load hits both sides alike:

- ``old``: the action as on main (``git show main:action.yml``): a venv with pip,
  then ``pip install`` of the action's checkout (a wheel built in isolation).
- ``new cold``: no cache entry: the venv is built (uv when on PATH, else the host's
  pip installing into a venv without pip of its own). The time to pack the venv as
  actions/cache/save does (tar, zstd when present) is measured and added, since the
  save step runs before the tests; the upload itself is not simulated.
- ``new warm``: the cache entry from the cold run is unpacked (inside the timed
  window, as actions/cache/restore does), checked file by file, and used.
- ``old warm pip``: the old action with pip's cache already filled (its best case;
  a hosted runner starts with no pip cache unless the workflow restores one).

Run: ``python benchmarks/bench_action_setup.py --pairs 5`` (uv is used for the
"uv" scenarios when it is on PATH or given with ``--uv``).
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from helpers.actions_runner import Runner  # noqa: E402  (the simulated runner, shared with the tests)

TEST = """
import time
from pathlib import Path


def test_first():
    Path(__file__).parent.parent.joinpath("first-test-started").write_text(repr(time.time()))
"""


def action_copy(where: Path, action_yml: str) -> Path:
    """The action's checkout as a runner downloads it: sources and one action.yml."""
    where.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, where / name)
    shutil.copytree(
        REPO / "src", where / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    (where / "action.yml").write_text(action_yml, encoding="utf-8")
    return where


def path_without_uv() -> str:
    return os.pathsep.join(
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if d and not (Path(d) / "uv").exists()
    )


def pack_command(venv: Path, tarball: Path) -> list[str]:
    compress = ["--use-compress-program", "zstd -T0"] if shutil.which("zstd") else ["-z"]
    return ["tar", *compress, "-cf", str(tarball), "-C", str(venv.parent), venv.name]


def unpack_command(tarball: Path, temp: Path) -> list[str]:
    compress = ["--use-compress-program", "zstd -d"] if shutil.which("zstd") else ["-z"]
    return ["tar", *compress, "-xf", str(tarball), "-C", str(temp)]


class Job:
    """One job on a fresh simulated runner."""

    def __init__(self, work: Path, action: Path, *, uv: Optional[str], pip_cache: Path) -> None:
        self.runner = Runner(work, action_path=action)
        project = self.runner.workspace / "project"
        (project / "tests").mkdir(parents=True)
        (project / "tests" / "test_first.py").write_text(TEST, encoding="utf-8")
        self.project = project
        path = path_without_uv()
        if uv:
            (self.runner.bin / "uv").symlink_to(uv)
        env = self.runner.extra_env
        env["PATH"] = f"{self.runner.bin}{os.pathsep}{path}"
        env["PIP_CONFIG_FILE"] = os.devnull  # no site configuration, no local indexes
        env["PIP_FIND_LINKS"] = ""
        env["PIP_CACHE_DIR"] = str(pip_cache)
        env["UV_CACHE_DIR"] = str(pip_cache / "uv")
        env["UV_NO_CONFIG"] = "1"

    def run(self, before: Callable[[], None] = lambda: None) -> float:
        start = time.time()
        before()
        run = self.runner.run(
            {"working-directory": "project", "github-token": "", "python": sys.executable}
        )
        install = run.step("install")
        assert install.returncode == 0, install.stdout + install.stderr
        assert run.step("run").returncode == 0, run.step("run").stdout + run.step("run").stderr
        self.log = install.stdout
        return float((self.project / "first-test-started").read_text()) - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--uv", default=shutil.which("uv"), help="uv executable (default: PATH)")
    args = parser.parse_args()
    old_yml = subprocess.run(
        ["git", "-C", str(REPO), "show", "main:action.yml"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    new_yml = (REPO / "action.yml").read_text(encoding="utf-8")
    scenarios = ["old cold", "new cold pip", "old warm pip", "new warm"]
    if args.uv:
        scenarios.insert(2, "new cold uv")
    times: dict[str, list[float]] = {name: [] for name in scenarios}
    with tempfile.TemporaryDirectory(prefix="bench-action-setup-") as tmp:
        root = Path(tmp)
        old = action_copy(root / "old-action", old_yml)
        new = action_copy(root / "new-action", new_yml)
        warm_pip = root / "warm-pip-cache"
        Job(root / "prime", old, uv=None, pip_cache=warm_pip).run()  # fills the warm pip cache
        entry = root / "cache-entry.tar"  # the latest cold run's venv, as actions/cache saves it
        jobs = itertools.count()

        def job(action: Path, uv: Optional[str] = None, pip_cache: Optional[Path] = None) -> Job:
            n = next(jobs)  # every job on a fresh runner, with a fresh pip cache unless given
            return Job(root / f"job-{n}", action, uv=uv, pip_cache=pip_cache or root / f"pip-{n}")

        for pair in range(args.pairs):
            for name in scenarios if pair % 2 == 0 else scenarios[::-1]:
                if name == "old cold":
                    seconds = job(old).run()
                elif name == "old warm pip":
                    seconds = job(old, pip_cache=warm_pip).run()
                elif name.startswith("new cold"):
                    cold = job(new, uv=args.uv if name.endswith("uv") else None)
                    seconds = cold.run()
                    assert "building the flakewarden venv" in cold.log, cold.log
                    venv = cold.runner.temp / "flakewarden-venv"
                    save = time.perf_counter()
                    subprocess.run(pack_command(venv, entry), check=True)
                    seconds += time.perf_counter() - save
                else:  # new warm: restore the entry the cold run saved
                    if not entry.exists():
                        seeded = job(new, uv=args.uv)
                        seeded.run()
                        venv = seeded.runner.temp / "flakewarden-venv"
                        subprocess.run(pack_command(venv, entry), check=True)
                    warm = job(new)
                    temp = warm.runner.temp
                    seconds = warm.run(
                        lambda temp=temp: subprocess.run(unpack_command(entry, temp), check=True)
                    )
                    assert "restored from the cache and checked" in warm.log, warm.log
                times[name].append(seconds)
                load = os.getloadavg()[0]
                print(f"pair {pair + 1}: {name:13} {seconds:6.2f} s  (load {load:.1f})", flush=True)
    print()
    print(f"load average at the end: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        print(f"median {name:13} {value:6.2f} s  (n={len(times[name])})")
    print()
    print(f"old cold / new cold pip: {medians['old cold'] / medians['new cold pip']:.1f}x")
    if "new cold uv" in medians:
        print(f"old cold / new cold uv:  {medians['old cold'] / medians['new cold uv']:.1f}x")
    print(f"old cold / new warm:     {medians['old cold'] / medians['new warm']:.1f}x")
    print(f"old warm pip / new warm: {medians['old warm pip'] / medians['new warm']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
