"""Reading a knob's environment variable: standard library only, one warning when it is bad."""

from __future__ import annotations

import os
import sys
from typing import Callable, Optional, TypeVar

_Parsed = TypeVar("_Parsed")
# The variables that ask for the stress knobs or the localisation's records (``knobs``).
KNOBS = (
    "FLAKEWARDEN_YIELD",
    "FLAKEWARDEN_ASYNCIO",
    "FLAKEWARDEN_CONCURRENCY",
    "FLAKEWARDEN_LINES",
    "FLAKEWARDEN_STATE",
)


def read(name: str, parse: Callable[[str], Optional[_Parsed]], form: str) -> Optional[_Parsed]:
    """The variable's value parsed; None when unset, or when bad (said on stderr, ignored)."""
    text = os.environ.get(name, "")
    if not text.strip():
        return None
    parsed = parse(text)
    if parsed is None:
        sys.stderr.write(f"flakewarden: {name}={text!r} is not {form}: ignored\n")
    return parsed
