"""Markdown that untrusted text cannot break out of.

Test ids, failure text and branch names come from the code under test and from
whoever pushed the branch. In an issue body they must not ping people
(``@team``), inject HTML, close flakewarden's hidden ``<!-- -->`` marker,
open a comment that hides the rest of the body, or end a code block early.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Optional

#: Longest test id or failure line the job summary shows in one table cell.
CELL_LIMIT = 500

# A zero-width space after "@" or "#" keeps the text readable and stops GitHub's
# mention (which notifies) and issue reference (which links and cross-posts).
_NO_LINK = "\u200b"
_NO_MENTION = "@" + _NO_LINK
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}
# Characters with a meaning anywhere in a line: emphasis, code, links and images (which
# need "[" and "]"), cells, strikethrough, math.
_PUNCTUATION = set("\\`*_[]|~$")
# Characters that open a block at the start of a line: a list, a setext heading.
_OPENING = set("-+=")


def escape(text: str, limit: Optional[int] = None) -> str:
    """``text`` as literal inline Markdown on one line, cut at ``limit`` characters.

    The one escaper of every Markdown writer: safe in a table cell, a list item, a
    heading, link text or at the start of a line, so no caller has to know which
    context is stricter. Rendered, it shows exactly the characters of ``text``; no
    bare URL in it is linked (``https:\\//``, ``www\\.``) and no ``::`` is left for a
    workflow command (``:\\:error:\\:``), should the text reach a log.
    """
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    # Control characters show nothing, and some terminals act on them.
    text = " ".join("".join(c for c in text if c.isspace() or not _is_control(c)).split())
    out: list[str] = []
    leading_digits = False  # an ordered list opens with digits then "." or ")"
    for index, char in enumerate(text):
        if char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif char in "@#":
            out.append(char + _NO_LINK)
        elif (
            char in _PUNCTUATION
            or (index == 0 and char in _OPENING)
            or (leading_digits and char in ".)")
            or (char in ":(" and text[index - 1 : index] == {":": ":", "(": "]"}[char])
            or (char == "/" and text[index - 1 : index + 2] == "://")
            or (char == "." and text[max(0, index - 3) : index].lower() == "www")
        ):
            out.append("\\" + char)
        else:
            out.append(char)
        leading_digits = char.isdigit() and (index == 0 or leading_digits)
    return "".join(out)


def _is_control(char: str) -> bool:
    return ord(char) < 32 or 127 <= ord(char) < 160


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
