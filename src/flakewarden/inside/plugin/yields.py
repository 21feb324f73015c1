"""The ``yield`` knob: threads give up the processor at random opcodes of the project's code.

``FLAKEWARDEN_YIELD=<seed>:<probability>``. While a test runs (from its setup's start to
its teardown's end), each opcode executed in the project's code is, with the given
probability, preceded by a pause of the running thread (``pause``): a sleep drawn
log-uniformly from ``PAUSE_MIN`` to ``PAUSE_MAX`` seconds, taken only while another Python
thread is alive. A sleep, not ``time.sleep(0)``: under the GIL, a thread waiting for it
must wake up and take it before the sleeper takes it back, which a zero sleep almost never
leaves time for. The pause lands inside a line as well as between lines, so a lost update
within one statement (``self.count += 1``: load, add, store) is interleaved, which
``sys.setswitchinterval`` (the eval loop switches only at calls and backward jumps) almost
never does, and which free-threaded builds (no switch interval at all) need too.

The project's code: files under pytest's rootdir, except anything under a
``site-packages`` or ``dist-packages`` folder, the standard library and the interpreter's
install paths (``sysconfig``), pytest and pluggy, the plugin's own folder, and code whose
file name is not a path (``<string>``, the plugin's parts).

How, by interpreter:

- Python 3.12+: ``sys.monitoring`` (tool id 3, else 4). ``PY_START``/``PY_RESUME`` events
  decide once per code object: the project's get ``INSTRUCTION`` events of their own
  (``set_local_events``), every other one returns ``DISABLE`` and costs nothing again.
  Monitoring is process-wide, so threads started before the test (a server started by a
  session fixture) are covered, as are code objects already running when the test starts
  (found on every thread's stack).
- Python 3.9 to 3.11, or when both tool ids are taken: ``sys.settrace`` in the test's
  thread and ``threading.settrace`` for threads started during the test (on 3.12+
  ``threading.settrace_all_threads``, which reaches threads already running), with
  ``frame.f_trace_opcodes`` set on the project's frames only; the global tracer returns
  None for every other frame. Before 3.12 a thread that was already running when the test
  started is not traced (nothing can reach it): it is interleaved by the others' pauses
  only. When a trace function is already set (coverage.py's tracer, a debugger) it is
  left alone and the knob does not apply; ``notes`` says so.

Lines (``FLAKEWARDEN_YIELD_LINES``: ``<file>:<line>`` pairs, comma-separated, files
relative to the rootdir): pauses are taken only at opcodes of those lines, and the
others are not counted toward the next pause. Localisation narrows a race down with it:
pauses at a few lines that make the test fail, where pauses elsewhere do not, are an
interleaving at those lines; a failure that follows the pauses wherever they are follows
the time they add (a deadline).

Draws: each thread has its own ``random.Random``, seeded ``"<seed>:<n>"`` where ``n`` is the
thread's number in start order (``concurrency``), so that one thread's draws do not depend
on when another ran; the gap to the next pause is drawn geometrically (one draw per pause,
not per opcode). The test's own ``random`` is never touched. A thread's stream runs on
across the tests (and in-process repeats) of the process: a seed replays a whole process.
"""

from __future__ import annotations

import math
import os
import random
import sys
import threading
import time
from typing import Any, Callable, Optional

from . import concurrency
from .places import Only, Places

PAUSE_MIN = 100e-6  # seconds, log-uniform: a waiting thread must wake up and take the GIL
PAUSE_MAX = 1e-3
# Tool ids CPython gives no meaning (0 debugger, 1 coverage, 2 profiler, 5 optimizer).
_TOOL_IDS = (3, 4)
TOOL_NAME = "flakewarden-yield"

notes: list[str] = []  # why the knob did not apply, for the terminal summary
_seed = 0
_probability = 0.0
_local = threading.local()
_backend: Optional[_Monitoring | _Tracing] = None
_sleep = time.sleep
LINES_VARIABLE = "FLAKEWARDEN_YIELD_LINES"


_only: Optional[Only] = None
_code_lines: dict[int, tuple[Any, dict[int, int]]] = {}  # id(code) -> (code, offset -> line)


