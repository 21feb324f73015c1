"""Reading what the plugin recorded in one process (a JSON-lines file)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, NamedTuple, Optional

from flakewarden.model import TestRecord

# xdist reports a test whose worker died as a failure in this made-up phase.
XDIST_CRASH_PHASE = "???"


class Start(NamedTuple):
    """A test the plugin saw start (flushed before its body ran)."""

    id: str
    file: str
    line: Optional[int]
    time: float


@dataclasses.dataclass
class ProcessResults:
    """The plugin's records of one process, in the order they were written."""

    config: Optional[dict[str, Any]] = None
    tests: list[TestRecord] = dataclasses.field(default_factory=list)
    collect_errors: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    exitstatus: Optional[int] = None  # None: the session never finished
    testscollected: int = 0  # as pytest counted them, after deselection
    corrupt_lines: int = 0
    pytest_stats: Optional[dict[str, Any]] = None  # pytest's own counts (consistency.py)
    collected: Optional[list[str]] = None  # the tests the session was to run, in order
    running: list[Start] = dataclasses.field(default_factory=list)  # started, never finished

    @property
    def started(self) -> bool:
        """True when pytest got as far as loading the plugin."""
        return self.config is not None

    @property
    def rootdir(self) -> Optional[str]:
        return None if self.config is None else str(self.config.get("rootdir"))

    @property
    def order(self) -> list[str]:
        seen: dict[str, None] = {}
        for record in self.tests:
            seen.setdefault(record.id, None)
        return list(seen)

    def by_id(self) -> dict[str, list[TestRecord]]:
        grouped: dict[str, list[TestRecord]] = {}
        for record in self.tests:
            grouped.setdefault(record.id, []).append(record)
        return grouped


def read_results(path: Path) -> ProcessResults:
    """Read a results file; a missing file means pytest never loaded the plugin.

    A line cut short (the process was killed mid-write) is counted, not fatal.
    """
    results = ProcessResults()
    if not path.exists():
        return results
    running: dict[str, Start] = {}
    with open(path, encoding="utf-8", errors="replace") as stream:
        for line in stream:
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                kind = data["kind"]
                if kind == "start":
                    start = _start(data)
                    running.pop(start.id, None)  # keep them in the order they started
                    running[start.id] = start
                elif kind == "config":
                    results.config = data
                elif kind == "test":
                    record = _worker_crash(TestRecord.from_json(data))
                    if not record.unfinished:
                        # A test the session wrote as unfinished (it ended mid-test) is still
                        # the one that was running, should the process turn out stopped.
                        running.pop(record.id, None)
                    results.tests.append(record)
                elif kind == "collected":
                    results.collected = [str(i) for i in data["ids"]]
                elif kind == "collect_error":
                    results.collect_errors.append((str(data["id"]), str(data["longrepr"])))
                elif kind == "pytest_stats":
                    results.pytest_stats = data
                elif kind == "session":
                    results.exitstatus = int(data["exitstatus"])
                    results.testscollected = int(data.get("testscollected") or 0)
            except (ValueError, KeyError, TypeError):
                results.corrupt_lines += 1
    results.running = list(running.values())
    return results


def _start(data: dict[str, Any]) -> Start:
    line = data.get("line")
    return Start(
        id=str(data["id"]),
        file=str(data.get("file") or ""),
        line=int(line) if line is not None else None,
        time=float(data.get("time") or 0.0),
    )


def _worker_crash(record: TestRecord) -> TestRecord:
    """An xdist worker that died mid-test: pytest names the test; that is a ``crashed`` run."""
    for phase in record.phases:
        if phase.when == XDIST_CRASH_PHASE and phase.outcome == "failed":
            lines = [line.strip() for line in phase.longrepr.splitlines() if line.strip()]
            named = [line for line in lines if "crashed while running" in line]
            record.crash = (named or lines or ["the xdist worker running this test crashed"])[0]
    return record
