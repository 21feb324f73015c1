"""Which failures are rerun: ``rerun.only`` and ``rerun.except``, matched against what was raised.

A pattern matches a failure when it names one of the failure's exceptions (the one
raised or any in its ``__cause__``/``__context__`` chain) by its class or a base
class, fully qualified (``requests.exceptions.ConnectTimeout``) or by a dotted tail
(``ConnectTimeout``, ``exceptions.ConnectTimeout``); or, as a regular expression,
when it is found in one of those exceptions' ``type: message`` lines. ``type:NAME``
matches names only, ``message:REGEX`` messages only.

With ``only`` patterns a failure is rerun only when one of them matches; with
``except`` patterns, never when one of them matches. A failure that raised nothing
the plugin saw (the process crashed, or timed out) matches no pattern.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import NamedTuple, Optional

from flakewarden.model.raised import Raised, raised_text

TYPE_PREFIX = "type:"
MESSAGE_PREFIX = "message:"
MAX_PATTERN = 500


class RerunPolicy(NamedTuple):
    only: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()  # ``rerun.except`` (``except`` is a keyword)

    @property
    def active(self) -> bool:
        return bool(self.only or self.exclude)

    def refusal(self, raised: Sequence[Raised], crash: str = "") -> str:
        """Why a failure that raised ``raised`` is not rerun; empty when it is rerun."""
        if self.only and not any(matched(p, raised) for p in self.only):
            if not raised:
                how = "the process crashed" if crash else "no exception was recorded"
                return f"not rerun: {how}, and rerun.only reruns only the exceptions it names"
            return f"not rerun: {raised_text(raised)} is not in rerun.only"
        for pattern in self.exclude:
            hit = matched(pattern, raised)
            if hit:
                return f"not rerun: {hit} is in rerun.except ({pattern})"
        return ""


def check(pattern: str) -> str:
    """A pattern as given, or ``ValueError`` with the reason it cannot be used."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise ValueError("a rerun pattern must be a non-empty string")
    if len(pattern) > MAX_PATTERN:
        raise ValueError(f"a rerun pattern must be at most {MAX_PATTERN} characters")
    kind, text = _split(pattern)
    if not text:
        raise ValueError(f"{pattern!r} names nothing after {kind}:")
    if kind != "type":
        try:
            _regex(text)
        except re.error as exc:
            raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
    return pattern


def matched(pattern: str, raised: Sequence[Raised]) -> Optional[str]:
    """The name of the first exception ``pattern`` matches (by name or message), else None."""
    kind, text = _split(pattern)
    for exc in raised:
        if kind != "message" and any(_names(name, text) for name in (exc.type, *exc.bases)):
            return exc.name
        if kind != "type" and _regex(text).search(f"{exc.type}: {exc.message}"):
            return exc.name
    return None


def _split(pattern: str) -> tuple[str, str]:
    for kind, prefix in (("type", TYPE_PREFIX), ("message", MESSAGE_PREFIX)):
        if pattern.startswith(prefix):
            return kind, pattern[len(prefix) :].strip()
    return "any", pattern


def _names(qualified: str, name: str) -> bool:
    """``name`` is ``qualified`` or a dotted tail of it."""
    return qualified == name or qualified.endswith("." + name)


@functools.lru_cache(maxsize=256)
def _regex(text: str) -> re.Pattern[str]:
    return re.compile(text)
