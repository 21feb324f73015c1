"""``flakewarden stress`` run as a user runs it, and the parts of its verdict the tests read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .report_builders import run_report

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:randomly"]


def stress(
    project: Path, test_id: str, *options: str, command: list[str] = PYTEST
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    result = subprocess.run(
        [sys.executable, "-m", "flakewarden", "stress", test_id, *options, "--", *command],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    path = project / "flakewarden-stress" / "verdict.json"
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return result, data


def write_order_report(project: Path, order: list[str]) -> None:
    """A ``report.json`` of a run that ran ``order``, for ``--order-from``."""
    report = run_report(command=PYTEST, rootdir=str(project), order=order, exit_code=1)
    (project / "report.json").write_text(json.dumps(report.to_json()), encoding="utf-8")


def arm(data: dict[str, Any], phase: str, knob: str) -> dict[str, Any]:
    return next(a for a in data["arms"] if a["phase"] == phase and a["knob"] == knob)
