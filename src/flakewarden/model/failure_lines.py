"""The one line of a failure a human reads first, in summaries, annotations and JUnit."""

from __future__ import annotations


def first_line(text: str) -> str:
    """The line a human reads first: the first ``E`` line of a traceback, else its last line."""
    lines = [line for line in text.splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    if errors:
        return errors[0]
    if lines and lines[-1].rstrip().endswith(("DocTestFailure", "UnexpectedException")):
        return _doctest_line(lines)
    return lines[-1].strip() if lines else ""


def _doctest_line(lines: list[str]) -> str:
    """A failing doctest: its example, what it expected and what it got (not ``file:3: ...``)."""
    example = next((ln.split(">>>", 1)[1].strip() for ln in reversed(lines) if ">>>" in ln), "")
    where = f"doctest {example}: " if example else "doctest: "
    for line in lines:
        if line.startswith("UNEXPECTED EXCEPTION:"):
            return where + line.split(":", 1)[1].strip()
    try:
        expected = lines[lines.index("Expected:") + 1].strip()
        got = lines[lines.index("Got:") + 1].strip()
    except (ValueError, IndexError):
        return lines[-1].strip()
    return f"{where}expected {expected}, got {got}"
