"""Markdown that untrusted text cannot break out of.

Test ids, failure text and branch names come from the code under test and from
whoever pushed the branch. In an issue body they must not ping people
(``@team``), inject HTML, close flakewarden's hidden ``<!-- -->`` marker,
open a comment that hides the rest of the body, or end a code block early.
"""

from __future__ import annotations

import re
import urllib.parse

# A zero-width space after "@" keeps the text readable and stops GitHub's mention.
_NO_MENTION = "@\u200b"
_ESCAPED = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "@": _NO_MENTION,
}
# Characters that start Markdown syntax somewhere inside a line.
_PUNCTUATION = set("\\`*_{}[]()#+-.!|~:\"'$=^")


def escape(text: str) -> str:
    """Inline text, rendered as the same characters and nothing else (one line)."""
    out = []
    for char in " ".join(text.split()):
        if char in _ESCAPED:
            out.append(_ESCAPED[char])
        elif char in _PUNCTUATION:
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def _longest_run(text: str, char: str) -> int:
    runs = re.findall(re.escape(char) + "+", text)
    return max((len(r) for r in runs), default=0)


def code(text: str) -> str:
    """An inline code span: no mention, link or HTML survives inside one.

    ``@`` is still broken up, because GitHub's notification scan is not trusted
    to skip code spans in every renderer that shows the issue (mails, apps).
    """
    text = " ".join(text.split()).replace("@", _NO_MENTION)
    if not text:
        return "` `"
    fence = "`" * (_longest_run(text, "`") + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or text.startswith(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code_block(text: str, info: str = "text") -> str:
    """A fenced block whose fence is longer than any backtick run inside it."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("@", _NO_MENTION)
    fence = "`" * max(3, _longest_run(text, "`") + 1)
    info = re.sub(r"[^A-Za-z0-9_+-]", "", info)
    return f"{fence}{info}\n{text.rstrip(chr(10))}\n{fence}"


def clip(text: str, limit: int, where: str = "characters") -> str:
    """At most ``limit`` characters of ``text``, ending with a note when cut."""
    if len(text) <= limit:
        return text
    # The longest the note can be, so the stated count is exactly what was cut.
    keep = max(0, limit - len(f"\n… cut: {len(text):,} more {where} not shown"))
    return text[:keep] + f"\n… cut: {len(text) - keep:,} more {where} not shown"


def table_cell(text: str) -> str:
    """Escaped text safe inside a table cell (``|`` is escaped, newlines joined)."""
    return escape(text)


def table_code(text: str) -> str:
    """A code span inside a table cell: GFM splits cells at ``|`` even inside code."""
    return code(text).replace("|", "\\|")


def link(text: str, url: str) -> str:
    """``[text](url)`` for an http(s) URL; anything else is shown as escaped text."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        return escape(text)
    safe = urllib.parse.quote(url, safe=":/?#[]@!$&'*+,;=%~-._")
    safe = safe.replace("(", "%28").replace(")", "%29").replace("@", "%40")
    return f"[{escape(text)}]({safe})"
