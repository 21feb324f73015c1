"""Where real flaky tests fail: the cause named right, and a line the real fix changed a suspect?

Each case is a flaky test of a released project whose fix commit is public. The sdist is
downloaded at the last version before the fix (``sdist.fetch``; nothing of it is kept in this
repository), given a venv with pinned test tools, and stressed with ``flakewarden stress`` at its
defaults (``--order-from`` a recorded run when the case has one). The lines the fix changed are
given as (file relative to the sdist root, line number in that pinned version); for a fix that
only inserts lines, the line it inserts after and the write it undoes. Printed per case: the
verdict, whether it names the cause, the rank of the first fixed line among ``where.suspects``,
whether ``where.state`` names the state the fix restores, and the seconds the stress took.

    python benchmarks/realworld/where_real.py [--work DIR] [--only NAME]

Candidates dropped while building the set are listed in benchmarks/README.md. Timings depend on
the machine and its load; they are measurements, never assertions.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import sdist

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from helpers.stress_runs import write_order_report

TOOLS = ["pytest==9.2.0"]


@dataclasses.dataclass(frozen=True)
class RealCase:
    name: str
    project: str
    version: str  # the last release before the fix
    test_id: str
    verdict: str  # the cause the fix addresses, as the verdict names it
    fixed: tuple[tuple[str, int], ...]  # (file, line in this version) the fix changed
    state: str  # text that names the state the fix restores, looked for in where.state
    fix_url: str
    description: str
    order: tuple[str, ...] = ()  # a recorded run order for --order-from; () for none
    suite: str = "."
    requirements: tuple[str, ...] = ()


CASES = [
    RealCase(
        "pyro5-compat-config",
        "Pyro5",
        "5.12",
        "tests/test_pyro4compat.py::test_compat_config",
        "non-idempotent",
        # the fix inserts a reset after line 12; line 10 is the write it undoes
        (("tests/test_pyro4compat.py", 10), ("tests/test_pyro4compat.py", 12)),
        "NS_PORT",
        "https://github.com/irmen/Pyro5/commit/a5c9cdb2c877b8a3095909235ae2488fc48f5763",
        "sets the shared Pyro4 config's NS_PORT to 12345 and never resets it: a second run "
        "in the process finds 12345 where it asserts the default 9090",
        suite="tests/test_pyro4compat.py",
        requirements=("serpent==1.41", "msgpack==1.1.0"),
    ),
    RealCase(
        "freezegun-import-after-start",
        "freezegun",
        "1.1.0",
        "tests/test_class_import.py::test_import_after_start",
        "non-idempotent",
        # the fix replaces the blank line 181 with a del of the module line 136 imports
        (("tests/test_class_import.py", 181), ("tests/test_class_import.py", 136)),
        "tests.another_module",
        "https://github.com/spulec/freezegun/commit/9343e70bd1ef78fa71bfd59830142c8d5892a446",
        "asserts tests.another_module is not imported yet, then imports it and leaves it in "
        "sys.modules: a second run in the process fails the first assertion",
        suite="tests/test_class_import.py",
        requirements=("python-dateutil==2.9.0.post0",),
    ),
    RealCase(
        "yamicache-noclass-main",
        "yamicache",
        "0.6.0",
        "tests/test_noclass.py::test_main",
        "non-idempotent",
        # the fix inserts c.clear() after line 31; line 28 is the cached call that fills c
        (("tests/test_noclass.py", 31), ("tests/test_noclass.py", 28)),
        "myapp",
        "https://github.com/mtik00/yamicache/commit/79d5ab4cda421730e89173e2b468a1e0c1c821fa",
        "asserts the module-level cache is empty, then fills it and leaves the entry: a second "
        "run in the process finds one entry",
        suite="tests/test_noclass.py",
    ),
]


def stress(case: RealCase, python: Path, root: Path) -> tuple[dict[str, Any], float, str]:
    """Run ``flakewarden stress`` on the case in its sdist tree; the verdict and seconds."""
    options: list[str] = []
    if case.order:
        write_order_report(root, list(case.order))
        options += ["--order-from", "report.json"]
    shutil.rmtree(root / "flakewarden-stress", ignore_errors=True)
    command = [str(python), "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider"]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "flakewarden", "stress", case.test_id, *options, "--", *command],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    seconds = time.monotonic() - started
    path = root / "flakewarden-stress" / "verdict.json"
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return data, seconds, done.stderr.strip()[-300:]


def rank_of_fix(case: RealCase, verdict: dict[str, Any]) -> int:
    """1-based rank of the first suspect on a line the fix changed; 0 when none is."""
    suspects = (verdict.get("where") or {}).get("suspects") or []
    for rank, suspect in enumerate(suspects, 1):
        if (suspect.get("file"), suspect.get("line")) in case.fixed:
            return rank
    return 0


def state_named(case: RealCase, verdict: dict[str, Any]) -> bool:
    """``where.state`` holds a change that names the state the fix restores."""
    state = (verdict.get("where") or {}).get("state") or []
    return any(case.state in json.dumps(change) for change in state)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/flakewarden-where-real"))
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for case in CASES:
        if args.only and case.name not in args.only:
            continue
        root = sdist.fetch(case.project, case.version, args.work)
        python = sdist.make_venv(
            args.work / f"venv-{case.project}-{case.version}", [*TOOLS, *case.requirements]
        )
        verdict, seconds, stderr = stress(case, python, root)
        if not verdict:
            print(f"{case.name}: flakewarden stress wrote no verdict: {stderr}", flush=True)
            rows.append((case, {}, seconds))
            continue
        where = verdict.get("where") or {}
        suspects = where.get("suspects") or []
        print(f"{case.name}: {verdict['verdict']} in {seconds:.0f} s", flush=True)
        for rank, suspect in enumerate(suspects[:10], 1):
            print(f"  {rank:2}. {suspect.get('file')}:{suspect.get('line')}", flush=True)
        if where.get("note"):
            print(f"  note: {where['note']}", flush=True)
        rows.append((case, verdict, seconds))
    print()
    print(f"| {'case':30} | verdict | cause | fix rank | top1/3/10 | state named | seconds |")
    print(f"|{'-' * 32}|---------|-------|----------|-----------|-------------|---------|")
    for case, verdict, seconds in rows:
        rank = rank_of_fix(case, verdict) if verdict else 0
        tops = "/".join("yes" if 0 < rank <= n else "no" for n in (1, 3, 10))
        print(
            f"| {case.name:30} | {verdict.get('verdict', 'none')} "
            f"| {'yes' if verdict.get('verdict') == case.verdict else 'no'} "
            f"| {rank or '-'} | {tops} "
            f"| {'yes' if state_named(case, verdict) else 'no'} | {seconds:.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
