"""Blame's measurement inside the tested interpreter: which changed lines each test ran.

Driven by ``FLAKEWARDEN_BLAME``, the path of a JSON plan written by ``flakewarden run
--base``: ``out`` (a folder for what is measured), ``include`` (the changed Python files,
absolute), ``watch`` (the changed files of other kinds, absolute) and ``shared`` (the
process already runs under coverage.py: ``coverage run`` or pytest-cov).

- Each test runs in a coverage.py *dynamic context* named by its node id: the process's own
  coverage when ``shared``, else one started here, measuring only the changed files and
  saved as ``out/.coverage-blame.*``. What runs outside a test (imports at collection)
  stays in the empty context.
- An audit hook (``sys.addaudithook``) notes, per test, the subprocesses it started and the
  watched files it opened, and, outside any test, the watched files opened at collection.
  Coverage follows neither a subprocess nor a data file: the judge says ``unknown`` then.
- At the end ``out/seen-<pid>.jsonl`` holds one line per test (``id``, ``spawned``,
  ``read``, and ``uses``: the changed files its module is or holds a module or a
  definition of), one for collection (``id`` ""), and a last one with the changed files loaded
  as modules (``imported``) and any ``error`` (coverage.py not installed here).

Standard library only; coverage.py is imported when it is installed in this interpreter.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Optional

SPAWNING = {
    "subprocess.Popen",
    "os.system",
    "os.posix_spawn",
    "os.exec",
    "os.spawn",
    "os.fork",
    "os.forkpty",
}
MAX_NOTED = 3  # spawned commands and read files noted per test


class _State:
    def __init__(self, plan: dict[str, Any]) -> None:
        self.out = str(plan["out"])
        self.include = [str(p) for p in plan.get("include") or []]
        self.wanted = {os.path.normcase(os.path.realpath(p)) for p in self.include}
        self.changed_modules: dict[str, str] = {}
        self.modules_seen = 0
        self.watch = {os.path.normcase(str(p)) for p in plan.get("watch") or []}
        self.watch_names = {os.path.basename(p) for p in self.watch}
        self.shared = bool(plan.get("shared"))
        self.coverage: Any = None  # our own coverage.Coverage, when not shared
        self.error = ""
        self.current: Optional[str] = None
        self.seen: dict[str, dict[str, list[str]]] = {}
        self.lines: list[str] = []

    def note(self, kind: str, value: str) -> None:
        noted = self.seen.setdefault(self.current or "", {}).setdefault(kind, [])
        limit = MAX_NOTED if kind != "uses" else len(self.include)
        if len(noted) < limit and value not in noted:
            noted.append(value[:300])


_state: Optional[_State] = None
_hooked = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    state = _state
    if state is None:
        return
    try:
        if event == "open":
            path = args[0] if args else None
            if isinstance(path, str) and os.path.basename(path) in state.watch_names:
                full = os.path.normcase(os.path.abspath(path))
                if full in state.watch:
                    state.note("read", full)
        elif event in SPAWNING and state.current is not None:
            state.note("spawned", _command(event, args))
    except Exception:  # an audit hook must never break the code it watches
        pass


def _command(event: str, args: tuple[Any, ...]) -> str:
    if event == "subprocess.Popen" and len(args) > 1:
        command = args[1]
        if isinstance(command, (list, tuple)):
            return " ".join(str(part) for part in command)
        return str(command)
    if event in ("os.fork", "os.forkpty"):
        return event
    return " ".join(str(a) for a in args[:2])


def start(active: bool) -> bool:
    """At ``pytest_configure``: read the plan, start measuring; whether blame is on."""
    global _state, _hooked
    path = os.environ.get("FLAKEWARDEN_BLAME")
    if not active or not path or _state is not None:
        return False
    try:
        with open(path, encoding="utf-8") as stream:
            plan = json.load(stream)
        state = _State(plan)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if not state.shared and state.include:
        try:
            import coverage

            state.coverage = coverage.Coverage(
                data_file=os.path.join(state.out, ".coverage-blame"),
                data_suffix=True,
                include=state.include,
                config_file=False,
                branch=False,
            )
            state.coverage.start()
        except Exception as error:  # not installed here, or it would not start
            state.coverage = None
            state.error = f"coverage.py could not measure in the tested interpreter: {error}"
    _state = state
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True
    return True


def _coverage(state: _State) -> Any:
    if state.coverage is not None:
        return state.coverage
    if state.shared:
        coverage = sys.modules.get("coverage")
        current = getattr(getattr(coverage, "Coverage", None), "current", None)
        return current() if callable(current) else None
    return None


def _switch(state: _State, context: str) -> None:
    coverage = _coverage(state)
    if coverage is None:
        return
    try:
        coverage.switch_context(context)
    except Exception as error:  # not started (yet): say so once
        if not state.error:
            state.error = f"coverage.py would not switch to a test's context: {error}"


def test_starts(nodeid: str, module: Any = None, path: Any = None) -> None:
    state = _state
    if state is None:
        return
    state.current = nodeid
    state.seen.setdefault(nodeid, {})
    for used in _uses(state, module, path):
        state.note("uses", used)
    _switch(state, nodeid)


def _uses(state: _State, module: Any, path: Any) -> set[str]:
    """The changed files a test's module is, or holds (a module, a package above it, or a
    definition from it)."""
    found = set()
    if path is not None:
        real = os.path.normcase(os.path.realpath(str(path)))
        if real in state.wanted:
            found.add(real)
    names = set()
    for value in list(getattr(module, "__dict__", {}).values()):
        name = getattr(value, "__name__" if isinstance(value, type(sys)) else "__module__", "")
        if isinstance(name, str) and name:
            names.add(name)
    for name, real in _changed_modules(state).items():
        parts = name.split(".")
        if any(".".join(parts[:end]) in names for end in range(1, len(parts) + 1)):
            found.add(real)
    return found


def _changed_modules(state: _State) -> dict[str, str]:
    """The loaded modules that are changed files, by name (looked for again as more load)."""
    if len(sys.modules) != state.modules_seen:
        state.modules_seen = len(sys.modules)
        for name, loaded in list(sys.modules.items()):
            file = getattr(loaded, "__file__", None)
            if isinstance(file, str):
                real = os.path.normcase(os.path.realpath(file))
                if real in state.wanted:
                    state.changed_modules[name] = real
    return state.changed_modules


def test_ends(nodeid: str) -> None:
    state = _state
    if state is None or state.current != nodeid:
        return
    _switch(state, "")
    state.current = None


def finish() -> None:
    """At the session's end: stop our coverage, write what was seen."""
    global _state
    state = _state
    if state is None:
        return
    _state = None
    if state.coverage is not None:
        try:
            state.coverage.stop()
            state.coverage.save()
        except Exception as error:
            state.error = f"coverage.py could not save what it measured: {error}"
    wanted = state.wanted
    imported = set()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str):
            real = os.path.normcase(os.path.realpath(file))
            if real in wanted:
                imported.add(real)
    lines = [json.dumps({"id": test, **seen}) for test, seen in state.seen.items()]
    lines.append(json.dumps({"imported": sorted(imported), "error": state.error}))
    try:
        os.makedirs(state.out, exist_ok=True)
        with open(os.path.join(state.out, f"seen-{os.getpid()}.jsonl"), "w") as stream:
            stream.write("\n".join(lines) + "\n")
    except OSError:
        pass
