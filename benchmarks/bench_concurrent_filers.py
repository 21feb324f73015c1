"""How often N concurrent ``flakewarden issues`` processes filing one new flake count exactly.

Each trial starts N real processes against the loopback GitHub emulator, forces the race
(every process lists before any creates, so each opens its own issue) and varies the order
of the writes by a random pause of up to 30 ms each. A trial is exact when one open issue
remains, its hits equal N, and its ``merged`` lists every closed duplicate exactly once.

    python benchmarks/bench_concurrent_filers.py [--filers 2 3 5] [--trials 10]
        [--src PATH]   # run the processes on another checkout's src/, e.g. an older one
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from filer_race import race


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filers", nargs="*", type=int, default=[2, 3, 5])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--src", default=None, help="PYTHONPATH for the filing processes")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-filers-"))
    print(f"{'filers':>6} {'trials':>6} {'exact':>6}  surviving hits (count)")
    for filers in args.filers:
        outcomes = [race(work, filers, seed, pythonpath=args.src) for seed in range(args.trials)]
        exact = sum(o.exact for o in outcomes)
        hits = Counter(o.hits for o in outcomes)
        shown = ", ".join(f"{h} hits: {n}" for h, n in sorted(hits.items()))
        print(f"{filers:>6} {args.trials:>6} {exact:>6}  {shown}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
