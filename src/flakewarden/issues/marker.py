"""The hidden marker line that ties a GitHub issue to one test.

``<!-- flakewarden: {"id": "...", "hits": 3, "first": "...", "last": "..."} -->``

It is one line of JSON inside an HTML comment, so it survives any edit a human
makes around it. Other features add keys (``verdict``, ``verdict_at``,
``quarantined_at``, ``runs``, ``failures``); a rewrite keeps every key it does
not know. ``<``, ``>``, ``&`` and ``@`` are written as JSON ``\\u`` escapes, so
no test id can close the comment early or mention anyone.

Anyone who can edit the issue can edit the marker, so its numbers are checked
before use (``problem``): a count that is not a whole number from 0 to
``HITS_MAX`` is reported and left alone, never coerced, reset or overwritten.
A test id longer than ``ID_LIMIT`` is keyed by its SHA-256 (``id_sha256``) and
shown clipped, so the marker always fits in an issue body.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from typing import Any, Optional

from flakewarden.model import LONG_ID_LIMIT, id_key
from flakewarden.outside_json import parse_json

PREFIX = "<!-- flakewarden: "
SUFFIX = " -->"
_LINE = re.compile(r"^[ \t]*<!-- flakewarden: (\{.*\}) -->[ \t]*$", re.MULTILINE)
# More hits than any CI system could record: a larger count was written by hand.
HITS_MAX = 10**9
# Longer ids are keyed by their digest; the marker then holds a clipped id to show.
ID_LIMIT = LONG_ID_LIMIT
ID_SHOWN = 200
_COUNTS = ("hits", "runs", "failures", "untouched", "touches")
# An evidence key (``hit_ledger``): a run's id, written by flakewarden.
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,99}")


def format_marker(data: dict[str, Any]) -> str:
    """The marker line for ``data`` (no newline)."""
    text = json.dumps(data, ensure_ascii=True, separators=(", ", ": "))
    for char in "<>&@":  # no comment end, no tag, no mention, even for a naive reader
        text = text.replace(char, f"\\u{ord(char):04x}")
    return PREFIX + text + SUFFIX


def read_marker(body: Optional[str]) -> Optional[dict[str, Any]]:
    """The first well-formed marker in ``body`` that names a test, or ``None``."""
    for match in _LINE.finditer(body or ""):
        data = _loads(match.group(1))
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            return data
    return None


def replace_marker(body: Optional[str], data: dict[str, Any]) -> str:
    """``body`` with its marker line replaced (or put first); every other line kept as is."""
    body = body or ""
    line = format_marker(data)
    for match in _LINE.finditer(body):
        parsed = _loads(match.group(1))
        if isinstance(parsed, dict) and isinstance(parsed.get("id"), str):
            return body[: match.start()] + line + body[match.end() :]
    if has_unreadable_marker(body):  # never write a second marker above a broken one
        raise ValueError("the issue body holds a marker line that is not valid JSON")
    return line + "\n" + body if body else line + "\n"


def _loads(text: str) -> Any:
    try:
        return parse_json(text, "the marker")
    except (ValueError, RecursionError):  # also a count past Python's digit limit
        return None


def has_unreadable_marker(body: Optional[str]) -> bool:
    """True when ``body`` holds a marker-looking line that is not valid marker JSON."""
    for match in _LINE.finditer(body or ""):
        data = _loads(match.group(1))
        if not (isinstance(data, dict) and isinstance(data.get("id"), str)):
            return True
    return False


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:20] + f"…({len(text):,} characters)"


def problem(data: dict[str, Any]) -> str:
    """What is wrong with the numbers in marker ``data``, or ``""`` when they are sound."""
    for key in _COUNTS:
        if key not in data:
            continue
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= HITS_MAX:
            return f"{key}: {_show(value)}"
    merged = data.get("merged")
    if merged is not None and not (
        isinstance(merged, list)
        and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in merged)
    ):
        return f"merged: {_show(merged)}"
    duplicate_of = data.get("duplicate_of")
    if duplicate_of is not None and (
        isinstance(duplicate_of, bool) or not isinstance(duplicate_of, int) or duplicate_of < 1
    ):
        return f"duplicate_of: {_show(duplicate_of)}"
    if "origin" in data and not valid_key(data["origin"]):
        return f"origin: {_show(data['origin'])}"
    return _ledger_problem(data.get("ledger"))


def valid_key(key: Any) -> bool:
    """True for an evidence key flakewarden could have written."""
    return isinstance(key, str) and _KEY.fullmatch(key) is not None


def parse_time(text: Any) -> Optional[dt.datetime]:
    """An ISO 8601 time as GitHub writes it (UTC when no zone is given), or ``None``."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def _ledger_problem(ledger: Any) -> str:
    """What is wrong with a marker's ``ledger`` (``""``: nothing, or no ledger)."""
    if ledger is None:
        return ""
    if not isinstance(ledger, dict):
        return f"ledger: {_show(ledger)}"
    count = ledger.get("count")
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= HITS_MAX:
        return f"ledger count: {_show(count)}"
    before = ledger.get("before")
    if before is not None and parse_time(before) is None:
        return f"ledger before: {_show(before)}"
    for key in ("untouched", "touches"):
        value = ledger.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= HITS_MAX:
            return f"ledger {key}: {_show(value)}"
    edge = ledger.get("edge")
    if edge is not None and not (isinstance(edge, list) and all(valid_key(k) for k in edge)):
        return f"ledger edge: {_show(edge)}"
    return ""


@dataclasses.dataclass
class Scan:
    """A body's marker as found: ``data`` (``None`` when absent or unreadable), ``problem``."""

    data: Optional[dict[str, Any]]
    problem: str = ""


def scan(body: Optional[str]) -> Scan:
    """The marker of ``body`` and whether it can be trusted.

    A line that looks like a marker but is not valid JSON (or names no test)
    is a problem too, so the caller neither resets the count nor writes a
    second marker above it.
    """
    data = read_marker(body)
    if data is not None:
        return Scan(data, problem(data))
    if has_unreadable_marker(body):
        return Scan(None, "not valid JSON")
    return Scan(None)


def hits_of(data: dict[str, Any]) -> int:
    """The hit count of a checked marker (0 when absent)."""
    return count_of(data, "hits")


def count_of(data: dict[str, Any], key: str) -> int:
    """The count ``key`` of a checked marker or ledger (0 when absent: an older issue)."""
    value = data.get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def id_fields(test_id: str) -> dict[str, Any]:
    """The marker keys that name ``test_id``: the id itself, or a clipped id and its digest."""
    key = id_key(test_id)
    if key == test_id:
        return {"id": test_id}
    return {"id": test_id[:ID_SHOWN] + "…", "id_sha256": key.removeprefix("sha256:")}


def key_for(test_id: str) -> str:
    """The key a test's issue is indexed under (``model.id_key``)."""
    return id_key(test_id)


def key_of(data: dict[str, Any]) -> str:
    """The key of the test marker ``data`` names (see ``key_for``)."""
    digest = data.get("id_sha256")
    if isinstance(digest, str) and digest:
        return "sha256:" + digest
    return str(data.get("id"))


def update_marker(body: Optional[str], **changes: Any) -> str:
    """Merge ``changes`` into the marker of ``body`` and rewrite only that line."""
    data = read_marker(body)
    if data is None:
        raise ValueError("the issue body has no flakewarden marker")
    data.update(changes)
    return replace_marker(body, data)
