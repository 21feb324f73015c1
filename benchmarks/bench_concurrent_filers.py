"""How often N concurrent ``flakewarden issues`` processes filing one flake count exactly.

Each trial starts N real processes against the loopback GitHub emulator, each publishing
the report of a run of its own, forces the race (every process lists the issues before
any writes) and varies the order of the writes by a random pause of up to 30 ms each.
For a new flake every process opens its own issue and the duplicates are merged; for an
existing one all N record their hit on it at once. A trial is exact when one open issue
remains and both its marker and the recount of its records hold every hit once.

    python benchmarks/bench_concurrent_filers.py [--filers 2 3 5 10] [--trials 20]
        [--kinds new existing]
        [--src PATH]   # run the processes on another checkout's src/, e.g. an older one
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers.filer_race import race


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filers", nargs="*", type=int, default=[2, 3, 5, 10])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--kinds", nargs="*", default=["new", "existing"])
    parser.add_argument("--src", default=None, help="PYTHONPATH for the filing processes")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-filers-"))
    print(f"{'issue':>8} {'filers':>6} {'trials':>6} {'exact':>6} {'req/filer':>9}  hits (count)")
    for kind in args.kinds:
        for filers in args.filers:
            outcomes = [
                race(work, filers, seed, pythonpath=args.src, existing=kind == "existing")
                for seed in range(args.trials)
            ]
            exact = sum(o.exact for o in outcomes)
            hits = Counter((o.hits, o.recounted) for o in outcomes)
            shown = ", ".join(f"{h} (records {r}): {n}" for (h, r), n in sorted(hits.items()))
            per = statistics.median(o.requests / filers for o in outcomes)
            print(f"{kind:>8} {filers:>6} {args.trials:>6} {exact:>6} {per:>9.1f}  {shown}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
