"""Reading ``git diff -U0`` output: per file its paths, its status and its hunks.

Pure: text in, values out. The paths are taken from the lines that cannot be ambiguous
(``rename from``/``rename to``, ``---``/``+++``), and from the ``diff --git`` header only
when the old and new paths are the same (a binary file, a mode change), where its two
halves can be told apart even when they hold spaces. Quoted paths (C-style, as git writes
a name with a quote, a backslash or a control character) are unquoted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Optional

Status = Literal["added", "deleted", "renamed", "modified"]

_HUNK = re.compile(r"^@@@* -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


class PatchError(ValueError):
    """git's output was not the patch this reader expects."""


@dataclass(frozen=True)
class Hunk:
    """One hunk: the old side's lines ``old_start`` .. (``old_count`` of them), the new side's.

    With zero context a side with no lines (``count`` 0) has ``start`` = the line after which
    the other side's lines were taken out or put in (0: the top of the file).
    """

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    # The new-side line numbers of added lines (a hunk with context has unchanged ones too).
    added: tuple[int, ...]
    # The old-side line numbers of removed lines.
    removed: tuple[int, ...]


@dataclass(frozen=True)
class FilePatch:
    path: str  # the path in the new tree; for a deleted file, the path it had
    old_path: Optional[str]  # None for an added file
    status: Status
    binary: bool
    hunks: tuple[Hunk, ...]
    similarity: Optional[int] = None  # percent, for a rename


def unquote(text: str) -> str:
    """A path as git wrote it: as is, or C-style quoted (``"a\\tb"``, octal bytes)."""
    if not (len(text) >= 2 and text[0] == '"' and text[-1] == '"'):
        return text
    raw = bytearray()
    body = text[1:-1]
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            raw.extend(char.encode("utf-8", errors="surrogateescape"))
            i += 1
            continue
        following = body[i + 1 : i + 2]
        if following in _ESCAPES:
            raw.append(_ESCAPES[following])
            i += 2
        elif re.fullmatch(r"[0-7]{3}", body[i + 1 : i + 4]):
            raw.append(int(body[i + 1 : i + 4], 8))
            i += 4
        else:
            raise PatchError(f"cannot unquote path {text!r}")
    return raw.decode("utf-8", errors="surrogateescape")


def _quoted_prefix(text: str) -> tuple[str, str]:
    """The C-quoted string at the start of ``text`` and what follows it."""
    i = 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return text[: i + 1], text[i + 1 :]
        i += 1
    raise PatchError(f"unterminated quoted path in {text!r}")


def _strip_prefix(path: str, prefix: str) -> str:
    if not path.startswith(prefix):
        raise PatchError(f"path {path!r} lacks the {prefix!r} prefix")
    return path[len(prefix) :]


def header_paths(rest: str) -> Optional[tuple[str, str]]:
    """The old and new paths of ``diff --git REST``; None when they cannot be told apart."""
    if rest.startswith('"'):
        first, after = _quoted_prefix(rest)
        old = _strip_prefix(unquote(first), "a/")
        second = after[1:]
        return old, _strip_prefix(unquote(second), "b/")
    if rest.endswith('"'):
        start = rest.rfind(' "b/')
        if start >= 0:
            return _strip_prefix(rest[:start], "a/"), _strip_prefix(
                unquote(rest[start + 1 :]), "b/"
            )
    # Unquoted both: "a/P b/P" when the paths are equal, the only case read from here.
    if (len(rest) - 5) % 2 == 0:
        half = (len(rest) - 5) // 2
        old, new = rest[2 : 2 + half], rest[half + 5 :]
        if rest.startswith("a/") and rest[2 + half : half + 5] == " b/" and old == new:
            return old, new
    return None


def _side_path(line: str, prefix: str) -> Optional[str]:
    """The path of a ``--- a/P`` or ``+++ b/P`` line; None for /dev/null."""
    name = line[4:]
    if name.endswith("\t"):  # git ends a name holding a space with a tab
        name = name[:-1]
    if name == "/dev/null":
        return None
    return _strip_prefix(unquote(name), prefix)


