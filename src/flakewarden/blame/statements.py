"""Which executed lines count as running a changed line of a Python file.

coverage.py records the lines where statements start executing. A changed line is not
always one of them: the second line of a call spread over three, an ``else:``, a
function's signature, a line between statements where others were taken out. Each changed
line is mapped, by the file's syntax tree, to the lines whose execution means it ran:

- in a simple statement: that statement's lines;
- in a ``def`` header (decorators, signature): the header, and the function's body (a call
  ran the changed signature); its decorators also run at import;
- in a compound statement's header (``if x:``, ``with a as b:``): the header's lines;
- on an ``else:``, ``except ...:`` or ``finally:`` line, or between two statements of a
  block (lines taken out): the statement after it in that block, and the header;
- outside every statement at module level (a function taken out): nothing runs it in a
  test, but it is a change *at import*.

``at_import`` holds the changed lines that run when the module is imported (module-level
and class-body statements, decorators): their effect reaches any test that imports the
module, through no line the test runs itself. A ``def`` or ``class`` line alone is not one
of them: defining a name does nothing until it is used.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Mapped:
    """Per changed line, the executed lines that count as running it."""

    runs: dict[int, frozenset[int]]
    at_import: frozenset[int]
    parsed: bool = True  # False: the file is not Python this interpreter can read

    def ran(self, executed: Iterable[int]) -> frozenset[int]:
        """The changed lines run by a test that executed the lines ``executed``."""
        seen = frozenset(executed)
        return frozenset(line for line, counts in self.runs.items() if counts & seen)


def _span(first: int, last: int) -> frozenset[int]:
    return frozenset(range(first, last + 1))


def _start(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(int(d.lineno) for d in decorators)])


def _end(node: ast.AST) -> int:
    end = getattr(node, "end_lineno", None)
    return end if isinstance(end, int) else int(getattr(node, "lineno", 0))


def _blocks(node: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists a compound statement holds, in source order."""
    found: list[list[ast.stmt]] = []
    for name in ("body", "orelse", "finalbody"):
        block = getattr(node, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            found.append(block)
    for handler in getattr(node, "handlers", None) or []:
        found.append(handler.body)
    for case in getattr(node, "cases", None) or []:
        found.append(case.body)
    return sorted(found, key=lambda block: block[0].lineno)


class _Mapper:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree

    def map(self, line: float) -> tuple[frozenset[int], bool]:
        """The lines that count as running ``line``, and whether it runs at import.

        ``line`` may be a gap: ``n + 0.5`` stands for the place between lines n and n + 1.
        """
        return self._in_block(self.tree.body, line, import_level=True)

    def _in_block(
        self, block: Sequence[ast.stmt], line: float, *, import_level: bool
    ) -> tuple[frozenset[int], bool]:
        for node in block:
            if _start(node) <= line <= _end(node):
                return self._in_statement(node, line, import_level=import_level)
        # Between statements (lines taken out): what runs next runs past the gap.
        following = next((n for n in block if _start(n) > line), None)
        if following is None:
            return frozenset(), import_level
        last = _start(following) if _blocks(following) else _end(following)
        return _span(_start(following), last), import_level

    def _in_statement(
        self, node: ast.stmt, line: float, *, import_level: bool
    ) -> tuple[frozenset[int], bool]:
        blocks = _blocks(node)
        if not blocks:
            return _span(_start(node), _end(node)), import_level
        first_inside = blocks[0][0].lineno
        head = _span(_start(node), max(first_inside - 1, node.lineno))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if line < first_inside:
                decorator = line < node.lineno  # evaluated at import, the rest when called
                return head | _span(first_inside, _end(node)), import_level and decorator
            return self._in_block(node.body, line, import_level=False)
        if isinstance(node, ast.ClassDef):
            if line < first_inside:
                return head, import_level and line < node.lineno
            return self._in_block(node.body, line, import_level=import_level)
        if line < first_inside:
            return head, import_level
        for block in blocks:
            if block[0].lineno <= line <= _end(block[-1]):
                return self._in_block(block, line, import_level=import_level)
        # ``else:``, ``except E:``, ``finally:``: the header, and the block it opens.
        after = next((b for b in blocks if b[0].lineno > line), None)
        if after is None:
            return head, import_level
        opened, _ = self._in_block(after, after[0].lineno, import_level=import_level)
        return head | opened, import_level


def map_lines(source: bytes, changed: Iterable[int], gaps: Iterable[int] = ()) -> Mapped:
    """Map one Python file's changed lines (new text) and its gaps (lines taken out after
    line n). A blank or comment line between statements is left out: it is an added blank
    line, or a gap's neighbour, and the gap itself is mapped."""
    tree = _parse(source)
    if tree is None:
        return Mapped({}, frozenset(), parsed=False)
    mapper = _Mapper(tree)
    texts = source.splitlines()
    inside = _statement_lines(tree)
    runs: dict[int, frozenset[int]] = {}
    at_import: set[int] = set()
    places: list[tuple[int, float]] = []
    for line in sorted(set(changed)):
        text = texts[line - 1].strip() if 0 < line <= len(texts) else b""
        if line in inside or (text and not text.startswith(b"#")):
            places.append((line, line))
    places += [(gap + 1, gap + 0.5) for gap in sorted(set(gaps))]
    for key, place in places:
        counts, importing = mapper.map(place)
        if counts:
            runs[key] = runs.get(key, frozenset()) | counts
        if importing:
            at_import.add(key)
    return Mapped(runs, frozenset(at_import))


def _statement_lines(tree: ast.Module) -> frozenset[int]:
    """Lines inside a statement that holds no other (a blank line in a long string)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not _blocks(node):
            lines.update(range(_start(node), _end(node) + 1))
    return frozenset(lines)


def _parse(source: bytes) -> Optional[ast.Module]:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None
