"""The real-world corpus: flakewarden against plain pytest and coverage.py on real suites.

    python benchmarks/realworld/corpus.py                 # every project, writes corpus.md
    python benchmarks/realworld/corpus.py --subset ci     # the subset CI runs
    python benchmarks/realworld/corpus.py --projects six packaging --scenarios counts flaky

Each project's source distribution is downloaded from PyPI at its pinned version
(cached), unpacked into a work directory and given its own venv. For every project,
side by side: plain pytest and ``flakewarden run`` must print and record the same
counts (also under ``-n 2`` and under pytest-randomly at a fixed seed); coverage totals
must equal coverage.py's and pytest-cov's to two decimals; a test made to fail once by
the ``corpus_flaky`` plugin must be rerun in a fresh process and reported flaky.
Exit status 1 when any check differs.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import platform
import sys
import time
from pathlib import Path

import corpus_scenarios as scenarios
import sdist
from corpus_projects import KNOWN_DIFFERENCES, PROJECTS, REPLACED, TOOLS, Project, by_name

HERE = Path(__file__).resolve().parent
WORK = sdist.DEFAULT_CACHE / "work"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projects", nargs="+", default=None, help="project names")
    parser.add_argument("--subset", choices=["ci"], default=None, help="only the CI subset")
    parser.add_argument("--scenarios", nargs="+", choices=scenarios.SCENARIOS, default=None)
    parser.add_argument("--work", type=Path, default=WORK, help=f"work directory ({WORK})")
    parser.add_argument(
        "--write",
        type=Path,
        default=None,
        help="write the results table (default corpus.md "
        "beside this script when every project and scenario ran)",
    )
    parser.add_argument(
        "--table-only",
        action="store_true",
        help="run nothing: write the table from each project's last result per scenario "
        "(WORK/results/NAME-VERSION.json)",
    )
    args = parser.parse_args(argv)
    chosen: list[Project] = list(PROJECTS)
    if args.projects:
        chosen = by_name(args.projects)
    if args.subset == "ci":
        chosen = [p for p in chosen if p.ci]
    wanted = args.scenarios or list(scenarios.SCENARIOS)
    rows: list[Row] = []
    failed = 0
    for project in [] if args.table_only else chosen:
        started = time.monotonic()
        print(f"== {project.name} {project.version}", flush=True)
        try:
            prepared = scenarios.prepare(project, args.work)
            checks = scenarios.check_project(prepared, wanted)
        except (sdist.FetchError, OSError, ValueError, RuntimeError) as exc:
            print(f"   cannot run: {exc}", flush=True)
            rows.append((project, None, time.monotonic() - started, f"cannot run: {exc}"))
            failed += 1
            continue
        for check in checks:
            mark = "ok  " if check.ok else "DIFF"
            print(
                f"   {mark} {check.scenario:<10} plain {check.plain}  flakewarden "
                f"{check.flakewarden}  ({check.plain_seconds:.1f}s / "
                f"{check.flakewarden_seconds:.1f}s) {check.detail}",
                flush=True,
            )
            failed += not check.ok
        rows.append((project, checks, time.monotonic() - started, ""))
        save(args.work, project, checks, time.monotonic() - started)
    target = args.write
    if target is None and (args.table_only or not (args.projects or args.subset or args.scenarios)):
        target = HERE / "corpus.md"
    if args.table_only:
        rows = [load(args.work, project) for project in chosen]
    if target is not None:
        target.write_text(table(rows), encoding="utf-8")
        print(f"results written to {target}")
    if not args.table_only:
        print(f"{failed} difference(s)" if failed else "every check agrees")
    return 1 if failed else 0


Row = tuple[Project, "list[scenarios.Check] | None", float, str]


def _result_file(work: Path, project: Project) -> Path:
    return work / "results" / f"{project.name}-{project.version}.json"


def save(work: Path, project: Project, checks: list[scenarios.Check], seconds: float) -> None:
    """Keep a project's full result, so the table can be written from separate runs."""
    path = _result_file(work, project)
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = []
    if path.exists():
        # A run of some scenarios replaces those and keeps the others' last results.
        done = {c.scenario for c in checks}
        kept = [c for c in json.loads(path.read_text())["checks"] if c["scenario"] not in done]
    order = {name: i for i, name in enumerate(scenarios.SCENARIOS)}
    merged = sorted(
        kept + [dataclasses.asdict(c) for c in checks], key=lambda c: order[c["scenario"]]
    )
    data = {"seconds": seconds, "checks": merged}
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def load(work: Path, project: Project) -> Row:
    path = _result_file(work, project)
    if not path.exists():
        return (project, None, 0.0, f"not measured for this table (no {path.name} yet)")
    data = json.loads(path.read_text(encoding="utf-8"))
    checks = [scenarios.Check(**c) for c in data["checks"]]
    return (project, checks, float(data["seconds"]), "")


def _counts(value: object) -> str:
    if not isinstance(value, dict):
        return str(value)
    shown = [f"{n} {k}" for k, n in value.items() if n]
    return ", ".join(shown) or "none"


def table(rows: list[Row]) -> str:
    """The results as Markdown: one row per project and scenario."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Real-world corpus: results",
        "",
        f"Written by `python benchmarks/realworld/corpus.py` on {stamp}: Python "
        f"{platform.python_version()} on {sys.platform}, tools {', '.join(TOOLS)}.",
        "Counts are pytest's categories (its summary line for plain pytest; attempt 1's "
        "records for flakewarden, whose report.json totals must also fold them). Times are "
        "wall seconds, plain / flakewarden.",
        "",
        "| project | version | shape | scenario | plain | flakewarden | agree | time s | note |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for project, checks, seconds, error in rows:
        head = f"| {project.name} | {project.version} | {project.shape} "
        if checks is None:
            lines.append(f"{head}| - | - | - | no | {seconds:.0f} | {error} |")
            continue
        for index, check in enumerate(checks):
            first = head if index == 0 else "| | | "
            plain = _counts(check.plain)
            shown = _counts(check.flakewarden)
            time_s = f"{check.plain_seconds:.1f} / {check.flakewarden_seconds:.1f}"
            note = check.detail.replace("|", "\\|")
            lines.append(
                f"{first}| {check.scenario} | {plain} | {shown} | "
                f"{'yes' if check.ok else '**no**'} | {time_s} | {note} |"
            )
    lines += ["", "## Differences found, and fixed", ""]
    lines += [f"- **{what}**: {detail}." for what, detail in KNOWN_DIFFERENCES]
    lines += ["", "## Projects tried and replaced", ""]
    lines += [f"- **{what}**: {why}." for what, why in REPLACED]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
