"""The stress knobs ``yield`` and ``asyncio``, and the applicability facts, as the environment asks.

``configure`` reads ``FLAKEWARDEN_YIELD``, ``FLAKEWARDEN_ASYNCIO`` and
``FLAKEWARDEN_CONCURRENCY`` (see the package's docstring) and, when any asks for it,
registers ``Knobs``: hooks first in each test's setup and last in its teardown, so that
the window spans every fixture's setup and teardown. Nothing is patched or registered
when none is set.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any, Callable, Optional, TypeVar

from . import concurrency, event_loop
from .recorder import CONCURRENCY_ATTRIBUTE, LINES_ATTRIBUTE
from .variables import read as _read

try:  # pytest is running us; a bare interpreter (the 3.9 load check) has none
    import pytest

    _first: Callable[[Callable[..., Any]], Callable[..., Any]] = pytest.hookimpl(tryfirst=True)
    _last: Callable[[Callable[..., Any]], Callable[..., Any]] = pytest.hookimpl(trylast=True)
except ImportError:  # pragma: no cover

    def _first(function: Any) -> Any:
        return function

    _last = _first


YIELD = "FLAKEWARDEN_YIELD"
ASYNCIO = "FLAKEWARDEN_ASYNCIO"
CONCURRENCY = "FLAKEWARDEN_CONCURRENCY"
LINES = "FLAKEWARDEN_LINES"
STATE = "FLAKEWARDEN_STATE"
_Parsed = TypeVar("_Parsed")
_facts = False  # ``concurrency`` was installed for the facts
_yields: Optional[ModuleType] = None  # the ``yields`` module, imported when the knob is set
_lines: Optional[ModuleType] = None  # the ``lines`` module, imported when lines are counted


class Said:
    """What applies, in pytest's header; why the ``yield`` knob did not, in its summary."""

    def __init__(self, header: str, yields: Optional[ModuleType]) -> None:
        self.header = header
        self.yields = yields

    def pytest_report_header(self, config: Any) -> Optional[str]:
        return self.header or None

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for note in self.yields.notes if self.yields is not None else ():
            terminalreporter.write_line(f"flakewarden: {note}")


class Knobs:
    """Each test's window, from its setup's start to its teardown's end (per repeat too).

    Plain hooks, first and last of their phase, not hook wrappers: a wrapper costs every
    test a generator and a result object, and the facts are meant to cost next to nothing.
    """

    def __init__(
        self, facts: bool, yields: Optional[ModuleType], lines: Optional[ModuleType] = None
    ) -> None:
        self.facts = facts
        self.yields = yields  # the ``yields`` module when its knob is on
        self.lines = lines  # the ``lines`` module when lines are counted
        self.open = False
        self.pending: Optional[dict[str, int]] = None  # the facts of the test that just ended
        self.pending_lines: Optional[dict[str, dict[str, int]]] = None

    @_first
    def pytest_runtest_setup(self, item: Any) -> None:
        self.open = True
        if self.facts:
            concurrency.window_opens()
        if self.lines is not None:
            self.lines.start()
        if self.yields is not None:
            self.yields.start()

    @_last
    def pytest_runtest_teardown(self, item: Any, nextitem: Any) -> None:
        self.close()

    def close(self) -> None:
        if not self.open:
            return
        self.open = False
        if self.yields is not None:
            self.yields.stop()
        if self.lines is not None:
            self.pending_lines = self.lines.stop()
        if self.facts:
            self.pending = concurrency.window_closes()

    @_first
    def pytest_runtest_logreport(self, report: Any) -> None:
        """The facts go on the teardown's report: they cross from an xdist worker with it."""
        if report.when != "teardown":
            return
        self.close()  # a teardown that raised stopped the hooks after it
        if self.pending is not None:
            setattr(report, CONCURRENCY_ATTRIBUTE, self.pending)
            self.pending = None
        if self.pending_lines is not None:
            setattr(report, LINES_ATTRIBUTE, self.pending_lines)
            self.pending_lines = None


def configure(config: Any, plugin_dir: str) -> None:
    """Set up what the environment asks for; register ``Knobs`` when anything is."""
    global _facts, _yields, _lines
    facts = os.environ.get(CONCURRENCY) == "1"
    yield_knob = None
    if os.environ.get(YIELD, "").strip():
        from . import yields  # compiled only for the knob

        yield_knob = _read(YIELD, yields.parse, "<seed>:<probability>")
    asyncio_knob = _read(ASYNCIO, event_loop.parse, "<seed> or <seed>:<jitter_ms>")
    count_lines = os.environ.get(LINES) == "1"
    if os.environ.get(STATE) == "1":
        from . import state  # compiled only when the state is taken

        state.configure(config, plugin_dir)
    if not facts and yield_knob is None and asyncio_knob is None and not count_lines:
        return
    if facts:
        concurrency.install()
        _facts = True
    if facts or asyncio_knob is not None:
        event_loop.install(facts, asyncio_knob)
    if asyncio_knob is not None:
        event_loop.limit(str(config.rootpath))
    said = []
    how = ""
    if yield_knob is not None:
        _yields = yields
        how = yields.configure(*yield_knob, str(config.rootpath), plugin_dir)
        said.append(f"yield seed {yield_knob[0]}, probability {yield_knob[1]:g} ({how})")
    if asyncio_knob is not None:
        said.append(f"asyncio seed {asyncio_knob[0]}, jitter {asyncio_knob[1]:g} ms")
    if count_lines:
        from . import lines  # compiled only when lines are counted

        lines.configure(str(config.rootpath), plugin_dir, how == "sys.settrace")
        _lines = lines
    if said:
        config.pluginmanager.register(Said("flakewarden: " + "; ".join(said), _yields))
    if facts or _yields is not None or _lines is not None:
        config.pluginmanager.register(Knobs(facts, _yields, _lines), "flakewarden-knobs")


def unconfigure() -> None:
    """Undo ``configure``: nothing of ours stays patched after the session."""
    global _facts, _yields, _lines
    if _lines is not None:
        _lines.unconfigure()
        _lines = None
    if _yields is not None:
        _yields.unconfigure()
        _yields = None
    event_loop.uninstall()
    if _facts:
        _facts = False
        concurrency.uninstall()
