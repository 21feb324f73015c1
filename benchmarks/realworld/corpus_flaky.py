"""A pytest plugin the corpus loads with ``-p corpus_flaky``: one test fails once.

``CORPUS_FLAKY_TEST`` names the node id; ``CORPUS_FLAKY_MARKER`` is a file that does
not exist yet. The first call of that test, in whichever process gets there first,
creates the marker and fails; every later call (a rerun in a fresh process) passes.
The project's own code is never edited. Standard library only: it is copied next to
nothing else and put on the tested interpreter's ``PYTHONPATH``.
"""

from __future__ import annotations

import os
from typing import Any


def pytest_runtest_call(item: Any) -> None:
    if item.nodeid != os.environ.get("CORPUS_FLAKY_TEST"):
        return
    marker = os.environ["CORPUS_FLAKY_MARKER"]
    try:
        # O_EXCL: exactly one call anywhere (xdist workers included) sees the file new.
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    raise AssertionError(f"corpus: injected failure of {item.nodeid} (pid {os.getpid()})")
