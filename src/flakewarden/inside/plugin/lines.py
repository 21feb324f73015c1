"""Which lines of the project's code each run executed, and how often (``FLAKEWARDEN_LINES=1``).

Localisation compares failing runs with passing ones line by line: a branch only the
failing runs take, or a line they run more often (a check-then-act race builds its value
twice). While a test runs (from its setup's start to its teardown's end, as the knobs'
window), every line event in the project's code (``places.Places``: under the rootdir,
not site-packages, the standard library, pytest or this plugin) is counted, in every
Python thread. The counts go on the teardown's report (``LINES_ATTRIBUTE``) and from there
into the run's ``test`` record as ``{"file relative to the rootdir": {"line": count}}``.

How, by interpreter: on 3.12+ ``sys.monitoring`` ``LINE`` events on a tool id of its own
(``DISABLE`` for every line outside the project); before, trace functions on the project's
frames (``sys.settrace``, ``threading.settrace``). When the ``yield`` knob traces too (before
3.12 one trace function per thread serves both), its tracer counts the lines for this
module (``hit``). Standard library only.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable, Optional

from .places import Places
from .recorder import LINES_ATTRIBUTE

__all__ = ["LINES_ATTRIBUTE", "configure", "counting", "hit", "start", "stop", "unconfigure"]

VARIABLE = "FLAKEWARDEN_LINES"
TOOL_IDS = (3, 4)  # the ids CPython gives no meaning; the yield knob takes the first free
TOOL_NAME = "flakewarden-lines"

_counts: dict[tuple[str, int], int] = {}
_on = False
_places: Optional[Places] = None
_rootdir = ""
_backend: Optional[_Monitoring | _Tracing] = None
piggyback = False  # the yield knob's tracer counts the lines (before 3.12, both on)


def hit(filename: str, line: int) -> None:
    """One execution of ``line`` of ``filename`` (a file of the project's)."""
    key = (filename, line)
    _counts[key] = _counts.get(key, 0) + 1


def counting() -> bool:
    return _on


class _Monitoring:
    def __init__(self, monitoring: Any, tool: int) -> None:
        self.monitoring = monitoring
        self.tool = tool

    def line(self, code: Any, line: int) -> Any:
        assert _places is not None
        if not _on or not _places(code.co_filename):
            return self.monitoring.DISABLE
        hit(code.co_filename, line)
        return None

    def start(self) -> None:
        self.monitoring.register_callback(self.tool, self.monitoring.events.LINE, self.line)
        self.monitoring.restart_events()
        self.monitoring.set_events(self.tool, self.monitoring.events.LINE)

    def stop(self) -> None:
        self.monitoring.set_events(self.tool, 0)

    def close(self) -> None:
        self.stop()
        self.monitoring.register_callback(self.tool, self.monitoring.events.LINE, None)
        self.monitoring.free_tool_id(self.tool)


class _Tracing:
    def __init__(self) -> None:
        self.thread_hook: Any = None
        self.installed = False

    def calls(self, frame: Any, event: str, arg: Any) -> Optional[Callable[..., Any]]:
        if not _on:
            sys.settrace(None)
            return None
        assert _places is not None
        if _places(frame.f_code.co_filename):
            return self.lines
        return None

    def lines(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line" and _on:
            hit(frame.f_code.co_filename, frame.f_lineno)
        return self.lines

    def start(self) -> None:
        if piggyback or sys.gettrace() is not None:
            return  # the yield knob's tracer counts (or coverage's tracer is set: none here)
        self.installed = True
        gettrace = getattr(threading, "gettrace", None)
        self.thread_hook = gettrace() if gettrace else getattr(threading, "_trace_hook", None)
        threading.settrace(self.calls)
        sys.settrace(self.calls)

    def stop(self) -> None:
        if not self.installed:
            return
        self.installed = False
        sys.settrace(None)
        threading.settrace(self.thread_hook)

    def close(self) -> None:
        self.stop()


def configure(rootdir: str, plugin_dir: str, yields_traces: bool) -> str:
    """Get ready to count; ``yields_traces``: the yield knob's trace functions will count."""
    global _places, _rootdir, _backend, piggyback
    _places = Places(rootdir, plugin_dir)
    _rootdir = rootdir
    monitoring: Any = getattr(sys, "monitoring", None)
    if monitoring is not None:
        for tool in TOOL_IDS:
            if monitoring.get_tool(tool) is None:
                monitoring.use_tool_id(tool, TOOL_NAME)
                _backend = _Monitoring(monitoring, tool)
                return "sys.monitoring"
    piggyback = yields_traces
    _backend = _Tracing()
    return "sys.settrace"


def start() -> None:
    """A test's window opens: counts from zero."""
    global _on
    _counts.clear()
    _on = True
    if _backend is not None:
        _backend.start()


def stop() -> dict[str, dict[str, int]]:
    """The window closes: the counts by file (relative to the rootdir) and line."""
    global _on
    _on = False
    if _backend is not None:
        _backend.stop()
    found: dict[str, dict[str, int]] = {}
    for (filename, line), count in list(_counts.items()):
        found.setdefault(_relative(filename), {})[str(line)] = count
    _counts.clear()
    return found


def _relative(filename: str) -> str:
    try:
        path = os.path.relpath(filename, _rootdir)
    except ValueError:  # another drive
        return filename
    return path.replace(os.sep, "/")


def unconfigure() -> None:
    global _backend, _places, piggyback, _on
    backend, _backend = _backend, None
    if backend is not None:
        backend.close()
    _places, piggyback, _on = None, False, False
    _counts.clear()
