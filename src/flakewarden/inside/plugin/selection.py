"""Which collected tests run: a stress order, one shard of N, or an exact selection."""

from __future__ import annotations

import json
import os
from typing import Any


def _stress_order(config: Any, items: list[Any]) -> None:
    """``FLAKEWARDEN_ORDER``: keep exactly these ids and run them in this order."""
    order_file = os.environ.get("FLAKEWARDEN_ORDER")
    if not order_file:
        return
    with open(order_file, encoding="utf-8") as stream:
        position = {nodeid: index for index, nodeid in enumerate(json.load(stream))}
    drop = [item for item in items if item.nodeid not in position]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = sorted(
        (item for item in items if item.nodeid in position), key=lambda i: position[i.nodeid]
    )


def shard_of(ids: list[str], count: int, durations: dict[str, float]) -> dict[str, int]:
    """The shard (0-based) of each id: the same whatever order the ids come in.

    With durations, longest first onto the least loaded shard (ties: the lower shard),
    a test without one counted at the median of those known; without any, by a stable
    hash of the id, so each shard gets about as many tests.
    """
    known = sorted(d for d in (durations.get(i) for i in ids) if d is not None)
    if not known:
        import hashlib

        return {
            i: int(hashlib.sha256(i.encode("utf-8", "surrogatepass")).hexdigest()[:15], 16) % count
            for i in ids
        }
    middle = known[len(known) // 2]
    loads = [0.0] * count
    shards = {}
    for negative, test in sorted((-durations.get(i, middle), i) for i in set(ids)):
        shard = min(range(count), key=lambda k: (loads[k], k))
        loads[shard] += -negative
        shards[test] = shard
    return shards


def _shard(config: Any, items: list[Any]) -> None:
    """``FLAKEWARDEN_SHARD``: keep only this shard's tests (attempt 1; reruns select)."""
    spec = os.environ.get("FLAKEWARDEN_SHARD")
    if not spec:
        return
    index, count = (int(part) for part in spec.split("/"))
    durations: dict[str, float] = {}
    path = os.environ.get("FLAKEWARDEN_SHARD_DURATIONS")
    if path:
        with open(path, encoding="utf-8") as stream:
            durations = json.load(stream)
    shards = shard_of([item.nodeid for item in items], count, durations)
    drop = [item for item in items if shards[item.nodeid] != index - 1]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = [item for item in items if shards[item.nodeid] == index - 1]


def select(config: Any, items: list[Any]) -> None:
    """Apply ``FLAKEWARDEN_ORDER``, ``FLAKEWARDEN_SHARD`` and ``FLAKEWARDEN_SELECT``, in turn."""
    _stress_order(config, items)
    _shard(config, items)
    select_file = os.environ.get("FLAKEWARDEN_SELECT")
    if not select_file:
        return
    with open(select_file, encoding="utf-8") as stream:
        wanted = set(json.load(stream))
    keep = [item for item in items if item.nodeid in wanted]
    drop = [item for item in items if item.nodeid not in wanted]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