def _line_of(code: Any, offset: int) -> int:
    """The line of the instruction at ``offset`` (``sys.monitoring`` gives offsets)."""
    known = _code_lines.get(id(code))
    if known is None or known[0] is not code:
        table = {}
        for start, end, line in code.co_lines():
            for at in range(start, end, 2):
                table[at] = line
        known = _code_lines[id(code)] = (code, table)
    return known[1].get(offset, 0)


def parse(text: str) -> Optional[tuple[int, float]]:
    """``<seed>:<probability>`` as (seed, probability); None when malformed."""
    seed_text, colon, probability_text = text.strip().partition(":")
    try:
        seed, probability = int(seed_text), float(probability_text)
    except ValueError:
        return None
    if not colon or not 0.0 < probability <= 1.0:  # NaN too
        return None
    return seed, probability


class _Draws:
    """One thread's draws: its own stream, the opcodes left before its next pause."""

    __slots__ = ("left", "random")

    def __init__(self, number: int) -> None:
        self.random = random.Random(f"{_seed}:{number}")
        self.left = self.gap()

    def gap(self) -> int:
        if _probability >= 1.0:
            return 1
        return int(math.log(1.0 - self.random.random()) / math.log(1.0 - _probability)) + 1

    def pause(self) -> None:
        self.left = self.gap()
        seconds = PAUSE_MIN * (PAUSE_MAX / PAUSE_MIN) ** self.random.random()
        if threading.active_count() > 1:  # alone, a pause would give way to nobody
            _sleep(seconds)


def _draws() -> _Draws:
    draws: Optional[_Draws] = getattr(_local, "draws", None)
    if draws is None:
        draws = _local.draws = _Draws(concurrency.number(threading.current_thread()))
    return draws


def _instruction(code: Any, offset: int) -> Any:
    """``sys.monitoring``'s INSTRUCTION event, in the project's code only."""
    if _only is not None and _line_of(code, offset) not in _only.lines(code.co_filename):
        return getattr(sys, "monitoring").DISABLE  # noqa: B009 - this offset never pauses
    try:
        draws = _local.draws
    except AttributeError:
        draws = _draws()
    draws.left -= 1
    if draws.left <= 0:
        draws.pause()


class _Monitoring:
    """Python 3.12+: ``INSTRUCTION`` events on the project's code objects alone."""

    def __init__(self, places: Places, tool: int) -> None:
        self.monitoring: Any = getattr(sys, "monitoring")  # noqa: B009 - absent before 3.12
        self.places = places
        self.tool = tool
        self.enabled: dict[int, Any] = {}  # id(code) -> code, kept alive so the id stays its own
        events = self.monitoring.events
        self.instruction = events.INSTRUCTION
        self.entries = events.PY_START | events.PY_RESUME

    @classmethod
    def take(cls, places: Places) -> Optional[_Monitoring]:
        monitoring: Any = getattr(sys, "monitoring", None)
        if monitoring is None:
            return None
        for tool in _TOOL_IDS:
            if monitoring.get_tool(tool) is None:
                monitoring.use_tool_id(tool, TOOL_NAME)
                return cls(places, tool)
        return None

    def enable(self, code: Any) -> None:
        if id(code) not in self.enabled:
            self.enabled[id(code)] = code
            self.monitoring.set_local_events(self.tool, code, self.instruction)

    def entered(self, code: Any, offset: int) -> Any:
        """``PY_START``/``PY_RESUME``: decide this code object once."""
        if id(code) not in self.enabled and self.places(code.co_filename):
            self.enable(code)
        return self.monitoring.DISABLE

    def start(self) -> None:
        monitoring, tool, events = self.monitoring, self.tool, self.monitoring.events
        monitoring.register_callback(tool, events.PY_START, self.entered)
        monitoring.register_callback(tool, events.PY_RESUME, self.entered)
        monitoring.register_callback(tool, self.instruction, _instruction)
        for code in self.enabled.values():
            monitoring.set_local_events(tool, code, self.instruction)
        for top in list(sys._current_frames().values()):  # already running: no PY_START
            frame: Optional[Any] = top
            while frame is not None:
                if self.places(frame.f_code.co_filename):
                    self.enable(frame.f_code)
                frame = frame.f_back
        monitoring.set_events(tool, self.entries)

    def stop(self) -> None:
        self.monitoring.set_events(self.tool, 0)
        for code in self.enabled.values():
            self.monitoring.set_local_events(self.tool, code, 0)

    def close(self) -> None:
        self.stop()
        for event in (self.monitoring.events.PY_START, self.monitoring.events.PY_RESUME):
            self.monitoring.register_callback(self.tool, event, None)
        self.monitoring.register_callback(self.tool, self.instruction, None)
        self.monitoring.free_tool_id(self.tool)


