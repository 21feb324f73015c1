"""Which causes are the environment's: a service that refused, a name that did not resolve.

A database that refused connections or a package index that answered 503 fails the tests
that touched it; none of them did anything wrong. Such a cause is told apart by its
signature (``model/signatures.py``), against a list of patterns the configuration file
can replace (``causes.environment``). The patterns speak the rerun policy's language
(``type:NAME``, ``message:REGEX`` or a bare regular expression) and read the signature's
masked message: numbers there read ``N``, so they name reason phrases, not status codes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from flakewarden.model.signatures import Signature

#: What the environment does to tests, as signatures show it.
DEFAULT_PATTERNS: tuple[str, ...] = (
    # A service that refused, reset or dropped a connection.
    "type:ConnectionRefusedError",
    "type:ConnectionResetError",
    "type:ConnectionAbortedError",
    "type:BrokenPipeError",
    # A name that did not resolve.
    "type:gaierror",
    r"message:(?i)name or service not known|temporary failure in name resolution"
    r"|nodename nor servname|getaddrinfo failed",
    # A socket's own timeout (``socket.timeout`` is ``TimeoutError``: "timed out").
    r"^(?:TimeoutError|timeout): timed out$",
    # An outside host's HTTP 429, 502, 503 or 504: a status (masked ``N``), its reason phrase.
    r"message:(?i)\bN\b.{0,20}\b(?:too many requests|bad gateway|service unavailable"
    r"|gateway time-?out)\b",
    # The runner itself: a full disk, memory run out, the process killed.
    r"message:(?i)no space left on device|disk quota exceeded",
    "type:MemoryError",
    r"message:(?i)cannot allocate memory|out of memory",
    r"message:was killed by SIGKILL",
)


def environment_pattern(signature: Signature, patterns: Sequence[str]) -> str:
    """The first of ``patterns`` the signature matches (it is the environment's), else ""."""
    line = f"{signature.exception}: {signature.message}"
    for pattern in patterns:
        kind, text = _split(pattern)
        if kind == "type":
            if signature.exception == text.rpartition(".")[2]:
                return pattern
        elif _regex(text).search(signature.message if kind == "message" else line):
            return pattern
    return ""


def _split(pattern: str) -> tuple[str, str]:
    for kind in ("type", "message"):
        if pattern.startswith(kind + ":"):
            return kind, pattern[len(kind) + 1 :].strip()
    return "any", pattern


@functools.lru_cache(maxsize=256)
def _regex(text: str) -> re.Pattern[str]:
    return re.compile(text)
