"""What a failure raised, and the retries ``flakewarden.retry`` made inside a test.

Both are attached to the phase's report (``RAISED_ATTRIBUTE``, ``RETRIES_ATTRIBUTE``)
while pytest makes it, so they reach the records from an xdist worker as from the
main process: xdist sends a report's plain attributes to the controller.

- A failure's exceptions: the one raised, then every exception in its ``__cause__`` and
  ``__context__`` chain (and an exception group's members), each with its class's
  fully qualified name, the names of its base classes and its message. The rerun
  policy matches those names and messages.
- In-test retries: ``flakewarden.retry`` finds this module as ``flakewarden_pytest_plugin``
  in ``sys.modules`` and calls ``record_retry`` for each retry, from any thread. Each
  phase's report takes the retries made since the previous one.
"""

from __future__ import annotations

import builtins
import threading
from typing import Any, Optional

MAX_RAISED = 20  # exceptions kept of one failure's chain
MAX_MESSAGE = 1_000  # characters kept of one exception's message
MAX_RETRIES = 200  # retries kept one by one per phase; past that, counted by function, type
_lock = threading.Lock()
_retries: list[dict[str, Any]] = []
_more: dict[tuple[str, str], dict[str, Any]] = {}  # past MAX_RETRIES: one entry with a count
_listening = False
_GROUP: Optional[type] = getattr(builtins, "BaseExceptionGroup", None)  # 3.11+


def listen(active: bool) -> None:
    """Record in-test retries from now on (the run flakewarden started), or stop."""
    global _listening
    with _lock:
        _listening = active
        _retries.clear()
        _more.clear()


def record_retry(event: Any) -> None:
    """Called by ``flakewarden.retry`` for each retry; never raises into the code under test."""
    if not _listening or not isinstance(event, dict):
        return
    kept: dict[str, Any] = {
        "function": _text(event.get("function"), 300),
        "exception": _text(event.get("exception"), 300),
        "message": _text(event.get("message"), MAX_MESSAGE),
        "attempt": _whole(event.get("attempt")),
        "attempts": _whole(event.get("attempts")),
        "delay": _seconds(event.get("delay")),
    }
    with _lock:
        if len(_retries) < MAX_RETRIES:
            _retries.append(kept)
            return
        key = (kept["function"], kept["exception"])
        counted = _more.setdefault(key, {**kept, "attempt": 0, "delay": 0.0, "times": 0})
        counted["times"] += 1
        counted["message"] = kept["message"]


def take_retries() -> list[dict[str, Any]]:
    """The retries recorded since the last call (one phase's); every one is counted."""
    with _lock:
        if not _retries:
            return []
        taken = [*_retries, *_more.values()]
        _retries.clear()
        _more.clear()
    return taken


def raised(value: Optional[BaseException]) -> list[dict[str, Any]]:
    """The exception and its chain, each once: type, base classes' names, message."""
    found: list[dict[str, Any]] = []
    seen: set[int] = set()
    pending = [value]
    while pending and len(found) < MAX_RAISED:
        exc = pending.pop(0)
        if exc is None or id(exc) in seen:
            continue
        seen.add(id(exc))
        kind = type(exc)
        found.append(
            {
                "type": qualified(kind),
                "bases": [qualified(base) for base in kind.__mro__[1:] if base is not object],
                "message": _message(exc),
            }
        )
        members = getattr(exc, "exceptions", None)  # an exception group's
        if isinstance(members, (list, tuple)) and _is_group(exc):
            pending.extend(m for m in members if isinstance(m, BaseException))
        pending.extend((exc.__cause__, exc.__context__))
    return found


def qualified(kind: type) -> str:
    module = getattr(kind, "__module__", None) or "builtins"
    return f"{module}.{getattr(kind, '__qualname__', kind.__name__)}"


def _is_group(exc: BaseException) -> bool:
    return _GROUP is not None and isinstance(exc, _GROUP)


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # an exception whose __str__ fails still names its type
        return f"<unprintable {type(exc).__name__}>"
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + "..."


def _text(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else ""
    return text if len(text) <= limit else text[:limit] + "..."


def _whole(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return 0.0
    return round(float(value), 6)
