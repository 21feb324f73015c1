"""One process of a run and the fresh processes that continued it after a crash.

Plain classes with the equality and ``repr`` a dataclass would give: an attempt is made
before its process starts, and importing ``dataclasses`` (it brings ``inspect`` and
``ast``) would delay every run's first test by ~14 ms.
"""

from __future__ import annotations

from typing import Any, Optional

NEW_PROCESS = "new process"
FORKED = "forked from a warm pytest"
# Why a rerun is a new process when the user chose it (``process_note``): not a surprise.
FORKS_OFF = "forking reruns is turned off (fork_reruns: false, or --no-fork-reruns)"
FORKS_MEASURED = (
    "coverage is measured, and a new process measures all a rerun runs "
    "(a warm pytest imported some of it before the child started)"
)


class _Fields:
    """Equal when of the same class with equal attributes; shown as its attributes."""

    __hash__ = None  # type: ignore[assignment]  # mutable: unhashable, as a dataclass

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"{type(self).__name__}({fields})"


class Continuation(_Fields):
    """A fresh process that ran the tests a crashed process of the same attempt never reached."""

    def __init__(
        self,
        command: list[str],
        reason: str,
        selected: int = 0,  # how many tests it was given (the list is in its select.json)
        exit_code: Optional[int] = None,
        duration: float = 0.0,
        crash: str = "",  # how this process died, when it did too
        directory: str = "",  # attempts/N/continuation-K relative to the report dir
        process: str = NEW_PROCESS,  # how it was started: see ``Attempt``
        process_note: str = "",
    ) -> None:
        self.command = command
        self.reason = reason
        self.selected = selected
        self.exit_code = exit_code
        self.duration = duration
        self.crash = crash
        self.directory = directory
        self.process = process
        self.process_note = process_note

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "reason": self.reason,
            "selected": self.selected,
            "exit_code": self.exit_code,
            "duration": round(self.duration, 6),
            "crash": self.crash,
            "directory": self.directory,
            "process": self.process,
            "process_note": self.process_note,
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
            process=str(data.get("process") or NEW_PROCESS),
            process_note=str(data.get("process_note") or ""),
        )


class Attempt(_Fields):
    """One process: the user's command (attempt 1) or a rerun of failed tests.

    When that process crashed, the tests it never reached ran in ``continuations``,
    still counted as this attempt.
    """

    def __init__(
        self,
        number: int,
        command: list[str],
        reason: str,
        exit_code: Optional[int] = None,
        duration: float = 0.0,
        selected: Optional[list[str]] = None,
        collection_errors: Optional[list[str]] = None,
        directory: str = "",  # attempts/N relative to the report dir
        # What pytest's own summary line counted (None: not available), and every way
        # flakewarden's records of this attempt disagree with it (consistency.py).
        pytest_summary: Optional[dict[str, int]] = None,
        disagreements: Optional[list[str]] = None,
        crash: str = "",  # how its process died before the session finished, when it did
        continuations: Optional[list[Continuation]] = None,
        # How its process was started: a new process, or forked from a warm pytest
        # (``FORKED``); ``process_note`` says why a rerun's is a new one.
        process: str = NEW_PROCESS,
        process_note: str = "",
    ) -> None:
        self.number = number
        self.command = command
        self.reason = reason
        self.exit_code = exit_code
        self.duration = duration
        self.selected: list[str] = [] if selected is None else selected
        self.collection_errors: list[str] = [] if collection_errors is None else collection_errors
        self.directory = directory
        self.pytest_summary = pytest_summary
        self.disagreements: list[str] = [] if disagreements is None else disagreements
        self.crash = crash
        self.continuations: list[Continuation] = [] if continuations is None else continuations
        self.process = process
        self.process_note = process_note

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
            "process": self.process,
            "process_note": self.process_note,
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
            # Reports from before reruns were forked: every process was a new one.
            process=str(data.get("process") or NEW_PROCESS),
            process_note=str(data.get("process_note") or ""),
        )


def _counts(data: Any) -> Optional[dict[str, int]]:
    if not isinstance(data, dict):
        return None
    return {str(key): int(value) for key, value in data.items()}
