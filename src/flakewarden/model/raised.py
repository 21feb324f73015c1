"""What a failure raised, and the retries made inside a test: the evidence behind a rerun.

The plugin records, for a failed phase, the exception and every exception in its
``__cause__``/``__context__`` chain (``Raised``), and for any phase the retries that
``flakewarden.retry`` made inside it (``InTestRetry``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple


def short_name(qualified: str) -> str:
    """``builtins.TimeoutError`` -> ``TimeoutError``; ``a.b.ConnectTimeout`` likewise."""
    return qualified.rpartition(".")[2] or qualified


class Raised(NamedTuple):
    """One exception of a failure's chain."""

    type: str  # fully qualified: builtins.TimeoutError, requests.exceptions.ReadTimeout
    bases: tuple[str, ...]  # its base classes' qualified names, nearest first
    message: str

    @property
    def name(self) -> str:
        return short_name(self.type)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "bases": list(self.bases), "message": self.message}

    @classmethod
    def from_json(cls, data: Any) -> Raised:
        return cls(
            str(data.get("type") or ""),
            tuple(str(b) for b in data.get("bases") or ()),
            str(data.get("message") or ""),
        )


class InTestRetry(NamedTuple):
    """One retry ``flakewarden.retry`` made inside a test (``times`` > 1: counted together)."""

    function: str
    exception: str  # qualified type
    message: str
    attempt: int  # the decorated call's attempt that failed (0 when counted together)
    attempts: int
    delay: float  # seconds it waited before the next attempt
    times: int = 1

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "function": self.function,
            "exception": self.exception,
            "message": self.message,
            "attempt": self.attempt,
            "attempts": self.attempts,
            "delay": self.delay,
        }
        if self.times != 1:
            data["times"] = self.times
        return data

    @classmethod
    def from_json(cls, data: Any) -> InTestRetry:
        return cls(
            str(data.get("function") or ""),
            str(data.get("exception") or ""),
            str(data.get("message") or ""),
            int(data.get("attempt") or 0),
            int(data.get("attempts") or 0),
            float(data.get("delay") or 0.0),
            max(1, int(data.get("times") or 1)),
        )


def retries_text(retries: Iterable[InTestRetry]) -> str:
    """``2 x TimeoutError in fetch_price, 1 x ConnectionError in login``: most first."""
    counts: dict[tuple[str, str], int] = {}
    for retry in retries:
        key = (short_name(retry.exception), retry.function)
        counts[key] = counts.get(key, 0) + retry.times
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{count} x {kind} in {function}" for (kind, function), count in ranked)


def raised_text(raised: Sequence[Raised]) -> str:
    """``ValueError (from KeyError)``: the failure's exception and what it came from."""
    if not raised:
        return ""
    head = raised[0].name
    rest = [r.name for r in raised[1:]]
    return f"{head} (from {', '.join(rest)})" if rest else head
