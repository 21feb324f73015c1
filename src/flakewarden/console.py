"""Text bound for the console: one line each, whatever a test id or message holds.

A test id can hold a line break (a custom collector can name an item anything),
and on GitHub Actions the runner acts on a line that starts with ``::`` (after
leading white space) and on ``##[name]`` anywhere in a line. Every id and
message printed goes through ``one_line``, so it can never start a line of its
own, start with ``::``, or hold ``##[``; JSON written to the console goes through
``json_line``, which keeps the same value. The data itself (report.json,
selection by id) keeps the exact text.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from typing import Optional, TextIO

_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(32), 127)}
_ESCAPES.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
# Unicode line and paragraph separators end a line for some readers too.
_ESCAPES.update({0x2028: "\\u2028", 0x2029: "\\u2029", 0x85: "\\x85"})
# Lone surrogates cannot be encoded: printing one would crash, not print.
_ESCAPES.update({code: f"\\u{code:04x}" for code in range(0xD800, 0xE000)})


def _is_runner_space(char: str) -> bool:
    """White space as .NET's ``TrimStart`` (the runner's) sees it."""
    return char in "\t\n\v\f\r\x85" or unicodedata.category(char) in ("Zs", "Zl", "Zp")


def _invisible(char: str) -> bool:
    """A character a culture-aware search may skip: formats, controls, combining marks."""
    return unicodedata.category(char)[0] in "CM"


def _neutralise_legacy(text: str, bracket: str = "\\x5b") -> str:
    """Write each ``[`` that follows a ``#`` (invisible characters between) as ``bracket``."""
    if "[" not in text or "#" not in text:
        return text
    out = []
    start = 0
    at = text.find("[")
    while at >= 0:
        before = at - 1
        while before >= 0 and _invisible(text[before]):
            before -= 1
        if before >= 0 and text[before] == "#":
            out.append(text[start:at])
            out.append(bracket)
            start = at + 1
        at = text.find("[", at + 1)
    out.append(text[start:])
    return "".join(out)


def one_line(text: object) -> str:
    """``text`` as one inert line: breaks and controls escaped, no workflow command in it.

    ``##[`` never survives (its ``[`` becomes ``\\x5b``), and a text that would
    start with ``::`` (after white space) has its first ``:`` written ``\\x3a``.
    A caller never places one right after fixed text ending in ``#``.
    """
    escaped = _neutralise_legacy(str(text).translate(_ESCAPES))
    lead = 0
    while lead < len(escaped) and _is_runner_space(escaped[lead]):
        lead += 1
    if escaped.startswith("::", lead):
        escaped = escaped[:lead] + "\\x3a" + escaped[lead + 1 :]
    return escaped


# Line separators some readers break on; JSON lets them be escaped like any character.
_JSON_BREAKS = {0x2028: "\\u2028", 0x2029: "\\u2029", 0x85: "\\u0085"}


def json_line(document: object) -> str:
    """``document`` as one line of JSON that holds no workflow command, the same value.

    ``json.dumps`` already escapes line breaks and starts the line with ``{`` or
    ``[``; a ``[`` after a ``#`` can only be inside a string there, and is written
    ``\\u005b``, which any JSON reader decodes back to ``[``.
    """
    text = json.dumps(document, ensure_ascii=False).translate(_JSON_BREAKS)
    return _neutralise_legacy(text, "\\u005b")


def say(message: object, who: str = "flakewarden", stream: Optional[TextIO] = None) -> None:
    """One escaped line, ``who: message``, on standard output (or ``stream``), flushed."""
    out = sys.stdout if stream is None else stream
    out.write(f"{who}: {one_line(message)}\n")
    out.flush()


def complain(message: object, who: str = "flakewarden") -> None:
    """One escaped line, ``who: message``, on standard error."""
    say(message, who, sys.stderr)


def plural(count: int, noun: str, plural_form: str = "") -> str:
    """``1 flaky test``, ``2 flaky tests``."""
    return f"{count} {noun if count == 1 else (plural_form or noun + 's')}"
