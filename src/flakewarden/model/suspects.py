"""Where a failure comes from: a line of the project's code, and why it is suspected.

A verdict's ``where`` is a ranked list of ``Suspect``: the file (relative to the rootdir),
the line, its text, a score and the evidence in words and numbers. ``verdict.json``,
``verdict.md``, the console, the flake issue and the annotations all read this one type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

#: A line is shown as a suspect only at this score or above; below, the localisation says
#: that nothing stands out rather than rank noise.
THRESHOLD = 0.5


class Suspect(NamedTuple):
    """One suspected line, with the evidence that ranks it."""

    file: str
    line: int
    text: str
    score: float
    evidence: str
    # what the score is made of: spectrum (failing against passing runs), a cue of the
    # cause's kind in the line's code, the failure's traceback, a replay
    parts: Mapping[str, float]

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "text": self.text,
            "score": round(self.score, 3),
            "evidence": self.evidence,
            "parts": {k: round(v, 3) for k, v in self.parts.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Suspect:
        parts = data.get("parts")
        return cls(
            file=str(data.get("file") or ""),
            line=int(data.get("line") or 0),
            text=str(data.get("text") or ""),
            score=float(data.get("score") or 0.0),
            evidence=str(data.get("evidence") or ""),
            parts={str(k): float(v) for k, v in parts.items()} if isinstance(parts, dict) else {},
        )
