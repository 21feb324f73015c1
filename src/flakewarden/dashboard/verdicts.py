"""Stress verdicts for the dashboard, read from ``verdict.json`` files.

The history database keeps runs, not stress runs: ``flakewarden dashboard --verdicts``
names stress report directories (or their ``verdict.json``), such as the digest
workflow downloads from the stress workflow's artifacts. Only the fields the page shows
are read, leniently, through the one reader of outside JSON (``outside_json``: confined
to its directory, within bounds); a file that is not a verdict is named and skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from flakewarden.model.suspects import Suspect
from flakewarden.model.verdicts import VERDICTS
from flakewarden.outside_json import read_json

SHOWN = 3  # suspect lines shown beside a verdict, as verdict.md leads with


def read_verdicts(paths: Iterable[Path]) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """Per test id, its verdicts (newest first); and a line per file that was skipped."""
    found: dict[str, list[dict[str, Any]]] = {}
    skipped: list[str] = []
    for path in paths:
        target = path / "verdict.json" if path.is_dir() else path
        try:
            data = read_json(target, path if path.is_dir() else target.parent)
            if not isinstance(data, dict) or data.get("verdict") not in VERDICTS:
                raise ValueError("not a flakewarden verdict")
            test_id = str(data["test_id"])
            item = {
                "verdict": str(data["verdict"]),
                "allowed": data.get("quarantine_allowed") is True,
                "reason": str(data.get("reason") or "")[:1000],
                "runs": int(data.get("runs") or 0),
                "failures": int(data.get("failures") or 0),
                "at": str(data.get("finished_at") or data.get("started_at") or ""),
                "where": _where(data.get("where")),
            }
        except (OSError, ValueError, KeyError, TypeError, OverflowError) as exc:
            skipped.append(f"{target}: {exc}")
            continue
        found.setdefault(test_id, []).append(item)
    for items in found.values():
        items.sort(key=lambda v: str(v["at"]), reverse=True)
    return found, skipped


def _where(data: Any) -> list[dict[str, str]]:
    """The first suspect lines, as ``file:line`` and the line's text; [] when unreadable."""
    suspects = data.get("suspects") if isinstance(data, dict) else None
    if not isinstance(suspects, list):
        return []
    shown = []
    for raw in suspects[:SHOWN]:
        try:
            suspect = Suspect.from_json(raw)
        except (TypeError, ValueError, AttributeError, OverflowError):
            continue
        shown.append({"at": suspect.location[:300], "text": suspect.text[:200]})
    return shown
