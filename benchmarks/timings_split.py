"""Splitting one ``flakewarden run`` into the test processes and flakewarden's own time.

Both run benchmarks set ``FLAKEWARDEN_TIMINGS`` (src/flakewarden/model/timings.py) and read
the record back with the benchmark's own clock readings around the subprocess, plus the
plugin's stamps in each attempt's ``results.jsonl`` (when pytest imported the plugin, when
it had configured, collected and finished its session). Every figure is a difference of
two stamps taken in the run itself; nothing is estimated.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

# flakewarden's own time, in the order it is spent; after the tests, by phase.
AFTER = (
    "end leftovers",
    "read records",
    "fold",
    "report.json",
    "junit.xml",
    "summary.md",
    "rerun-report.txt",
    "manifest",
    "console summary",
)
OWN = (
    "interpreter start-up",
    "imports",
    "subcommand import + parse",
    "before the tests",
    "between attempts",
    *AFTER,
    "other after the tests",
    "exit",
)
# One pytest process, as its stamps split it.
CHILD = ("start-up", "plugins + conftest", "collection", "tests", "session end + exit")


def _plugin_stamps(results: Path) -> dict[str, float]:
    stamps: dict[str, float] = {}
    try:
        lines = results.read_text(encoding="utf-8").splitlines()
    except OSError:
        return stamps
    for line in lines:
        if (
            '"kind": "config"' in line
            or '"kind": "collected"' in line
            or '"kind": "session"' in line
        ):
            record = json.loads(line)
            if record["kind"] == "config":
                stamps["loaded"], stamps["configured"] = record["loaded"], record["time"]
            elif record["kind"] == "collected":
                stamps["collected"] = record["time"]
                stamps["items"] = float(len(record["ids"]))
            else:
                stamps["finished"] = record["time"]
    return stamps


def child_split(child: dict[str, Any]) -> dict[str, float]:
    """One pytest process from spawn to exit, by the plugin's stamps (empty if it has none)."""
    stamps = _plugin_stamps(Path(child["log"]).with_name("results.jsonl"))
    if not {"loaded", "configured", "collected", "finished"} <= set(stamps):
        return {}
    return {
        "start-up": stamps["loaded"] - child["start"],
        "plugins + conftest": stamps["configured"] - stamps["loaded"],
        "collection": stamps["collected"] - stamps["configured"],
        "tests": stamps["finished"] - stamps["collected"],
        "session end + exit": child["exited"] - stamps["finished"],
        "items": stamps["items"],
    }


def split(record: dict[str, Any], launched: float, ended: float) -> dict[str, Any]:
    """flakewarden's own time by part, the children's windows, and each child's split.

    ``launched`` and ``ended`` are the benchmark's ``time.time()`` just before starting
    the subprocess and just after it exited.
    """
    marks = record["marks"]
    phases = record["phases"]
    children = [p for p in phases if p["name"] == "child"]
    parse = sum(p["end"] - p["start"] for p in phases if p["name"] == "parse")
    first_start = children[0]["start"] if children else marks["end"]
    last_end = children[-1]["exited"] if children else marks["end"]
    after = {name: 0.0 for name in AFTER}
    for entry in phases:
        if entry["start"] >= last_end and entry["name"] in after:
            after[entry["name"]] += entry["end"] - entry["start"]
    own = {
        "interpreter start-up": marks["imported"] - launched,
        "imports": marks["main"] - marks["imported"],
        "subcommand import + parse": parse,
        "before the tests": first_start - marks["main"] - parse,
        "between attempts": sum(b["start"] - a["exited"] for a, b in zip(children, children[1:])),
        **after,
        "other after the tests": marks["end"] - last_end - sum(after.values()),
        "exit": ended - marks["end"],
    }
    windows = sum(c["exited"] - c["start"] for c in children)
    return {
        "own": own,
        "own total": (ended - launched) - windows,
        "own cpu": float(record.get("cpu", 0.0)),
        "children": windows,
        "child splits": [child_split(c) for c in children],
    }


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """Median and the spread around it (first and third quartiles)."""
    ordered = sorted(values)
    if len(ordered) < 2:
        return (ordered[0],) * 3 if ordered else (0.0, 0.0, 0.0)
    q1, q2, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return q2, q1, q3


def read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data
