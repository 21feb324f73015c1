"""The digest's list of flake issues closed without a verified fix.

A close counts as a fix only once ``flakewarden verify-fix`` saw the test pass under
stress. A check that proved nothing either way (``fix_check.result`` ``unverified``)
leaves the issue closed, and the digest lists it here until a later check decides.
Closed issues updated in the last ``WINDOW_DAYS`` are read (one more listing).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from flakewarden.issues.marker import scan
from flakewarden.issues.records import LABEL, TITLE_PREFIX, iso
from flakewarden.reports import markdown as md

WINDOW_DAYS = 90
ROWS = 30


def unverified(items: Iterable[Mapping[str, Any]]) -> list[tuple[int, str, dict[str, Any]]]:
    """(number, test id, fix check) of each closed issue whose fix is unverified."""
    found = []
    for item in items:
        if "pull_request" in item or item.get("state") != "closed":
            continue
        marker = scan(item.get("body")).data or {}
        check = marker.get("fix_check")
        if isinstance(check, dict) and check.get("result") == "unverified":
            title = str(item.get("title") or "").removeprefix(TITLE_PREFIX)
            found.append((int(item["number"]), str(marker.get("id") or title), check))
    return sorted(found, key=lambda f: f[0])


def listing(
    client: Any, repository: str, now: dt.datetime
) -> list[tuple[int, str, dict[str, Any]]]:
    since = iso(now - dt.timedelta(days=WINDOW_DAYS))
    params = {"labels": LABEL, "state": "closed", "since": since}
    return unverified(client.paginate(f"/repos/{repository}/issues", params))


def render(closes: list[tuple[int, str, dict[str, Any]]]) -> list[str]:
    if not closes:
        return []
    lines = [
        "### Closed, fix unverified",
        "",
        "Closed, but the stress check of the fix proved nothing either way: not yet fixed.",
        "",
        "| Issue | Test | Verdict | Runs | Checked |",
        "| --- | --- | --- | ---: | --- |",
    ]
    for number, test_id, check in closes[:ROWS]:
        lines.append(
            f"| #{number} | {md.table_code(md.clip(test_id, 200))} | "
            f"{md.escape(str(check.get('verdict') or '?'))} | {int(check.get('runs') or 0)} | "
            f"{md.escape(str(check.get('at') or '')[:10])} |"
        )
    if len(closes) > ROWS:
        lines.append(f"| …and {len(closes) - ROWS} more | | | | |")
    return [*lines, ""]
