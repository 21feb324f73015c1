"""Whether a hunk of a Python file changes only white space, comments or blank lines.

Both whole files are tokenized (``tokenize``), so a line inside a multi-line string is read
as part of that string, not as code. A hunk is cosmetic when the tokens that touch its old
lines and the tokens that touch its new lines are the same once comments, blank-line
``NL`` tokens and the width of indentation are set aside. ``INDENT`` and ``DEDENT`` are
compared by kind, not by their text: re-indenting a block by another width is cosmetic,
moving a statement out of its block is not. A file that does not tokenize has no
cosmetic hunks.
"""

from __future__ import annotations

import io
import tokenize
from functools import lru_cache
from typing import Optional

from .patch import Hunk

_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
_BY_KIND = {tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE}

Token = tuple[int, str, int, int]  # kind, text (or "" when compared by kind), first, last line


@lru_cache(maxsize=64)
def _tokens(source: bytes) -> Optional[tuple[Token, ...]]:
    try:
        found = list(tokenize.tokenize(io.BytesIO(source).readline))
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return None
    tokens = []
    for token in found:
        if token.type in _SKIPPED:
            continue
        text = "" if token.type in _BY_KIND else token.string
        tokens.append((token.type, text, token.start[0], token.end[0]))
    return tuple(tokens)


def _touching(tokens: tuple[Token, ...], start: int, count: int) -> list[tuple[int, str]]:
    if count == 0:
        return []
    end = start + count - 1
    return [(kind, text) for kind, text, first, last in tokens if first <= end and start <= last]


def is_cosmetic(old_source: bytes, new_source: bytes, hunk: Hunk) -> bool:
    """Whether ``hunk`` (of the diff from ``old_source`` to ``new_source``) is cosmetic."""
    old, new = _tokens(old_source), _tokens(new_source)
    if old is None or new is None:
        return False
    before = _touching(old, hunk.old_start, hunk.old_count)
    after = _touching(new, hunk.new_start, hunk.new_count)
    return before == after
