"""GitHub's runner reading a step's output: which workflow commands it would act on.

A re-statement of actions/runner's ``ActionCommandManager.TryProcessCommand``
with ``ActionCommand.TryParseV2`` (``::name props::data`` after leading white
space) tried first and ``ActionCommand.TryParse`` (legacy ``##[name props]data``
anywhere in a line) second; command names compare case-insensitively. Between
``stop-commands`` and its token nothing is acted on; any line that parses, in
either form, as a command named by the token resumes. Shared by every test that
checks what a step emits.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import NamedTuple, Optional

RUNNER_COMMANDS = {
    "add-mask",
    "add-matcher",
    "add-path",
    "debug",
    "echo",
    "endgroup",
    "error",
    "group",
    "notice",
    "remove-matcher",
    "save-state",
    "set-env",
    "set-output",
    "stop-commands",
    "warning",
}
STOP = "stop-commands"
RESUME = "resume-commands"  # not a runner command: the event of a token ending a stop


class Command(NamedTuple):
    name: str  # lower case; RESUME for the line that ended a stop
    properties: dict[str, str]
    data: str
    line: str


def runner_lines(stdout: str) -> list[str]:
    """Lines as the runner reads a process's output: split on CR, LF or CRLF only."""
    return re.split(r"\r\n|\r|\n", stdout)


def _unescape(text: str, pairs: tuple[tuple[str, str], ...]) -> str:
    for escaped, char in pairs:
        text = text.replace(escaped, char)
    return text


_DATA = (("%0D", "\r"), ("%0A", "\n"), ("%25", "%"))
_PROPERTY = (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%"))
_LEGACY = (("%3B", ";"), ("%0D", "\r"), ("%0A", "\n"), ("%5D", "]"), ("%25", "%"))


def _is_space(char: str) -> bool:
    """.NET's ``char.IsWhiteSpace``: Zs, Zl, Zp, TAB..CR and NEL (not Python's ``isspace``)."""
    return char in "\t\n\v\f\r\x85" or unicodedata.category(char) in ("Zs", "Zl", "Zp")


def _trim_start(text: str) -> str:
    """.NET's ``TrimStart()``."""
    at = 0
    while at < len(text) and _is_space(text[at]):
        at += 1
    return text[at:]


def dotnet_trim(text: str) -> str:
    """.NET's ``Trim()``: the runner trims a v2 command's property text so."""
    end = len(text)
    while end > 0 and _is_space(text[end - 1]):
        end -= 1
    return _trim_start(text[:end])


def _properties(text: str, separator: str, pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    properties: dict[str, str] = {}
    for item in text.split(separator):
        if not item:
            continue
        pair = [p for p in item.split("=", 1) if p]
        if len(pair) == 2:
            properties[pair[0]] = _unescape(pair[1], pairs)
    return properties


def parse_v2(line: str, registered: set[str]) -> Optional[Command]:
    """``TryParseV2``: ``::name props::data`` once leading white space is trimmed."""
    text = _trim_start(line)
    if not text.startswith("::"):
        return None
    end = text.find("::", 2)
    if end < 0:
        return None
    info = text[2:end]
    name, space, props = info.partition(" ")
    if name.lower() not in registered:
        return None
    properties = _properties(dotnet_trim(props), ",", _PROPERTY) if space and name else {}
    return Command(name.lower(), properties, _unescape(text[end + 2 :], _DATA), line)


def parse_legacy(line: str, registered: set[str]) -> Optional[Command]:
    """``TryParse``: ``##[name props]data`` found anywhere in the line."""
    start = line.find("##[")
    if start < 0:
        return None
    close = line.find("]", start)
    if close < 0:
        return None
    info = line[start + 3 : close]
    name, space, props = info.partition(" ")
    if name.lower() not in registered:
        return None
    properties = _properties(props, ";", _LEGACY) if space and name else {}
    return Command(name.lower(), properties, _unescape(line[close + 1 :], _LEGACY), line)


def parse_command(
    line: str, registered: Optional[set[str]] = None
) -> Optional[tuple[str, dict[str, str], str]]:
    """One workflow command from one line, or None: the v2 form first, then the legacy one."""
    found = _parse(line, RUNNER_COMMANDS if registered is None else registered)
    return None if found is None else (found.name, found.properties, found.data)


def _parse(line: str, registered: set[str]) -> Optional[Command]:
    if not line:
        return None
    return parse_v2(line, registered) or parse_legacy(line, registered)


def command_stream(stdout: str) -> list[Command]:
    """Every command the runner acts on, in order, ``stop-commands`` and resumes included.

    A ``stop-commands`` whose token the runner refuses (empty, a command's name,
    ``pause-logging``) does not stop anything; it is kept in the stream.
    """
    found: list[Command] = []
    token: Optional[str] = None
    registered = set(RUNNER_COMMANDS)
    for line in runner_lines(stdout):
        command = _parse(line, registered)
        if command is None:
            continue
        if token is not None:
            if command.name == token:
                found.append(Command(RESUME, {}, token, line))
                registered.discard(token)
                token = None
            continue
        found.append(command)
        if command.name == STOP:
            wanted = command.data.lower()
            if wanted and wanted not in registered and wanted != "pause-logging":
                token = wanted
                registered.add(token)
    return found


def parse_commands(stdout: str) -> list[tuple[str, dict[str, str], str]]:
    """The commands the runner acts on, in order, without the fences' own lines."""
    return [
        (c.name, c.properties, c.data)
        for c in command_stream(stdout)
        if c.name not in (STOP, RESUME)
    ]


def read_output_file(path: Path) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` as the runner reads it: ``k=v`` lines and ``k<<DELIM`` blocks."""
    values: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\r")
        i += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delimiter = line.split("<<", 1)
            body = []
            while lines[i].rstrip("\r") != delimiter:
                body.append(lines[i])
                i += 1
            i += 1
            values[key] = "\n".join(body)
        else:
            key, value = line.split("=", 1)
            values[key] = value
    return values


#: The token flakewarden fences the tests' output with: a fresh random hex string.
OUR_FENCE = re.compile(r"^[0-9a-f]{32}$")


def only_ours(stream: list[Command], *, fenced: Optional[bool] = None) -> list[Command]:
    """The annotations, after checking every other command is flakewarden's own fence.

    ``fenced``: True when the tests' output was echoed (not ``-q``), so it sits inside one
    fence; False when nothing was; None (callers that cannot tell) accepts either.
    """
    fences = [c for c in stream if c.name in (STOP, RESUME)]
    allowed = (0, 2) if fenced is None else ((2,) if fenced else (0,))
    assert len(fences) in allowed, fences
    if fences:
        stop, resume = fences
        assert (stop.name, resume.name) == (STOP, RESUME), fences
        assert OUR_FENCE.match(stop.data) and resume.data == stop.data, fences
        assert stop.line == f"::stop-commands::{stop.data}", fences
        assert resume.line == f"::{stop.data}::", fences
    annotations = [c for c in stream if c.name not in (STOP, RESUME)]
    foreign = [c for c in annotations if c.name not in ("error", "warning", "notice")]
    assert not foreign, foreign
    for annotation in annotations:
        assert re.match(r"^::(error|warning|notice) title=", annotation.line), annotation
    return annotations
