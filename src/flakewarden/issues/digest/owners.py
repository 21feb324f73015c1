"""The digest's "By owner" table: open flakes grouped by who owns them, nobody's first.

An issue's owners are its assignees and the teams its marker names (``owners``,
written when it was opened from CODEOWNERS or the config). Owners are shown as
code, never mentioned: a weekly digest must not notify everyone it lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from flakewarden.reports import markdown as md

OWNER_ROWS = 50
NUMBERS_SHOWN = 15
NOBODY = ""


class Owned(Protocol):
    number: int
    hits: int
    owners: tuple[str, ...]


def owners_of(item: Mapping[str, Any], marker: Mapping[str, Any]) -> tuple[str, ...]:
    """The assignees' logins, then the teams the marker names (``@org/team``)."""
    found: list[str] = []
    for user in item.get("assignees") or []:
        login = user.get("login") if isinstance(user, Mapping) else None
        if isinstance(login, str) and login:
            found.append(login)
    named = marker.get("owners")
    if isinstance(named, list):
        found += [n for n in named if isinstance(n, str) and n.startswith("@") and "/" in n]
    return tuple(dict.fromkeys(found))


def groups(entries: Iterable[Owned]) -> list[tuple[str, list[Owned]]]:
    """(owner, their issues) with nobody's first, then by hits, then by name; an issue with
    two owners is in both groups."""
    by_owner: dict[str, list[Owned]] = {}
    for entry in entries:
        for owner in entry.owners or (NOBODY,):
            by_owner.setdefault(owner, []).append(entry)
    ordered = sorted(by_owner.items(), key=lambda kv: kv[0])
    ordered.sort(key=lambda kv: sum(e.hits for e in kv[1]), reverse=True)
    ordered.sort(key=lambda kv: kv[0] != NOBODY)
    return ordered


def render(entries: Sequence[Owned], triage_label: str = "flake-triage") -> list[str]:
    """The table's lines, or none when no open flake has an owner and none lacks one."""
    grouped = groups(entries)
    if not grouped:
        return []
    lines = [
        "### By owner",
        "",
        "Nobody's flakes first: they need an owner before they can be fixed.",
        "",
        "| Owner | Open flakes | Hits | Issues |",
        "| --- | ---: | ---: | --- |",
    ]
    for owner, owned in grouped[:OWNER_ROWS]:
        who = (
            f"_nobody_ (label {md.code(triage_label)})"
            if owner == NOBODY
            else md.table_code(owner.removeprefix("@"))
        )
        numbers = ", ".join(f"#{e.number}" for e in owned[:NUMBERS_SHOWN])
        if len(owned) > NUMBERS_SHOWN:
            numbers += f" and {len(owned) - NUMBERS_SHOWN} more"
        lines.append(f"| {who} | {len(owned)} | {sum(e.hits for e in owned)} | {numbers} |")
    if len(grouped) > OWNER_ROWS:
        lines.append(f"| …and {len(grouped) - OWNER_ROWS} more owners | | | |")
    return [*lines, ""]