def _read_hunk(lines: list[str], i: int, header: re.Match[str]) -> tuple[Hunk, int]:
    old_start, new_start = int(header[1]), int(header[3])
    old_count = 1 if header[2] is None else int(header[2])
    new_count = 1 if header[4] is None else int(header[4])
    old_left, new_left = old_count, new_count
    old_line, new_line = old_start, new_start
    added: list[int] = []
    removed: list[int] = []
    while (old_left or new_left) and i < len(lines):
        line = lines[i]
        i += 1
        tag = line[:1]
        if tag == "+" and new_left:
            added.append(new_line)
            new_line += 1
            new_left -= 1
        elif tag == "-" and old_left:
            removed.append(old_line)
            old_line += 1
            old_left -= 1
        elif tag == " " and old_left and new_left:
            old_line += 1
            new_line += 1
            old_left -= 1
            new_left -= 1
        elif tag == "\\":  # "\ No newline at end of file"
            continue
        else:
            raise PatchError(f"unexpected line in a hunk: {line[:80]!r}")
    if old_left or new_left:
        raise PatchError("a hunk ended early")
    while i < len(lines) and lines[i].startswith("\\"):
        i += 1
    hunk = Hunk(old_start, old_count, new_start, new_count, tuple(added), tuple(removed))
    return hunk, i


@dataclass
class _Block:
    header: Optional[tuple[str, str]]
    old: Optional[str] = None
    new: Optional[str] = None
    rename_from: Optional[str] = None
    rename_to: Optional[str] = None
    added: bool = False
    deleted: bool = False
    binary: bool = False
    similarity: Optional[int] = None


def _finish(block: _Block, hunks: list[Hunk]) -> FilePatch:
    if block.rename_from is not None and block.rename_to is not None:
        old: Optional[str] = block.rename_from
        new: Optional[str] = block.rename_to
    else:
        old, new = block.old, block.new
        if block.header is not None:
            old = old if old is not None or block.added else block.header[0]
            new = new if new is not None or block.deleted else block.header[1]
    if block.added:
        status: Status = "added"
        old = None
    elif block.deleted:
        status = "deleted"
        new = old
    elif block.rename_from is not None:
        status = "renamed"
    else:
        status = "modified"
    if new is None:
        raise PatchError("a file's path could not be read from git's header")
    return FilePatch(new, old, status, block.binary, tuple(hunks), block.similarity)


def parse_patch(text: str) -> list[FilePatch]:
    """Every file of ``git diff`` output, in git's order."""
    lines = text.split("\n")
    files: list[FilePatch] = []
    block: Optional[_Block] = None
    hunks: list[Hunk] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("diff --git "):
            if block is not None:
                files.append(_finish(block, hunks))
            block, hunks = _Block(header_paths(line[len("diff --git ") :])), []
            continue
        if block is None:
            if line:
                raise PatchError(f"unexpected line before the first file: {line[:80]!r}")
            continue
        hunk_header = _HUNK.match(line)
        if hunk_header:
            hunk, i = _read_hunk(lines, i, hunk_header)
            hunks.append(hunk)
        elif line.startswith("--- "):
            block.old = _side_path(line, "a/")
        elif line.startswith("+++ "):
            block.new = _side_path(line, "b/")
        elif line.startswith("rename from "):
            block.rename_from = unquote(line[len("rename from ") :])
        elif line.startswith("rename to "):
            block.rename_to = unquote(line[len("rename to ") :])
        elif line.startswith("new file mode "):
            block.added = True
        elif line.startswith("deleted file mode "):
            block.deleted = True
        elif line.startswith("similarity index "):
            block.similarity = int(line[len("similarity index ") :].rstrip("%"))
        elif line.startswith("Binary files ") or line == "GIT binary patch":
            block.binary = True
    if block is not None:
        files.append(_finish(block, hunks))
    return files
