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
#: Values (keys included) in one document, and objects and arrays among them: what bounds
#: the memory of the parsed value whatever its shape (an empty object costs 64 bytes for 3 of
#: text). A report of 10,000 tests holds about 400,000 values and 40,000 containers.
MAX_VALUES = 4_000_000
MAX_CONTAINERS = 1_000_000
#: Characters in one string, a key included (a failure's text is clipped well below).
MAX_STRING = 16 * 1024 * 1024
#: SQLite's INTEGER: a signed 64-bit number.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


class Refused(ReportError, ValueError):
    """Outside JSON refused: the message names the file, the field and why."""


def _constant(name: str) -> float:
    raise Refused(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise Refused(f"{text[:40]} is out of a float's range")
    return value


def decode(data: Union[bytes, bytearray], where: str) -> str:
    """UTF-8 ``data`` as text, or ``Refused``. Decode before ``parse_json`` so the bytes are
    freed before the parse: the bytes and the text are never held with the parsed value."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(f"cannot read {where}: not UTF-8 (byte {exc.start})") from None


def parse_json(data: Union[str, bytes, bytearray], where: str) -> Any:
    """``data`` (UTF-8 bytes or text) as a JSON value within the limits, or ``Refused``."""
    text = data if isinstance(data, str) else decode(data, where)
    _check_counts(text, where)
    try:
        value = _loads(text, bounded=True)
    except _OutOfRange:
        raise Refused(f"{where}: {_named_integer(text)}: refused") from None
    except Refused as exc:
        raise Refused(f"cannot read {where}: {exc}") from None
    except RecursionError:
        raise Refused(f"cannot read {where}: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, an integer of over 4,300 digits
        raise Refused(f"cannot read {where}: {str(exc)[:200]}") from None
    strings = len(text) > MAX_STRING
    shallow = _brackets_shallow(text)
    del text
    if not (shallow or _shallow(value)) or (strings and _first_problem(value) is not None):
        raise Refused(f"{where}: {_first_problem(value)}: refused")
    return value


# A JSON string, escapes included: what a count of the structure leaves out.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')


def _check_counts(text: str, where: str) -> None:
    """``Refused`` when ``text`` holds more containers or values than the limits allow.

    Counted before parsing, in C: every value but a container's first follows a comma, a
    key precedes a colon, and every container opens with a bracket. Those inside strings
    count too, so the first count only errs toward refusing; text over a limit by it is
    counted again with its strings left out (a test id of a million brackets is one string,
    and a record of it is kept).
    """
    for exact in (False, True):
        if exact:
            text = _STRING.sub('""', text)
        containers = text.count("{") + text.count("[")
        values = containers + text.count(",") + text.count(":") + 1
        if containers <= MAX_CONTAINERS and values <= MAX_VALUES:
            return
    if containers > MAX_CONTAINERS:
        raise Refused(f"{where} holds more than {MAX_CONTAINERS:,} objects and arrays: refused")
    raise Refused(f"{where} holds more than {MAX_VALUES:,} values: refused")


def _named_integer(text: str) -> str:
    """Which integer is past 64 bits, by its path: the text parsed again without the bound."""
    try:
        problem = _first_problem(_loads(text, bounded=False))
    except (RecursionError, ValueError):  # refused further on anyway
        problem = None
    return problem or "an integer is out of a 64-bit integer's range"


class _OutOfRange(Exception):
    """An integer past 64 bits, met while parsing."""


def _int(text: str) -> int:
    value = int(text)
    if not INT_MIN <= value <= INT_MAX:
        raise _OutOfRange
    return value


# Every digit as "9" and "E" as "e": text where neither 19 digits in a row (a 64-bit
# integer has at most 19, and 18 always fit) nor a 3-digit exponent is found holds no
# number out of range, and is parsed by ``json`` alone, in C. Text with one (a string may
# hold it too) has every number checked as it is parsed. A regular expression took 20
# times as long as this scan.
_DIGITS = str.maketrans("0123456789E", "9999999999e")
_RISKY = ("9" * 19, "e999", "e+999", "e-999")


def _risky(text: str) -> bool:
    shape = text.translate(_DIGITS)
    return any(shape.find(risky) >= 0 for risky in _RISKY)


def _loads(text: str, *, bounded: bool) -> Any:
    if bounded and not _risky(text):
        return json.loads(text, parse_constant=_constant)
    if bounded:
        return json.loads(text, parse_constant=_constant, parse_float=_finite, parse_int=_int)
    return json.loads(text, parse_constant=_constant, parse_float=_finite)


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _brackets_shallow(text: str) -> bool:
    """Whether the brackets of ``text`` nest at most ``MAX_DEPTH`` deep, found in C: the
    brackets alone, their innermost pairs removed once per level. False when that cannot
    tell (a bracket inside a string): ``_shallow`` then walks the value."""
    shape = text.encode("utf-8", "surrogatepass").translate(None, _NOT_BRACKETS)
    for _ in range(MAX_DEPTH + 1):  # the document is one level more than its brackets
        if not shape:
            return True
        # One level a round: "{[]}" loses "[]" now and "{}" in the next round.
        inner = shape.replace(b"[]", b"\0").replace(b"{}", b"\0").replace(b"\0", b"")
        if len(inner) == len(shape):
            return False
        shape = inner
    return False


def _shallow(value: Any) -> bool:
    """Whether ``value`` nests at most ``MAX_DEPTH`` deep: only containers are walked, and
    one whose items hold no container is passed over in C."""
    kinds = {dict, list}
    stack: list[tuple[Any, int]] = [([value], 0)]  # the document: one item of a list
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return False
        children = item.values() if type(item) is dict else item
        if kinds.isdisjoint(map(type, children)):
            continue
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
    return True


def _first_problem(value: Any) -> Optional[str]:
    """The first value out of the limits, by its path (None: none is): on the way to a
    refusal, or when the text is long enough to hold a string past the limit."""
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
    return None


def read_confined(path: Path, root: Optional[Path] = None, max_bytes: int = MAX_BYTES) -> bytearray:
    """The bytes of ``path``, a regular file inside ``root`` (its own directory by default).

    ``Refused`` when a link leads out of ``root``, when it is not a regular file (a FIFO,
    a device, a socket, a directory: refused at once, never waited on), or when it holds
    more than ``max_bytes``; ``FileNotFoundError`` when there is none.
    """
    handle = open_confined(path, root)
    try:
        data = read_bounded(handle, path, max_bytes)
    finally:
        os.close(handle)
    if len(data) > max_bytes:
        raise Refused(f"{path} is more than {max_bytes:,} bytes: refused")
    return data


def read_bounded(handle: int, path: Path, max_bytes: int) -> bytearray:
    """What is left to read of the open ``handle`` (``path``), up to ``max_bytes`` and one
    byte more, which says there was more: read by chunks, so a growing file is bounded."""
    data = bytearray()
    try:
        while len(data) <= max_bytes:
            chunk = os.read(handle, min(1 << 20, max_bytes + 1 - len(data)))
            if not chunk:
                break
            data += chunk
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror}") from None
    return data


def open_confined(path: Path, root: Optional[Path] = None) -> int:
    """A read-only handle on ``path``, a regular file inside ``root`` (see ``read_confined``),
    for a reader that reads a file as it grows; the caller closes it."""
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
    except OSError as exc:
        os.close(handle)
        raise Refused(f"cannot read {path}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        os.close(handle)
        raise Refused(f"{path} is not a regular file ({_kind(mode)}): refused")
    return handle


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


def read_tail(path: Path, max_bytes: int) -> str:
    """The last ``max_bytes`` of ``path`` (a log the tests wrote to) as text, read confined
    to its directory; "" when it is missing or refused, so a log never stops a run."""
    try:
        handle = open_confined(path)
    except (FileNotFoundError, Refused):
        return ""
    try:
        os.lseek(handle, max(0, os.fstat(handle).st_size - max_bytes), os.SEEK_SET)
        data = read_bounded(handle, path, max_bytes)
    except (OSError, Refused):
        return ""
    finally:
        os.close(handle)
    return bytes(data[:max_bytes]).decode("utf-8", errors="replace")


def read_text(path: Path, root: Optional[Path] = None, max_bytes: int = MAX_BYTES) -> str:
    """``path``'s UTF-8 text, read confined to ``root`` (see ``read_confined``)."""
    return decode(read_confined(path, root, max_bytes), str(path))


def read_json(path: Path, root: Optional[Path] = None, max_bytes: int = MAX_BYTES) -> Any:
    """``path``'s JSON, read confined to ``root`` (see ``read_confined``) and parsed totally."""
    return parse_json(read_text(path, root, max_bytes), str(path))
