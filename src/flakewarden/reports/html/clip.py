"""Bounded text for a page: long outputs clipped with a visible marker, under one budget.

A page holds every test of a run; a run whose suite fell over can hold thousands of
tracebacks and megabytes of output each. Each text keeps its head and, larger, its tail
(the end of a traceback or a log is what explains it), and says how much it left out and
where the whole text is. Once the page's budget is spent, texts are left out whole.
"""

from __future__ import annotations

#: Below this a clipped text would be too short to read; it is left out instead.
SMALLEST = 600


def clip(text: str, limit: int, where: str) -> str:
    """``text``, or its head and tail with a marker saying what was cut and where it is."""
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    cut = len(text) - head - tail
    marker = f"\n\n[... {cut:,} characters left out here; the whole text is in {where} ...]\n\n"
    return text[:head] + marker + text[-tail:]


class Budget:
    """Characters a page may still spend on long texts."""

    def __init__(self, total: int) -> None:
        self.left = total
        self.clipped = 0  # texts shortened
        self.dropped = 0  # texts left out whole

    def take(self, text: str, limit: int, where: str) -> str:
        """``text`` clipped to ``limit`` and to what is left; a marker alone when nothing is."""
        if not text:
            return ""
        allowed = min(limit, self.left)
        if allowed < min(SMALLEST, len(text)):
            self.dropped += 1
            return f"[{len(text):,} characters left out to keep this page small; see {where}]"
        kept = clip(text, allowed, where)
        if kept is not text:
            self.clipped += 1
        self.left -= len(kept)
        return kept
