"""The output fence: the tests' echoed output is data, never workflow commands.

On GitHub Actions ``flakewarden run`` stops the runner's command processing
(``::stop-commands::TOKEN``, a fresh random token) before the first attempt and
resumes it (``::TOKEN::``) after the last. The resume line must be a line of its
own: a child whose last write had no newline would otherwise glue its text in
front of it, the runner would never resume, and every annotation would be lost.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import IO, Optional, cast


class LineTrackingSink:
    """A binary stream that remembers whether what it wrote last ended a line."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.at_line_start = True

    def write(self, data: bytes) -> int:
        if data:
            self.at_line_start = data.endswith((b"\n", b"\r"))
        return self._stream.write(data)

    def flush(self) -> None:
        self._stream.flush()


@contextlib.contextmanager
def output_fence(
    echo: Optional[IO[bytes]], *, active: bool, out: Optional[IO[str]] = None
) -> Iterator[Optional[IO[bytes]]]:
    """Fence what is echoed to ``echo`` while the block runs; yields the sink to echo to.

    Inactive (off GitHub Actions, or nothing echoed) it yields ``echo`` unchanged.
    """
    text = sys.stdout if out is None else out
    if not active or echo is None:
        yield echo
        return
    import secrets  # here: off GitHub Actions a run never needs it (3 ms of start-up)

    token = secrets.token_hex(16)
    sink = LineTrackingSink(echo)
    text.write(f"::stop-commands::{token}\n")
    text.flush()
    try:
        yield cast(IO[bytes], sink)
    finally:
        text.flush()
        sink.flush()
        # The resume always starts a fresh line, whatever the tests wrote last.
        text.write(("" if sink.at_line_start else "\n") + f"::{token}::\n")
        text.flush()
