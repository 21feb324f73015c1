"""A failure's signature: what one root cause looks like, whichever test it hits.

The exception's type, its message with the parts that change from run to run masked
(numbers, hex ids, paths, temporary names, UUIDs), and the innermost frame of the
project's own code. Chromium's LUCI Analysis clusters failures by a masked reason the
same way; two tests that fail with one signature most likely fail for one cause, so
the dashboard shows them as one group.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

#: How much of a masked message a signature keeps: enough to tell causes apart.
MESSAGE_LIMIT = 200

_MASKS = (
    (
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        "<uuid>",
    ),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    # A path: a run of path characters with a separator, absolute or under a drive letter.
    (
        re.compile(r"(?:\b[A-Za-z]:)?(?:[\\/][\w.@%+~-]+){2,}[\\/]?|\b[A-Za-z]:\\[\w.\\ -]+"),
        "<path>",
    ),
    # tempfile's and pytest's temporary names: tmpab12_x9z, pytest-of-root, pytest-123.
    (re.compile(r"\btmp[\w-]{4,}|\bpytest-(?:of-[\w.-]+|\d+)"), "<tmp>"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<hex>"),
    (re.compile(r"(?<![A-Za-z_])\d+(?:\.\d+)*"), "N"),
)
_SPACES = re.compile(r"\s+")
# pytest's locations: ``path:12: in func`` (long and short), ``path:12: ExcType`` (the last).
_PYTEST_LOCATION = re.compile(r"^(?P<path>[^\s:][^:]*?):(?P<line>\d+): ?(?P<rest>.*)$")
# Python's own (``--tb=native``): ``  File "path", line 12, in func``.
_NATIVE_LOCATION = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(?P<func>\w+)\s*\(")
_ERROR_LINE = re.compile(r"^E\s+(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$")


class Signature(NamedTuple):
    """One failure's signature; ``key`` is what groups compare."""

    exception: str  # the short name: ConnectionRefusedError
    message: str  # masked, one line
    frame: str  # path::function of the innermost project frame, or "" when none was seen

    @property
    def key(self) -> str:
        where = f" @ {self.frame}" if self.frame else ""
        return f"{self.exception}: {self.message}{where}"

    def to_json(self) -> dict[str, Any]:
        return {"exception": self.exception, "message": self.message, "frame": self.frame}


def mask(message: str) -> str:
    """``message`` on one line, with what changes from run to run replaced by placeholders."""
    text = _SPACES.sub(" ", message).strip()
    for pattern, placeholder in _MASKS:
        text = pattern.sub(placeholder, text)
    return text[:MESSAGE_LIMIT]


def _project_path(path: str) -> bool:
    """A path of the project's code: relative (pytest shows those inside its rootdir).

    pytest shows a file just outside its rootdir as ``../lib/x.py``: not the project's.
    """
    lowered = path.replace("\\", "/")
    if lowered.startswith(("/", "<", "../")) or (len(path) > 1 and path[1] == ":"):
        return False
    return "site-packages/" not in lowered and "dist-packages/" not in lowered


def innermost_frame(longrepr: str) -> str:
    """``path::function`` of the last frame of the project's code in a traceback, or ""."""
    found = ""
    entry_def = ""
    for line in longrepr.splitlines():
        native = _NATIVE_LOCATION.match(line)
        if native:
            if _project_path(native["path"]):
                found = f"{native['path']}::{native['func']}"
            continue
        defined = _DEF.match(line)
        if defined:
            entry_def = defined["func"]
            continue
        location = _PYTEST_LOCATION.match(line)
        if location and not line.startswith((" ", "E ")):
            path, rest = location["path"], location["rest"].strip()
            if _project_path(path) and path.endswith(".py"):
                func = rest[3:].strip() if rest.startswith("in ") else entry_def
                found = f"{path}::{func}" if func else f"{path}:{location['line']}"
            entry_def = ""
    return found


def project_frames(longrepr: str) -> list[tuple[str, int]]:
    """``(path, line)`` of each frame of the project's code in a traceback, innermost last.

    The paths are as pytest shows them (relative to its rootdir); localisation reads the
    same frames a signature's innermost one comes from.
    """
    found: list[tuple[str, int]] = []
    for line in longrepr.splitlines():
        native = _NATIVE_LOCATION.match(line)
        if native:
            if _project_path(native["path"]):
                found.append((native["path"].replace("\\", "/"), int(native["line"])))
            continue
        location = _PYTEST_LOCATION.match(line)
        if location and not line.startswith((" ", "E ")):
            path = location["path"]
            if _project_path(path) and path.endswith(".py"):
                found.append((path.replace("\\", "/"), int(location["line"])))
    return found


def _from_text(longrepr: str, message: str) -> tuple[str, str]:
    """The exception's name and message read from a traceback's ``E`` lines."""
    for line in longrepr.splitlines():
        matched = _ERROR_LINE.match(line)
        if matched and (matched["type"][:1].isupper() or "." in matched["type"]):
            return matched["type"].rpartition(".")[2], matched["message"] or ""
    head, sep, rest = message.partition(": ")
    if sep and re.fullmatch(r"[A-Za-z_][\w.]*", head):
        return head.rpartition(".")[2], rest
    return "", message


def signature(longrepr: str, message: str, raised: Sequence[Any] = ()) -> Signature:
    """The signature of one failure: its traceback, first line and what it raised.

    ``raised`` holds the plugin's ``Raised`` records when it saw the exception: their
    type and message are taken over what the traceback's text says.
    """
    if raised:
        first = raised[0]
        exception = str(first.type).rpartition(".")[2]
        text = str(first.message).split("\n", 1)[0]
    else:
        exception, text = _from_text(longrepr, message)
    return Signature(exception or "failure", mask(text), innermost_frame(longrepr))
