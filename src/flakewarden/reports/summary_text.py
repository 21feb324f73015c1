"""Inline Markdown for the job summary: user data shown literally, on one line.

Apart from ``summary`` so the summary's parts (``summary_blame``) share it.
"""

from __future__ import annotations

#: Longest test id or failure line shown in one table cell.
CELL_LIMIT = 500

_BACKSLASHED = set("\\`*_[]|~")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}


def escape_markdown(text: str, limit: int = CELL_LIMIT) -> str:
    """``text`` as literal inline Markdown on one line, cut at ``limit`` characters."""
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    out: list[str] = []
    for char in text:
        if char in "\r\n\t":
            out.append(" ")
        elif char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif char == "@":
            # A zero-width space after "@" stops GitHub linking (and notifying) a user.
            out.append("@&#8203;")
        elif char in _BACKSLASHED:
            out.append("\\" + char)
        elif ord(char) < 32 or ord(char) == 127:
            continue
        else:
            out.append(char)
    return "".join(out)
