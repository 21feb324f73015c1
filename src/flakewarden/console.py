"""Text bound for the console: one line each, whatever a test id or message holds.

A test id can hold a line break (a custom collector can name an item anything),
and on GitHub Actions a line that starts with ``::`` is a workflow command. Every
id and message printed goes through ``one_line``, so it can never start a line
of its own. The data itself (report.json, selection by id) keeps the exact text.
"""

from __future__ import annotations

_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(32), 127)}
_ESCAPES.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
# Unicode line and paragraph separators end a line for some readers too.
_ESCAPES.update({0x2028: "\\u2028", 0x2029: "\\u2029", 0x85: "\\x85"})


def one_line(text: object) -> str:
    """``text`` with every line break and control character written as an escape."""
    return str(text).translate(_ESCAPES)
