"""What blame costs a run: ``flakewarden run --base`` against the same run without it, and
the base check's cost per test.

Run:  python benchmarks/bench_blame.py [--tests 2000] [--modules 40] [--pairs 7]

A git repository is generated in a temporary directory: a package of 20 modules, a suite
of ``--tests`` tests spread over ``--modules`` modules that call it, and a branch that
changes one function. Three tests fail on the branch: one the change broke (it runs the
changed line), one flaky (fails its first attempt, passes its rerun; runs none of the
change) and one broken on the base too. Each pair times, as whole subprocesses and in
alternating order, ``flakewarden run -- pytest`` (the baseline) and ``flakewarden run --base
main -- pytest``; one warm-up of each is not counted. Then the same pairs for ``--base
main --check-base`` against ``--base main``: the difference over the two tests that go to
the base (the flaky test passed, so it does not) is the base check's cost per test.
Medians of the per-pair ratios and differences are printed.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
INI = "[pytest]\npythonpath = src\naddopts = -p no:randomly -p no:cacheprovider\n"
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTEST_"))}
    env.pop("COVERAGE_FILE", None)
    env.update(GIT_ENV)
    return env


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=_env(), check=True, capture_output=True)


def generate(root: Path, tests: int, modules: int) -> None:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "pytest.ini").write_text(INI, encoding="utf-8")
    (root / "src" / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    for n in range(20):
        body = "".join(
            f"def f{i}(x):\n    y = x * {i}\n    return y - x * {i} + x\n\n\n" for i in range(10)
        )
        (root / "src" / "pkg" / f"m{n:02d}.py").write_text(body, encoding="utf-8")
    for module in range(modules):
        count = tests // modules + (1 if module < tests % modules else 0)
        lines = [f"from pkg import m{module % 20:02d}\n\n\n"]
        for i in range(count):
            lines.append(
                f"def test_{i}():\n    assert m{module % 20:02d}.f{i % 10}({i}) == {i}\n\n\n"
            )
        (root / "tests").mkdir(exist_ok=True)
        (root / "tests" / f"test_mod{module:03d}.py").write_text("".join(lines), encoding="utf-8")
    (root / "tests" / "test_special.py").write_text(
        "from pathlib import Path\n\n\n"
        "def test_flaky():\n"
        "    marker = Path(__file__).with_name('flaky.count')\n"
        "    runs = int(marker.read_text()) + 1 if marker.exists() else 1\n"
        "    marker.write_text(str(runs))\n"
        "    assert runs % 2 == 0, 'flaked'\n\n\n"
        "def test_broken_on_main():\n    assert 1 == 2\n\n\n"
        "def test_changed():\n    from pkg.m00 import special\n\n    assert special(1) == 1\n",
        encoding="utf-8",
    )
    with open(root / "src" / "pkg" / "m00.py", "a", encoding="utf-8") as stream:
        stream.write("def special(x):\n    return x\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "topic")
    changed = root / "src" / "pkg" / "m00.py"
    text = changed.read_text(encoding="utf-8")
    changed.write_text(text.replace("    return x\n", "    return x + 1\n"), "utf-8")
    git(root, "commit", "-q", "-am", "break special")


def timed(root: Path, args: list[str], report: str) -> float:
    for counter in root.glob("tests/*.count"):
        counter.unlink()
    command = [PYTHON, "-m", "flakewarden", "run", "-q", "--report-dir", report, *args]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--", PYTHON, "-m", "pytest"], cwd=root, env=_env(), capture_output=True
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 1:
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr.decode()}")
    return elapsed


def pairs(
    root: Path, base: list[str], candidate: list[str], count: int
) -> list[tuple[float, float]]:
    timed(root, base, "warm-a")
    timed(root, candidate, "warm-b")
    found = []
    for index in range(count):
        order = [(base, "a"), (candidate, "b")]
        if index % 2:
            order.reverse()
        times = {side: timed(root, args, f"r-{side}") for args, side in order}
        found.append((times["a"], times["b"]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--modules", type=int, default=40)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument(
        "--coverage",
        action="store_true",
        help="both sides measure coverage (--coverage): blame then switches a context per "
        "test on attempt 1 instead of measuring the rerun",
    )
    args = parser.parse_args()
    measured = ["--coverage"] if args.coverage else []
    work = Path(tempfile.mkdtemp(prefix="bench-blame-"))
    try:
        root = work / "repo"
        generate(root, args.tests, args.modules)
        print(
            f"{args.tests} tests (+3 of its own), 3 failing on the branch; {' '.join(measured)} "
            f"{args.pairs} interleaved pairs; python {platform.python_version()}"
        )
        blame = pairs(root, measured, [*measured, "--base", "main"], args.pairs)
        ratios = [b / a for a, b in blame]
        print(f"  without --base: median {statistics.median(a for a, _ in blame):.2f} s")
        print(f"  with --base:    median {statistics.median(b for _, b in blame):.2f} s")
        print(f"  ratio with/without (median of pair ratios): {statistics.median(ratios):.3f}")
        based = [*measured, "--base", "main"]
        checked = pairs(root, based, [*based, "--check-base"], args.pairs)
        extra = [b - a for a, b in checked]
        print(
            f"  --check-base adds (median of pair differences): {statistics.median(extra):.2f} s "
            f"for 2 tests on the base: {statistics.median(extra) / 2:.2f} s per test"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
