"""asyncio's event loops: ready callbacks in a seeded order, timers jittered, iterations counted.

``FLAKEWARDEN_ASYNCIO=<seed>`` or ``<seed>:<jitter_ms>`` (``asyncio`` knob) changes every
event loop of asyncio's pure-Python ``BaseEventLoop`` (``asyncio.run``, ``asyncio.Runner``,
pytest-asyncio, anyio's asyncio backend) created after the plugin is configured:

- **Order.** ``_run_once`` runs, in each iteration, the callbacks that were ready when
  it took ``len(self._ready)`` (the same idiom on Python 3.9 to 3.14, free-threaded builds
  included), popping exactly that many. The loop's ``_ready`` is replaced by ``_Ready``, a
  deque whose ``len`` first puts those callbacks in a seeded random order, with one rule:
  callbacks scheduled by the same callback (or task step) keep the order they were
  scheduled in. So two tasks that each await a step are reordered, as I/O latency would
  reorder them on a loaded machine, while ``create_task(x); await asyncio.sleep(0)`` still
  starts ``x`` first and asyncio's own sequences (a transport's ``connection_made`` before
  its first ``data_received``) stay in order. Callbacks that became ready outside any
  callback (an I/O event, a timer that expired, ``call_soon_threadsafe``) are each a
  source of their own. The reordering is done at the left end of the deque only, so
  a callback another thread appends meanwhile is neither lost nor run early.
- **Timers.** ``call_at`` (hence ``call_later``, ``asyncio.sleep(d)`` for ``d > 0``,
  ``asyncio.timeout``) adds a seeded delay drawn uniformly from ``[0, jitter_ms)``
  (default ``DEFAULT_JITTER_MS``): never earlier than asked, so a test that measures a
  sleep's length still passes; two deadlines closer than the jitter may swap.

Await points (``FLAKEWARDEN_ASYNCIO_LINES``: ``<file>:<line>`` pairs, comma-separated,
files relative to the rootdir): only the tasks suspended at one of those lines (in any
frame of the chain of coroutines they await) are moved, each to a seeded place among
the other callbacks, which keep their order. Localisation confirms an asyncio race with
it: reordering tasks at a few awaits makes the test fail where reordering them at the
other awaits does not.

Each loop draws from two ``random.Random`` of its own, seeded with the seed and the loop's
number in creation order (``"<seed>:loop<n>:order"``, ``"<seed>:loop<n>:timers"``): the
test's own ``random`` draws are untouched. Loops of another class (uvloop's) are left alone.

With ``FLAKEWARDEN_CONCURRENCY=1`` the iterations of every ``BaseEventLoop`` are counted
(``iterations``), for the ``event_loop`` fact. asyncio is never imported for this: when it
is not loaded yet, a finder on ``sys.meta_path`` patches ``asyncio.base_events`` as it loads,
so a test that never imports asyncio pays nothing.
"""

from __future__ import annotations

import collections
import itertools
import os
import random
import sys
import threading
from typing import Any, Optional

from .on_import import OnImport

DEFAULT_JITTER_MS = 1.0
MODULE = "asyncio.base_events"
_PATCHED = ("__init__", "_run_once", "call_at")

_lock = threading.Lock()
_iterations = 0  # ``_run_once`` calls of every BaseEventLoop (approximate when free-threaded)
_count = False
_seed: Optional[int] = None
_jitter = 0.0  # seconds
_loops = 0  # loops given a ``_Ready``, numbering the next one's streams
_originals: Optional[tuple[Any, dict[str, Any]]] = None  # the class and what it had
_finder: Optional[OnImport] = None
LINES_VARIABLE = "FLAKEWARDEN_ASYNCIO_LINES"
_only: Any = None  # ``places.Only``: the await lines reordering is limited to, when set


def limit(rootdir: str) -> None:
    """Limit the reordering to the tasks suspended at ``FLAKEWARDEN_ASYNCIO_LINES``."""
    global _only
    text = os.environ.get(LINES_VARIABLE, "").strip()
    if text:
        from .places import Only  # compiled only when the reordering is limited

        _only = Only(rootdir, text)


def _suspended_at_limited(handle: Any) -> bool:
    """The handle resumes a task suspended at one of the limited lines, in any frame."""
    task = getattr(getattr(handle, "_callback", None), "__self__", None)
    get_coro = getattr(task, "get_coro", None)
    if _only is None or get_coro is None:
        return False
    awaited = get_coro()
    for _ in range(100):  # a chain of awaits, bounded
        if awaited is None:
            break
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
        if frame is not None and frame.f_lineno in _only.lines(frame.f_code.co_filename):
            return True
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    return False


def parse(text: str) -> Optional[tuple[int, float]]:
    """``<seed>`` or ``<seed>:<jitter_ms>`` as (seed, jitter in ms); None when malformed."""
    seed_text, _, jitter_text = text.strip().partition(":")
    try:
        seed = int(seed_text)
        jitter = float(jitter_text) if jitter_text.strip() else DEFAULT_JITTER_MS
    except ValueError:
        return None
    if not 0.0 <= jitter < 1000.0:  # NaN too
        return None
    return seed, jitter


def iterations() -> int:
    return _iterations


