"""JSON from outside, read totally: the one reader of every file a pull request's code wrote.

Reports, shard directories, verdicts and a test process's records come from code this
tool does not control, a fork's included. Python's ``json`` accepts ``NaN`` and
``Infinity``, nesting until ``RecursionError``, integers no SQLite column holds and strings
of any length; each of those became an internal error far from the file. Here every one
is refused at the door with one line naming the file and the field, as ``Refused``, which
is both a ``ReportError`` (the CLI's one line) and a ``ValueError`` (what readers that
skip a bad line already catch). A file is read only when it is a regular file inside the
directory it was given in, without following a link out of it or waiting on a FIFO.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Optional, Union

from flakewarden.errors import ReportError

#: The most bytes one file (or one zip member, inflated) is read to: a report of 10,000
#: tests is a few MB. Reading a file of this size peaks near 3x it (benchmarks/README.md).
MAX_BYTES = 64 * 1024 * 1024
#: Objects and arrays inside one another: a report nests 6 deep, a verdict 8.
MAX_DEPTH = 64
#: Characters in one string, a key included (a failure's text is clipped well below).
MAX_STRING = 16 * 1024 * 1024
#: SQLite's INTEGER: a signed 64-bit number.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1

_LONG_NUMBER = re.compile(r"\d{19}")  # no shorter run of digits can leave 64 bits


class Refused(ReportError, ValueError):
    """Outside JSON refused: the message names the file, the field and why."""


def _constant(name: str) -> float:
    raise Refused(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise Refused(f"{text[:40]} is out of a float's range")
    return value


def parse_json(data: Union[str, bytes, bytearray], where: str) -> Any:
    """``data`` (UTF-8 bytes or text) as a JSON value within the limits, or ``Refused``."""
    if isinstance(data, str):
        text = data
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Refused(f"cannot read {where}: not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_finite)
    except Refused as exc:
        raise Refused(f"cannot read {where}: {exc}") from None
    except RecursionError:
        raise Refused(f"cannot read {where}: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, an integer of over 4,300 digits
        raise Refused(f"cannot read {where}: {str(exc)[:200]}") from None
    ints, strings = bool(_LONG_NUMBER.search(text)), len(text) > MAX_STRING
    del text
    if not _within(value, ints=ints, strings=strings):
        raise Refused(f"{where}: {_first_problem(value)}: refused")
    return value


def _within(value: Any, *, ints: bool, strings: bool) -> bool:
    """Whether ``value`` is within the limits: every container walked, numbers and strings
    checked only when the text could hold one out of range (the common case checks none)."""
    stack: list[tuple[Any, int]] = [([value], 0)]  # the document: one item of a list
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return False
        if type(item) is dict:
            if strings and any(len(key) > MAX_STRING for key in item):
                return False
            children = item.values()
        else:
            children = item
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
            elif (ints and kind is int and not INT_MIN <= child <= INT_MAX) or (
                strings and kind is str and len(child) > MAX_STRING
            ):
                return False
    return True


def _first_problem(value: Any) -> str:
    """The first value out of the limits, by its path: only on the way to a refusal."""
    if type(value) not in (dict, list):
        value = [value]  # a scalar document: its path is [0]
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        item, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"{path or 'the document'} is nested deeper than {MAX_DEPTH} levels"
        pairs = item.items() if type(item) is dict else enumerate(item)
        for key, child in pairs:
            if isinstance(key, str) and len(key) > MAX_STRING:
                return f"{path or 'the document'} holds a key of over {MAX_STRING:,} characters"
            where = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key[:60]}".lstrip(".")
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, where, depth + 1))
            elif kind is int and not INT_MIN <= child <= INT_MAX:
                return f"{where} is {str(child)[:40]}, out of a 64-bit integer's range"
            elif kind is str and len(child) > MAX_STRING:
                return f"{where} is a string of over {MAX_STRING:,} characters"
    return "out of the limits"  # pragma: no cover - only called on a value _within refused


def read_confined(path: Path, root: Optional[Path] = None, max_bytes: int = MAX_BYTES) -> bytearray:
    """The bytes of ``path``, a regular file inside ``root`` (its own directory by default).

    ``Refused`` when a link leads out of ``root``, when it is not a regular file (a FIFO,
    a device, a socket, a directory: refused at once, never waited on), or when it holds
    more than ``max_bytes``; ``FileNotFoundError`` when there is none.
    """
    base = os.path.realpath(root if root is not None else path.parent)
    real = os.path.realpath(path)
    if os.path.commonpath([base, real]) != base:
        raise Refused(f"{path} leads out of {root or path.parent} (a link): refused")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        handle = os.open(real, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:  # a socket (ENXIO), a link swapped in since (ELOOP), no access
        raise Refused(f"cannot read {path}: {exc.strerror}") from None
    try:
        mode = os.fstat(handle).st_mode
        if not stat.S_ISREG(mode):
            raise Refused(f"{path} is not a regular file ({_kind(mode)}): refused")
        data = bytearray()
        while len(data) <= max_bytes:
            chunk = os.read(handle, min(1 << 20, max_bytes + 1 - len(data)))
            if not chunk:
                break
            data += chunk
        if len(data) > max_bytes:
            raise Refused(f"{path} is more than {max_bytes:,} bytes: refused")
        return data
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror}") from None
    finally:
        os.close(handle)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def read_json(path: Path, root: Optional[Path] = None, max_bytes: int = MAX_BYTES) -> Any:
    """``path``'s JSON, read confined to ``root`` (see ``read_confined``) and parsed totally."""
    return parse_json(read_confined(path, root, max_bytes), str(path))
