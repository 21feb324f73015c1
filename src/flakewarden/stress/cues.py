"""What a line of the project's code does that a kind of flakiness needs: its cues.

A set whose order follows the hash seed, a draw of a random generator, a write to state
other threads share, an ``await`` between a check and an act, a deadline (a timeout, a
``join``, a sleep, a clock read). The localisation reads a file's cues once (``Source``)
and ranks, among the lines the failing runs executed, those whose cue fits the verdict's
cause first. The functions' spans tell a line whose whole function diverges (the
divergence began at its call) from one where it begins.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from flakewarden.stress.writes import written

SET = "set"  # builds or iterates a set: its order follows the hash seed
DRAW = "draw"  # draws from a random generator
WRITE = "write"  # writes state that outlives the call: an attribute, an item, a global
AWAIT = "await"  # gives way to other tasks
DEADLINE = "deadline"  # a timeout, a join or wait, a sleep, a clock read

#: What each cue says in a suspect's evidence.
SAYS = {
    SET: "builds or iterates a set: its order follows the hash seed",
    DRAW: "draws from a random generator",
    WRITE: "writes shared state (an attribute, an item or a global)",
    AWAIT: "awaits: other tasks run here, between a check and an act",
    DEADLINE: "sets or waits on a deadline (a timeout, join, wait, sleep or clock)",
}
_DRAWS = {
    "random",
    "randint",
    "randrange",
    "choice",
    "choices",
    "shuffle",
    "sample",
    "uniform",
    "gauss",
    "normal",
    "integers",
    "getrandbits",
}
_WAITS = {"join", "wait", "wait_for", "sleep", "result", "acquire", "get"}
_CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns"}
MAX_BYTES = 2_000_000  # a file larger than this is not parsed: its lines get no cue


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _call_cues(node: ast.Call) -> set[str]:
    found = set()
    name = _name(node.func)
    if name in ("set", "frozenset"):
        found.add(SET)
    if name in _DRAWS and isinstance(node.func, ast.Attribute):
        found.add(DRAW)
    if any(k.arg == "timeout" for k in node.keywords) or name in _WAITS or name in _CLOCKS:
        found.add(DEADLINE)
    return found


def _deadline_value(node: ast.Call) -> str:
    """The timeout a call sets (``timeout=``, or the delay of a wait or sleep), as written."""
    for keyword in node.keywords:
        if keyword.arg == "timeout":
            return ast.unparse(keyword.value)
    name = _name(node.func)
    if name in ("sleep", "wait_for", "join", "wait") and node.args:
        return ast.unparse(node.args[-1] if name == "wait_for" else node.args[0])
    return ""


def _node_cues(node: ast.AST) -> set[str]:
    if isinstance(node, (ast.Set, ast.SetComp)):
        return {SET}
    if isinstance(node, ast.Await):
        return {AWAIT}
    if isinstance(node, ast.Call):
        return _call_cues(node)
    if isinstance(node, ast.AugAssign) and isinstance(
        node.target, (ast.Attribute, ast.Subscript, ast.Name)
    ):
        return {WRITE}
    if isinstance(node, ast.Assign) and any(
        isinstance(t, (ast.Attribute, ast.Subscript)) for t in node.targets
    ):
        return {WRITE}
    if isinstance(node, ast.Global):
        return {WRITE}
    return set()


class Source:
    """One file of the project's code: its lines, each line's cues and function spans."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.cues: dict[int, set[str]] = {}
        self.functions: list[tuple[int, int]] = []  # (first, last) line of each def
        self.constants: dict[str, str] = {}  # module-level NAME = literal, as written
        self.deadlines: dict[int, str] = {}  # line -> the timeout or delay it sets, as written
        self.writes: dict[int, set[str]] = {}  # line -> the names it writes (``writes``)
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return
        self.writes = written(tree)
        for statement in tree.body:
            if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant):
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        self.constants[target.id] = ast.unparse(statement.value)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                value = _deadline_value(node)
                if value:
                    self.deadlines.setdefault(node.lineno, value)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.append((node.lineno, node.end_lineno or node.lineno))
            cues = _node_cues(node)
            if cues:
                line = getattr(node, "lineno", 0)
                last = getattr(node, "end_lineno", None) or line
                for number in range(line, last + 1) if not isinstance(node, ast.Assign) else [line]:
                    self.cues.setdefault(number, set()).update(cues)

    def deadline(self, line: int) -> str:
        """The deadline ``line`` sets, with a named constant's value: ``DEADLINE (= 0.25)``."""
        value = self.deadlines.get(line, "")
        if value in self.constants:
            return f"{value} (= {self.constants[value]})"
        return value

    def text(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    def function_of(self, line: int) -> Optional[tuple[int, int]]:
        """The innermost function whose span holds ``line``."""
        spans = [s for s in self.functions if s[0] <= line <= s[1]]
        return min(spans, key=lambda s: s[1] - s[0]) if spans else None


class Sources:
    """The project's files under one rootdir, each read and parsed once, by name."""

    def __init__(self, rootdir: Path) -> None:
        self.rootdir = rootdir
        self.read: dict[str, Source] = {}

    def __call__(self, file: str) -> Source:
        if file not in self.read:
            self.read[file] = read_source(self.rootdir, file)
        return self.read[file]


def read_source(rootdir: Path, file: str) -> Source:
    """The file under the rootdir, parsed; an empty source when it cannot be read."""
    path = rootdir / file
    try:
        if not path.resolve().is_relative_to(rootdir.resolve()):
            return Source("")  # only the project's own files are read
        if path.stat().st_size > MAX_BYTES:
            return Source("")
        return Source(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return Source("")
