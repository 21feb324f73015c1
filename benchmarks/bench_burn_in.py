"""What burn-in's budget buys over plain retries, and what a change with no tests costs.

Builds a git repository in a temporary directory: ``main`` with a few tests, then a
branch that adds ``--tests`` stable tests of 10 ms each, and runs the real
``flakewarden burn-in --base main`` on it within ``--budget-seconds``. Prints, per test,
its verdict, its runs and the one-sided 95% bound they put on its failure rate, beside
what 10 plain retries bound (below 25.9%). Then a change with no tests (a source module
edited): the wall time of the whole command, median of ``--repeat`` runs, and how much
of it was the one collection.

    python benchmarks/bench_burn_in.py [--tests 5] [--budget-seconds 120] [--repeat 5]

The tested pytest loads only flakewarden's plugin (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``)
unless ``--all-plugins``: the environment's other plugins slow every process's start.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from flakewarden.model.binomial import upper_bound

RETRIES = 10
STABLE_TEST = """
import time


def test_stable_{n}():
    time.sleep(0.01)
    assert sum(range({n} + 10)) >= 45
"""


def git(root: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Bench",
        GIT_AUTHOR_EMAIL="bench@example.invalid",
        GIT_COMMITTER_NAME="Bench",
        GIT_COMMITTER_EMAIL="bench@example.invalid",
    )
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def project(root: Path) -> None:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (root / "module.py").write_text("VALUE = 1\n", encoding="utf-8")
    (root / "tests").mkdir()
    for n in range(10):
        (root / "tests" / f"test_old_{n}.py").write_text(
            f"def test_old_{n}():\n    assert {n} == {n}\n", encoding="utf-8"
        )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")


def burn_in(root: Path, args: argparse.Namespace, *options: str) -> tuple[float, dict[str, object]]:
    env = dict(os.environ)
    if not args.all_plugins:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    command = [sys.executable, "-m", "flakewarden", "burn-in", "--base", "main", *options]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--", sys.executable, "-m", "pytest", "-p", "no:cacheprovider"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"burn-in exited {done.returncode}:\n{done.stdout}{done.stderr}")
    report = json.loads((root / "flakewarden-burn-in" / "burn-in.json").read_text("utf-8"))
    return seconds, report


def stable_tests(workdir: Path, args: argparse.Namespace) -> None:
    root = workdir / "stable"
    project(root)
    git(root, "checkout", "-q", "-b", "topic")
    for n in range(args.tests):
        path = root / "tests" / f"test_new_{n}.py"
        path.write_text(STABLE_TEST.format(n=n).lstrip(), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "add stable tests")
    seconds, report = burn_in(root, args, "--budget-seconds", str(args.budget_seconds))
    retries = upper_bound(0, RETRIES)
    print(
        f"{args.tests} stable 10 ms tests, --budget-seconds {args.budget_seconds:g}: "
        f"{seconds:.0f} s wall"
    )
    print(f"{'test':<38} {'verdict':<17} {'runs':>6} {'rate below':>11} {'10 retries':>11}")
    tests = report["tests"]
    assert isinstance(tests, list)
    for test in tests:
        bound = test["bound"]
        shown = "" if bound is None else f"{100 * bound:.3g}%"
        print(
            f"{test['id']:<38} {test['verdict']:<17} {test['runs']:>6} {shown:>11} "
            f"{100 * retries:>10.3g}%"
        )


def no_tests(workdir: Path, args: argparse.Namespace) -> None:
    root = workdir / "none"
    project(root)
    git(root, "checkout", "-q", "-b", "topic")
    (root / "module.py").write_text("VALUE = 2\n", encoding="utf-8")
    git(root, "commit", "-q", "-am", "change code only")
    walls, collections = [], []
    for _ in range(args.repeat):
        seconds, report = burn_in(root, args)
        walls.append(seconds)
        collections.append(float(report["collection_seconds"] or 0))  # type: ignore[arg-type]
    wall, collection = statistics.median(walls), statistics.median(collections)
    print(
        f"a change with no tests: {wall:.2f} s wall (median of {args.repeat}), of which "
        f"{collection:.2f} s collecting; {wall - collection:.2f} s beyond the collection"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=5)
    parser.add_argument("--budget-seconds", type=float, default=120.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--all-plugins", action="store_true")
    parser.add_argument("--skip-stable", action="store_true", help="only the no-test change")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-burn-in-") as tmp:
        if not args.skip_stable:
            stable_tests(Path(tmp), args)
        no_tests(Path(tmp), args)


if __name__ == "__main__":
    main()
