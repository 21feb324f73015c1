"""Where flakewarden's own time goes: named phases, recorded cheaply, written on request.

Benchmarks split a run's wall time into the test processes and flakewarden around them
from this record instead of guessing. Recording is a clock read and a list append per
phase (a few dozen per run); the file is written only when ``FLAKEWARDEN_TIMINGS`` names
one, at the very end, so it can hold the time spent writing the reports too. Stamps are
``time.time()`` so that another process (a benchmark, the plugin) can line them up with
its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from typing import Any, Optional

ENV = "FLAKEWARDEN_TIMINGS"

_phases: list[dict[str, Any]] = []
_marks: dict[str, float] = {}


def mark(name: str, when: Optional[float] = None) -> None:
    """A moment worth naming (``main``: flakewarden's code begins); the first one wins."""
    _marks.setdefault(name, time.time() if when is None else when)


@contextlib.contextmanager
def phase(name: str, **details: Any) -> Iterator[dict[str, Any]]:
    """Time the block as ``name``; the yielded dict takes details learned inside it."""
    entry: dict[str, Any] = {"name": name, "start": time.time(), **details}
    try:
        yield entry
    finally:
        entry["end"] = time.time()
        _phases.append(entry)


def record() -> dict[str, Any]:
    """What was recorded so far, the phases in the order they ended."""
    return {
        "pid": os.getpid(),
        "marks": dict(_marks),
        "phases": list(_phases),
        # CPU seconds of this process alone (every thread, no child): steadier than the
        # wall clock on a busy machine, and it counts work overlapped with the tests.
        "cpu": time.process_time(),
    }


def reset() -> None:
    _phases.clear()
    _marks.clear()


def write_if_asked() -> None:
    """Write the record to ``$FLAKEWARDEN_TIMINGS``; a path that cannot be written is ignored."""
    path = os.environ.get(ENV)
    if not path:
        return
    mark("end")
    with contextlib.suppress(OSError), open(path, "w", encoding="utf-8") as stream:
        json.dump(record(), stream)