class _Tracing:
    """Before 3.12 (or without a free tool id): trace functions, opcodes of the project's frames."""

    def __init__(self, places: Places) -> None:
        self.places = places
        self.on = False
        self.thread_hook: Any = None  # ``threading``'s trace hook before ours

    def start(self) -> None:
        if sys.gettrace() is not None:
            note = "FLAKEWARDEN_YIELD not applied: a trace function (coverage, a debugger) is set"
            if note not in notes:
                notes.append(note)
            return
        self.on = True
        gettrace = getattr(threading, "gettrace", None)  # 3.10+
        self.thread_hook = gettrace() if gettrace else getattr(threading, "_trace_hook", None)
        threading.settrace(self.first_call)
        everywhere: Optional[Callable[[Any], None]] = getattr(
            threading, "settrace_all_threads", None
        )
        if everywhere is not None:
            everywhere(self.first_call)
        else:
            sys.settrace(self.first_call)

    def first_call(self, frame: Any, event: str, arg: Any) -> Any:
        """A thread's first call while the knob is on: it takes a tracer of its own."""
        tracer = self.tracer(_draws())
        sys.settrace(tracer)
        return tracer(frame, event, arg)

    def tracer(self, draws: _Draws) -> Callable[..., Any]:
        places = self.places
        # One trace function per thread: it counts lines too when ``lines`` asks it to.
        lines: Any = sys.modules.get(f"{__package__}.lines")
        count_lines = lines is not None and lines.piggyback

        only = _only

        def opcodes(frame: Any, event: str, arg: Any) -> Any:
            if event == "opcode":
                if only is not None and frame.f_lineno not in only.lines(frame.f_code.co_filename):
                    return opcodes
                draws.left -= 1
                if draws.left <= 0:
                    if not self.on:  # a thread that outlived the test: stop here
                        frame.f_trace_opcodes = False
                        frame.f_trace = None
                        return None
                    draws.pause()
            elif event == "line" and lines.counting():
                lines.hit(frame.f_code.co_filename, frame.f_lineno)
            return opcodes

        def calls(frame: Any, event: str, arg: Any) -> Any:
            if not self.on:
                sys.settrace(None)
                return None
            if places(frame.f_code.co_filename):
                frame.f_trace_lines = count_lines
                frame.f_trace_opcodes = True
                return opcodes
            return None

        return calls

    def stop(self) -> None:
        if not self.on:
            return
        self.on = False
        everywhere = getattr(threading, "settrace_all_threads", None)
        if everywhere is not None:
            everywhere(None)
        else:
            sys.settrace(None)  # other threads drop their tracer at their next call
        threading.settrace(self.thread_hook)

    def close(self) -> None:
        self.stop()


def configure(seed: int, probability: float, rootdir: str, plugin_dir: str) -> str:
    """Get ready for the tests; returns how: ``sys.monitoring`` or ``sys.settrace``."""
    global _seed, _probability, _backend, _only
    _seed, _probability = seed, probability
    limited = os.environ.get(LINES_VARIABLE, "").strip()
    _only = Only(rootdir, limited) if limited else None
    concurrency.install()
    places = Places(rootdir, plugin_dir)
    monitoring = _Monitoring.take(places)
    _backend = monitoring if monitoring is not None else _Tracing(places)
    return "sys.monitoring" if monitoring is not None else "sys.settrace"


def start() -> None:
    """A test's setup starts."""
    if _backend is not None:
        _backend.start()


def stop() -> None:
    """The test's teardown is over."""
    if _backend is not None:
        _backend.stop()


def unconfigure() -> None:
    global _backend, _only
    _only = None
    _code_lines.clear()
    backend, _backend = _backend, None
    if backend is not None:
        backend.close()
        concurrency.uninstall()
