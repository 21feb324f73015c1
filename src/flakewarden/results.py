"""Reading what the plugin recorded in one process (a JSON-lines file)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Optional

from .model import TestRecord


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
    with open(path, encoding="utf-8", errors="replace") as stream:
        for line in stream:
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                kind = data["kind"]
                if kind == "config":
                    results.config = data
                elif kind == "test":
                    results.tests.append(TestRecord.from_json(data))
                elif kind == "collect_error":
                    results.collect_errors.append((str(data["id"]), str(data["longrepr"])))
                elif kind == "pytest_stats":
                    results.pytest_stats = data
                elif kind == "session":
                    results.exitstatus = int(data["exitstatus"])
                    results.testscollected = int(data.get("testscollected") or 0)
            except (ValueError, KeyError, TypeError):
                results.corrupt_lines += 1
    return results
