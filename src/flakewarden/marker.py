"""The hidden marker line that ties a GitHub issue to one test.

``<!-- flakewarden: {"id": "...", "hits": 3, "first": "...", "last": "..."} -->``

It is one line of JSON inside an HTML comment, so it survives any edit a human
makes around it. Other features add keys (``verdict``, ``verdict_at``,
``quarantined_at``, ``runs``, ``failures``); a rewrite keeps every key it does
not know. ``<``, ``>``, ``&`` and ``@`` are written as JSON ``\\u`` escapes, so
no test id can close the comment early or mention anyone.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

PREFIX = "<!-- flakewarden: "
SUFFIX = " -->"
_LINE = re.compile(r"^[ \t]*<!-- flakewarden: (\{.*\}) -->[ \t]*$", re.MULTILINE)


def format_marker(data: dict[str, Any]) -> str:
    """The marker line for ``data`` (no newline)."""
    text = json.dumps(data, ensure_ascii=True, separators=(", ", ": "))
    for char in "<>&@":  # no comment end, no tag, no mention, even for a naive reader
        text = text.replace(char, f"\\u{ord(char):04x}")
    return PREFIX + text + SUFFIX


def read_marker(body: Optional[str]) -> Optional[dict[str, Any]]:
    """The first well-formed marker in ``body`` that names a test, or ``None``."""
    for match in _LINE.finditer(body or ""):
        try:
            data = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            return data
    return None


def replace_marker(body: Optional[str], data: dict[str, Any]) -> str:
    """``body`` with its marker line replaced (or put first); every other line kept as is."""
    body = body or ""
    line = format_marker(data)
    for match in _LINE.finditer(body):
        try:
            parsed = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(parsed, dict) and isinstance(parsed.get("id"), str):
            return body[: match.start()] + line + body[match.end() :]
    return line + "\n" + body if body else line + "\n"


def update_marker(body: Optional[str], **changes: Any) -> str:
    """Merge ``changes`` into the marker of ``body`` and rewrite only that line."""
    data = read_marker(body)
    if data is None:
        raise ValueError("the issue body has no flakewarden marker")
    data.update(changes)
    return replace_marker(body, data)
