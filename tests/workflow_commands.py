"""GitHub's runner reading a step's output: which workflow commands it would act on.

A re-statement of actions/runner's ActionCommand parsing (v2 ``::`` and legacy
``##[`` forms), including ``stop-commands``: between ``::stop-commands::TOKEN``
and ``::TOKEN::`` nothing is a command. Shared by every test that checks what a
step emits.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

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


def runner_lines(stdout: str) -> list[str]:
    """Lines as the runner reads a process's output: split on CR, LF or CRLF only."""
    return re.split(r"\r\n|\r|\n", stdout)


def _unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _unescape_property(text: str) -> str:
    return (
        text.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%")
    )


def parse_command(line: str) -> Optional[tuple[str, dict[str, str], str]]:
    """One workflow command from one line, or None; both v2 (``::``) and legacy ``##[`` forms."""
    text = line.lstrip()
    if text.startswith("::"):
        end = text.find("::", 2)
        if end >= 0:
            info = text[2:end]
            name, _, props = info.partition(" ")
            if name in RUNNER_COMMANDS:
                properties: dict[str, str] = {}
                for item in props.strip().split(","):
                    if not item:
                        continue
                    pair = [p for p in item.split("=", 1) if p]
                    if len(pair) == 2:
                        properties[pair[0]] = _unescape_property(pair[1])
                return name, properties, _unescape_data(text[end + 2 :])
    # The legacy form is found anywhere in a line.
    start = line.find("##[")
    if start >= 0:
        close = line.find("]", start)
        if close >= 0:
            name = line[start + 3 : close].split(" ", 1)[0]
            if name in RUNNER_COMMANDS:
                return name, {}, line[close + 1 :]
    return None


def parse_commands(stdout: str) -> list[tuple[str, dict[str, str], str]]:
    """The commands the runner acts on, in order; ``stop-commands`` fences are honoured."""
    found = []
    resume: Optional[str] = None
    for line in runner_lines(stdout):
        if resume is not None:
            if line.strip() == resume:
                resume = None
            continue
        command = parse_command(line)
        if command is None:
            continue
        if command[0] == "stop-commands":
            resume = f"::{command[2]}::"
            continue
        found.append(command)
    return found


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
