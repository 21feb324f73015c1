"""Coverage per file for the page, read from the report's own ``coverage.xml``.

The merged total is in ``report.json``; per-file figures are only in the XML that the
coverage merge wrote next to it, so they are read from there: statements, the ones
missed (as ranges, ``3-5, 9``), and the line and branch rates coverage.py computed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, NamedTuple, Optional

#: Files listed at most: the least covered first, so what is left out is the best covered.
MAX_FILES = 2_000


class FileCoverage(NamedTuple):
    path: str
    statements: int
    missing: int
    line_rate: float
    branch_rate: float
    missing_lines: str  # "3-5, 9"

    def to_json(self) -> list[Any]:
        return [
            self.path,
            self.statements,
            self.missing,
            round(self.line_rate * 100, 2),
            round(self.branch_rate * 100, 2),
            self.missing_lines,
        ]


def ranges(numbers: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``3-5, 9``."""
    parts: list[str] = []
    start = previous = None
    for number in sorted(numbers):
        if previous is not None and number == previous + 1:
            previous = number
            continue
        if start is not None:
            parts.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = number
    if start is not None:
        parts.append(str(start) if start == previous else f"{start}-{previous}")
    return ", ".join(parts)


def _rate(value: Optional[str]) -> float:
    try:
        return float(value or 0)
    except ValueError:
        return 0.0


def read_file_coverage(xml_path: Path) -> tuple[list[FileCoverage], int]:
    """Each file's coverage (least covered first, at most ``MAX_FILES``) and how many
    files were left out; ``([], 0)`` when the file is absent or unreadable."""
    files: list[FileCoverage] = []
    try:
        for _, element in ET.iterparse(str(xml_path)):
            if element.tag != "class":
                continue
            lines = element.findall("lines/line")
            missed = [int(line.get("number") or 0) for line in lines if line.get("hits") == "0"]
            files.append(
                FileCoverage(
                    path=element.get("filename") or element.get("name") or "?",
                    statements=len(lines),
                    missing=len(missed),
                    line_rate=_rate(element.get("line-rate")),
                    branch_rate=_rate(element.get("branch-rate")),
                    missing_lines=ranges(missed),
                )
            )
            element.clear()
    except (OSError, ET.ParseError, ValueError):
        return [], 0
    files.sort(key=lambda f: (f.line_rate, -f.missing, f.path))
    return files[:MAX_FILES], max(0, len(files) - MAX_FILES)
