"""One comment of flakewarden's on an issue or pull request, found again and edited in place.

The caller says which comments are its own (``ours``: a hidden marker line naming the
comment, written by a bot; a comment by anyone else that copies the marker is never
edited). Two jobs creating the comment at once are reconciled: after creating, the
comments are listed again and the oldest is kept, holding this run's text, the rest
deleted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Optional

from flakewarden.github.api import GitHubClient

Ours = Callable[[Mapping[str, Any]], bool]


@dataclasses.dataclass
class Posted:
    action: str  # created, updated, unchanged, skipped
    comment_id: Optional[int] = None
    url: str = ""
    removed: int = 0  # duplicates another job created at the same moment


def by_bot(comment: Mapping[str, Any]) -> bool:
    """Written by a bot (the job's token is one), not by a person."""
    user = comment.get("user")
    return isinstance(user, Mapping) and user.get("type") == "Bot"


def _mine(client: GitHubClient, repository: str, number: int, ours: Ours) -> list[dict[str, Any]]:
    found = client.paginate(f"/repos/{repository}/issues/{number}/comments")
    return sorted((c for c in found if ours(c)), key=lambda c: int(c.get("id") or 0))


def keep(
    client: GitHubClient,
    repository: str,
    number: int,
    body: str,
    ours: Ours,
    *,
    create: bool = True,
) -> Posted:
    """Create or edit the one comment ``ours`` recognises on issue ``number``; raises
    ``GitHubError``.

    ``create=False``: edit an existing comment only (``skipped`` when there is none). The
    issue's comments are listed in full (a page per 100), twice when one is created.
    """
    mine = _mine(client, repository, number, ours)
    if not mine:
        if not create:
            return Posted("skipped")
        created = client.post_json(f"/repos/{repository}/issues/{number}/comments", {"body": body})
        return _settle(client, repository, number, ours, created, body)
    kept = mine[0]
    removed = _remove(client, repository, mine[1:])
    if kept.get("body") == body:
        return Posted("unchanged", int(kept["id"]), str(kept.get("html_url") or ""), removed)
    edited = client.patch_json(
        f"/repos/{repository}/issues/comments/{int(kept['id'])}", {"body": body}
    )
    return Posted("updated", int(edited["id"]), str(edited.get("html_url") or ""), removed)


def _remove(client: GitHubClient, repository: str, extra: Iterable[Mapping[str, Any]]) -> int:
    removed = 0
    for comment in extra:
        client.request("DELETE", f"/repos/{repository}/issues/comments/{int(comment['id'])}")
        removed += 1
    return removed


def _settle(
    client: GitHubClient,
    repository: str,
    number: int,
    ours: Ours,
    created: Mapping[str, Any],
    body: str,
) -> Posted:
    """List again after creating: when another job created one too, the oldest stays,
    holding this run's text."""
    mine = _mine(client, repository, number, ours)
    made = int(created["id"])
    if mine and int(mine[0]["id"]) != made:
        _remove(client, repository, [created])
        kept = int(mine[0]["id"])
        edited = client.patch_json(f"/repos/{repository}/issues/comments/{kept}", {"body": body})
        return Posted("updated", kept, str(edited.get("html_url") or ""), 1)
    return Posted("created", made, str(created.get("html_url") or ""))
