"""The known-race-patterns file: tests a stress run proved to be races, never quarantined.

It is read by the quarantine policy and written to by people, from the entry
``flakewarden stress`` prints for a ``race`` verdict (``race_entry``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Optional

_ENTRY = re.compile(
    r"^(?P<indent>[ \t]*)[-*+][ \t]+(?:test:[ \t]*(?P<value>\S.*?)|`(?P<code>[^`]+)`.*?)[ \t]*$"
)


def _entry_id(match: re.Match[str]) -> str:
    if match.group("code") is not None:
        return match.group("code").strip()
    value = match.group("value")
    if value.startswith('"'):
        try:
            return str(json.loads(value))
        except ValueError:
            return value.strip('"')
    if value.startswith("'") and value.endswith("'") and len(value) > 1:
        return value[1:-1].replace("''", "'")
    return value


def parse_race_patterns(text: str) -> dict[str, str]:
    """Test id -> its entry's text, from a known-race-patterns file.

    An entry is a list item that starts with ``test: "<id>"`` (what ``flakewarden
    stress`` prints for a race) or with the backticked id; the more indented
    lines under it belong to it.
    """
    entries: dict[str, str] = {}
    lines = text.splitlines()
    for at, line in enumerate(lines):
        match = _ENTRY.match(line)
        if match is None:
            continue
        indent = len(match.group("indent").expandtabs())
        block = [line.strip()]
        for follower in lines[at + 1 :]:
            if not follower.strip() or len(follower) - len(follower.lstrip()) <= indent:
                break
            block.append("  " + follower.strip())
        entries.setdefault(_entry_id(match), "\n".join(block))
    return entries


def race_entry_for(test_id: str, entries: Mapping[str, str]) -> Optional[str]:
    """The entry listing ``test_id``; an entry without ``[...]`` covers every parameter set."""
    if test_id in entries:
        return entries[test_id]
    base = test_id.split("[", 1)[0]
    return entries.get(base) if base != test_id else None


def read_race_patterns(path: Path, explicit: bool) -> tuple[dict[str, str], Optional[str]]:
    """The entries, and an unmet condition when a configured file cannot be read."""
    try:
        return parse_race_patterns(path.read_text(encoding="utf-8")), None
    except FileNotFoundError:
        if explicit:
            return {}, f"the known-race-patterns file {path} (set in the config) does not exist"
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        return {}, f"cannot read the known-race-patterns file {path}: {exc}"


def race_entry(test_id: str, knob: Optional[str], at: str, link: Optional[str] = None) -> str:
    """The entry to add for a race (YAML): what ``flakewarden stress`` prints."""
    return (
        f"- test: {json.dumps(test_id)}\n"
        f"  date: {at[:10]}\n"
        f"  knob: {knob or 'unknown'}\n"
        f"  link: {json.dumps(link or 'TODO: the issue or the fix')}\n"
    )
