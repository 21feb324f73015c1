"""Which threads and event loops a test ran beside: the stress knobs' applicability facts.

``FLAKEWARDEN_CONCURRENCY=1`` asks for them. Each test's phases (setup, call and teardown,
per in-process repeat) are a window; when it closes, ``facts`` says:

- ``threads``: how many Python threads ran beside the test's own thread at some point in
  the window: those alive when it opened (a server an earlier test's session fixture
  started), those started in it (``threading.Thread.start``, wrapped while this module is
  installed) and those alive when it closed (a thread started with ``_thread`` that
  called into ``threading``). Not counted: the test's own thread, and the threads that
  were running before the first test's setup started, which pytest's plugins start as
  they are configured (pytest-rerunfailures' status server, present wherever pytest-xdist
  is installed) or the collected modules at import; they are the same for every test.
- ``event_loop``: how many iterations asyncio's pure-Python event loops ran in the
  window, in any thread (``BaseEventLoop._run_once`` calls, counted by ``event_loop``).
  A uvloop loop is not counted: the ``asyncio`` knob cannot act on it.

The wrapped ``Thread.start`` also numbers threads in the order they are started; the
``yield`` knob seeds each thread's draws with that number, so that one thread's draws do
not depend on when another thread happened to run first. The thread that installs this
module is number 0, the threads already running then follow in ``threading.enumerate``
order, and every thread started later takes the next number as it starts.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Optional

from . import event_loop

_lock = threading.Lock()
_numbers: weakref.WeakKeyDictionary[threading.Thread, int] = weakref.WeakKeyDictionary()
_next = 0
_original_start: Optional[Callable[..., Any]] = None
_first_start = threading.Thread.start  # for a caller that kept the wrapper past ``uninstall``
_users = 0  # what asked for the wrapped ``Thread.start``: the facts, the yield knob
_window: Optional[list[threading.Thread]] = None  # threads started in the open window
_before: list[threading.Thread] = []
_ambient: Optional[list[threading.Thread]] = None  # running before the first test's setup
_loops_before = 0


def _number(thread: threading.Thread) -> int:
    global _next
    with _lock:
        found = _numbers.get(thread)
        if found is None:
            found = _numbers[thread] = _next
            _next += 1
        return found


def _start(self: threading.Thread, *args: Any, **kwargs: Any) -> Any:
    """``Thread.start``, which first numbers the thread and notes it in the open window."""
    _number(self)
    window = _window
    if window is not None:
        window.append(self)
    return (_original_start or _first_start)(self, *args, **kwargs)


def install() -> None:
    """Wrap ``Thread.start`` (once, however many users ask) and number the running threads."""
    global _original_start, _users
    with _lock:
        _users += 1
        if _original_start is not None:
            return
        _original_start = threading.Thread.start
        threading.Thread.start = _start  # type: ignore[method-assign]
    _number(threading.current_thread())
    for thread in threading.enumerate():
        _number(thread)


def uninstall() -> None:
    """Undo ``install`` once its last user is done."""
    global _original_start, _users, _window
    with _lock:
        _users = max(0, _users - 1)
        if _users or _original_start is None:
            return
        if threading.Thread.start is _start:
            threading.Thread.start = _original_start  # type: ignore[method-assign]
        _original_start = None
        _window = None


def number(thread: threading.Thread) -> int:
    """The thread's number in start order; one never seen takes the next number now."""
    return _number(thread)


def window_opens() -> None:
    """A test's setup starts: note what already runs beside it."""
    global _window, _before, _loops_before, _ambient
    current = threading.current_thread()
    _before = [t for t in threading.enumerate() if t is not current]
    if _ambient is None:
        _ambient = _before
    _window = []
    _loops_before = event_loop.iterations()


def window_closes() -> Optional[dict[str, int]]:
    """The test's teardown is over: the facts of its window, or None when none was open."""
    global _window, _before
    started = _window
    if started is None:
        return None
    _window = None
    current = threading.current_thread()
    beside = {id(t): t for t in _before}
    beside.update((id(t), t) for t in started)
    beside.update((id(t), t) for t in threading.enumerate())
    beside.pop(id(current), None)
    for thread in _ambient or ():
        beside.pop(id(thread), None)
    _before = []
    return {"threads": len(beside), "event_loop": event_loop.iterations() - _loops_before}
