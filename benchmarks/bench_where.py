"""Where a flaky test fails: is the cause named right, and is a fix line among the suspects?

Stresses every case of the localisation corpus (``tests/helpers/where_corpus.py``: flaky
tests whose fix is known, each with distractor code that passing and failing runs share,
the fix's lines marked ``# fix``) with ``flakewarden stress`` at its defaults (or
``--budget-seconds``), trial after trial, and prints per case and per kind, and overall:

- the verdict, and whether it names the cause the fix addresses (``race`` with the knob,
  ``seed-dependent`` with the seed's kind, ``order-dependent`` with the polluter; for the
  deadline, a cause named as timing);
- whether a line the fix changes is the first suspect, or in the first 3 or 10;
- the seconds the where phase added, against the seconds the verdict took before it.

    python benchmarks/bench_where.py --trials 3
    python benchmarks/bench_where.py --cases cache --cases basket --trials 5

Goals (issue "why and where"): the right cause for every case; a fix line in the top 3 for
at least 85% of the cases, in under a quarter more time. Timings depend on the machine and
its load; they are measurements, never assertions.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers.project import make_project
from helpers.stress_runs import write_order_report
from helpers.where_corpus import CORPUS, Case

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:randomly"]


def cause_named(case: Case, verdict: dict[str, Any]) -> bool:
    """The verdict names the cause the case's fix addresses."""
    if case.kind == "deadline":
        return bool((verdict.get("timing") or {}).get("deadline"))
    if verdict["verdict"] != case.verdict:
        return False
    if case.verdict == "race":
        return not case.detail or verdict.get("knob") in case.detail.split()
    if case.verdict == "order-dependent":
        return verdict.get("polluter") == case.detail
    return (verdict.get("seeds") or {}).get("kind") == case.detail


def rank_of_fix(case: Case, verdict: dict[str, Any]) -> int:
    """1-based rank of the first suspect on a fix line; 0 when none is."""
    fixes = case.fix_lines()
    suspects = (verdict.get("where") or {}).get("suspects") or []
    for rank, suspect in enumerate(suspects, 1):
        if (suspect["file"], suspect["line"]) in fixes:
            return rank
    return 0


def trial(case: Case, budget: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="flakewarden-where-") as work:
        root = make_project(Path(work) / "project", case.files)
        options = ["--budget-seconds", budget] if budget else []
        if case.order:
            write_order_report(root, list(case.order))
            options += ["--order-from", "report.json"]
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "flakewarden", "stress", case.test, *options, "--", *PYTEST],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        seconds = time.monotonic() - started
        path = root / "flakewarden-stress" / "verdict.json"
        verdict = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    if not verdict:
        return {"verdict": "none", "cause": False, "rank": 0, "where_s": 0.0, "before_s": seconds}
    where = verdict.get("where") or {}
    # the where phase, and the interleaving phase that refines a race's suspects
    where_s = float(where.get("seconds") or 0.0)
    where_s += float((verdict.get("timing") or {}).get("seconds") or 0.0)
    return {
        "verdict": verdict["verdict"],
        "detail": verdict.get("knob") or (verdict.get("seeds") or {}).get("kind") or "",
        "cause": cause_named(case, verdict),
        "rank": rank_of_fix(case, verdict),
        "where_s": where_s,
        "before_s": max(float(verdict.get("duration") or seconds) - where_s, 1e-9),
        "note": where.get("note", ""),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--budget-seconds", default="")
    parser.add_argument("--cases", action="append", help="case names' first words")
    args = parser.parse_args()
    cases = [c for c in CORPUS if not args.cases or any(c.name.startswith(n) for n in args.cases)]
    results: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for number in range(args.trials):  # interleaved: the machine's drift hits every case alike
        for case in cases:
            outcome = trial(case, args.budget_seconds)
            results[case.name].append(outcome)
            print(
                f"trial {number + 1} {case.name}: {outcome['verdict']} {outcome.get('detail', '')}"
                f" cause={'yes' if outcome['cause'] else 'no'} rank={outcome['rank'] or '-'}"
                f" where {outcome['where_s']:.1f} s after {outcome['before_s']:.1f} s",
                flush=True,
            )
    print()
    print(f"{'case':48} {'kind':14} cause  top1  top3  top10  added")
    by_kind: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for case in cases:
        rows = results[case.name]
        by_kind[case.kind] += rows
        print(_line(case.name, case.kind, rows))
    print()
    for kind, rows in by_kind.items():
        print(_line(f"kind: {kind}", kind, rows))
    print(_line("overall", "", [r for rows in results.values() for r in rows]))


def _line(name: str, kind: str, rows: list[dict[str, Any]]) -> str:
    count = len(rows)

    def share(test: Any) -> str:
        return f"{sum(1 for r in rows if test(r))}/{count}"

    added = statistics.median(r["where_s"] / r["before_s"] for r in rows) if rows else 0.0
    return (
        f"{name[:48]:48} {kind:14} {share(lambda r: r['cause']):6}"
        f"{share(lambda r: r['rank'] == 1):6}{share(lambda r: 0 < r['rank'] <= 3):6}"
        f"{share(lambda r: 0 < r['rank'] <= 10):7}{added:6.1%}"
    )


if __name__ == "__main__":
    main()
