"""One process of a run and the fresh processes that continued it after a crash."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional


@dataclasses.dataclass
class Continuation:
    """A fresh process that ran the tests a crashed process of the same attempt never reached."""

    command: list[str]
    reason: str
    selected: int = 0  # how many tests it was given (the list is in its select.json)
    exit_code: Optional[int] = None
    duration: float = 0.0
    crash: str = ""  # how this process died, when it did too
    directory: str = ""  # attempts/N/continuation-K relative to the report dir

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "reason": self.reason,
            "selected": self.selected,
            "exit_code": self.exit_code,
            "duration": round(self.duration, 6),
            "crash": self.crash,
            "directory": self.directory,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Continuation:
        return cls(
            command=[str(c) for c in data.get("command", [])],
            reason=str(data.get("reason") or ""),
            selected=int(data.get("selected", 0)),
            exit_code=data.get("exit_code"),
            duration=float(data.get("duration", 0.0)),
            crash=str(data.get("crash") or ""),
            directory=str(data.get("directory") or ""),
        )


@dataclasses.dataclass
class Attempt:
    """One process: the user's command (attempt 1) or a rerun of failed tests.

    When that process crashed, the tests it never reached ran in ``continuations``,
    still counted as this attempt.
    """

    number: int
    command: list[str]
    reason: str
    exit_code: Optional[int] = None
    duration: float = 0.0
    selected: list[str] = dataclasses.field(default_factory=list)
    collection_errors: list[str] = dataclasses.field(default_factory=list)
    directory: str = ""  # attempts/N relative to the report dir
    # What pytest's own summary line counted (None: not available), and every way
    # flakewarden's records of this attempt disagree with it (consistency.py).
    pytest_summary: Optional[dict[str, int]] = None
    disagreements: list[str] = dataclasses.field(default_factory=list)
    crash: str = ""  # how its process died before the session finished, when it did
    continuations: list[Continuation] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "command": self.command,
            "reason": self.reason,
            "exit_code": self.exit_code,
            "duration": round(self.duration, 6),
            "selected": self.selected,
            "collection_errors": self.collection_errors,
            "directory": self.directory,
            "pytest_summary": self.pytest_summary,
            "disagreements": self.disagreements,
            "crash": self.crash,
            "continuations": [c.to_json() for c in self.continuations],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attempt:
        return cls(
            number=int(data["number"]),
            command=[str(c) for c in data.get("command", [])],
            reason=str(data.get("reason") or ""),
            exit_code=data.get("exit_code"),
            duration=float(data.get("duration", 0.0)),
            selected=[str(s) for s in data.get("selected", [])],
            collection_errors=[str(s) for s in data.get("collection_errors", [])],
            directory=str(data.get("directory") or ""),
            pytest_summary=_counts(data.get("pytest_summary")),
            disagreements=[str(s) for s in data.get("disagreements") or []],
            crash=str(data.get("crash") or ""),
            continuations=[Continuation.from_json(c) for c in data.get("continuations", [])],
        )


def _counts(data: Any) -> Optional[dict[str, int]]:
    if not isinstance(data, dict):
        return None
    return {str(key): int(value) for key, value in data.items()}