class _Ready(collections.deque):  # type: ignore[type-arg]
    """A loop's ready queue, reordered by source each time ``_run_once`` takes its length."""

    def __init__(self, iterable: Any = (), maxlen: Optional[int] = None) -> None:
        super().__init__(iterable, maxlen)
        self.order = random.Random()
        self.timers = random.Random()
        self.jitter = 0.0
        self.tokens = itertools.count()
        self.sources: dict[int, int] = {}  # id(handle) -> the source that scheduled it
        self.running: Optional[int] = None  # the source of what runs now; None: the loop

    def append(self, handle: Any) -> None:
        running = self.running
        self.sources[id(handle)] = next(self.tokens) if running is None else running
        collections.deque.append(self, handle)

    def popleft(self) -> Any:
        handle = collections.deque.popleft(self)
        self.sources.pop(id(handle), None)
        self.running = next(self.tokens)  # what this handle schedules is one source
        return handle

    def clear(self) -> None:
        collections.deque.clear(self)
        self.sources.clear()

    def __bool__(self) -> bool:  # ``if self._ready`` must not reorder
        return collections.deque.__len__(self) > 0

    def __len__(self) -> int:
        count = collections.deque.__len__(self)
        if count > 1:
            self._reorder(count)
        return count

    def _reorder(self, count: int) -> None:
        take = collections.deque.popleft
        batch = [take(self) for _ in range(count)]
        sources = self.sources
        queues: dict[int, list[Any]] = {}
        order: list[int] = []
        for handle in batch:
            source = sources.get(id(handle))
            if source is None:
                source = next(self.tokens)
                sources[id(handle)] = source
            queues.setdefault(source, []).append(handle)
            order.append(source)
        if len(queues) > 1:
            if _only is None:
                self.order.shuffle(order)
            else:
                order = self._limited(order, queues)
            heads = {source: iter(queue) for source, queue in queues.items()}
            batch = [next(heads[source]) for source in order]
        collections.deque.extendleft(self, reversed(batch))

    def _limited(self, order: list[int], queues: dict[int, list[Any]]) -> list[int]:
        """Only the sources that resume a task at a limited line move, each to a seeded place."""
        moving = {source for source, queue in queues.items() if _suspended_at_limited(queue[0])}
        if not moving:
            return order
        kept = [source for source in order if source not in moving]
        for source in (source for source in order if source in moving):
            kept.insert(self.order.randrange(len(kept) + 1), source)
        return kept


def _new_ready() -> _Ready:
    global _loops
    with _lock:
        number = _loops
        _loops += 1
    ready = _Ready()
    ready.order.seed(f"{_seed}:loop{number}:order")
    ready.timers.seed(f"{_seed}:loop{number}:timers")
    ready.jitter = _jitter
    return ready


def _patch(module: Any) -> None:
    global _originals
    base = getattr(module, "BaseEventLoop", None)
    if base is None or _originals is not None:
        return
    originals = {name: base.__dict__[name] for name in _PATCHED if name in base.__dict__}
    if len(originals) != len(_PATCHED):
        return  # not the loop this module knows
    _originals = (base, originals)
    init, run_once, schedule = (originals[name] for name in _PATCHED)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if _seed is not None and type(self.__dict__.get("_ready")) is collections.deque:
            self._ready = _new_ready()

    def _run_once(self: Any) -> Any:
        global _iterations
        _iterations += 1
        ready = self.__dict__.get("_ready")
        if type(ready) is _Ready:
            ready.running = None  # polled I/O and expired timers: each a source
        return run_once(self)

    def call_at(self: Any, when: Any, callback: Any, *args: Any, context: Any = None) -> Any:
        ready = self.__dict__.get("_ready")
        if type(ready) is _Ready and ready.jitter > 0.0:
            when = when + ready.timers.random() * ready.jitter
        return schedule(self, when, callback, *args, context=context)

    for name, function in (("__init__", __init__), ("_run_once", _run_once), ("call_at", call_at)):
        function.__qualname__ = f"{base.__qualname__}.{name}"
        function.__doc__ = getattr(originals[name], "__doc__", None)
        setattr(base, name, function)


def _remove_finder() -> None:
    global _finder
    finder, _finder = _finder, None
    if finder is not None:
        finder.remove()


def install(count: bool, knob: Optional[tuple[int, float]]) -> None:
    """Count iterations (``count``) and/or apply the knob (seed, jitter in ms) from now on."""
    global _count, _seed, _jitter, _finder
    _count = count
    if knob is not None:
        _seed, _jitter = knob[0], knob[1] / 1000.0
    if not count and knob is None:
        return
    module = sys.modules.get(MODULE)
    if module is not None:
        _patch(module)
    elif _finder is None:
        _finder = OnImport(MODULE, _patch)
        _finder.install()


def uninstall() -> None:
    """Give ``BaseEventLoop`` back what it had; loops made meanwhile keep their ``_Ready``."""
    global _originals, _seed, _count, _only
    _remove_finder()
    _only = None
    if _originals is not None:
        base, originals = _originals
        for name, function in originals.items():
            setattr(base, name, function)
        _originals = None
    _seed = None
    _count = False
