"""Hits counted from records: a lost marker write, a report published twice, a forged
record, a checkpoint that keeps the cost flat at 1,000 hits, and an old count carried over.

Through the loopback emulator (schema-checked) with a clock the test moves, so the
checkpoint advances as it does over days of real runs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import flaky, make_client
from helpers.github_fixtures import write_report as write_report

from flakewarden.issues.filing import file_flakes
from flakewarden.issues.hit_ledger import (
    EDGE,
    SETTLED,
    Checkpoint,
    Evidence,
    Record,
    record_keys,
    record_line,
    records_of,
)
from flakewarden.issues.marker import format_marker, read_marker, replace_marker
from flakewarden.issues.records import LABEL, FlakeIssue, RunContext, title_for

REPO = "octo-org/octo-repo"
CTX = RunContext(REPO, "https://github.com", "4242", "1", "0123456789abcdef0123", "main")
TID = "tests/test_x.py::test_a"
START = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now.timestamp()

    def advance(self, **delta: float) -> dt.datetime:
        self.now += dt.timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def emu(clock: Clock) -> Iterator[GitHubEmulator]:
    with GitHubEmulator(clock=clock) as emulator:
        yield emulator
    assert emulator.schema_errors == []


def _seen(key: str, clock: Clock) -> Evidence:
    return Evidence(key, (clock.now - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"))


def _file(emu: GitHubEmulator, clock: Clock, key: str) -> Any:
    result = file_flakes(
        make_client(emu, write_interval=0),
        REPO,
        [flaky(TID)],
        CTX,
        clock.now,
        evidence={TID: _seen(key, clock)},
    )
    assert result.errors == [], result.errors
    return result


def _marker(emu: GitHubEmulator, number: int = 1) -> dict[str, Any]:
    marker = read_marker(emu.issues[number]["body"])
    assert marker is not None
    return marker


def _recount(emu: GitHubEmulator, number: int = 1) -> int:
    issue = emu.issues[number]
    marker = read_marker(issue["body"]) or {}
    flake = FlakeIssue.from_api(issue, marker)
    return Checkpoint.of(marker).hits(records_of(flake, emu.comments[number]))


# -- the record line -------------------------------------------------------------------------


def test_a_record_line_reads_back_and_a_broken_one_records_nothing() -> None:
    line = record_line({"run-b": 1, "run-a": 1, "issue-7-before": 4})
    assert line.startswith("<!-- flakewarden-hit: ") and line.endswith(" -->")
    body = f"Flaked again.\n\n{line}\n"
    assert record_keys(body) == {"run-a": 1, "run-b": 1, "issue-7-before": 4}
    assert record_keys("no record here") == {}
    broken = [
        '<!-- flakewarden-hit: {"keys": ["a b"]} -->',  # not a key flakewarden writes
        '<!-- flakewarden-hit: {"keys": "run-a"} -->',
        '<!-- flakewarden-hit: {"keys": [], "weights": {"run-a": -3}} -->',
        '<!-- flakewarden-hit: {"keys": [], "weights": {"run-a": true}} -->',
        "<!-- flakewarden-hit: {not json} -->",
        '  text before <!-- flakewarden-hit: {"keys": ["run-a"]} -->',  # not a line of its own
    ]
    for text in broken:
        assert record_keys(text) == {}, text


def test_checkpoint_counts_each_key_once_across_its_edge() -> None:
    t = START
    records = [
        Record(t, {"a": 1}),
        Record(t + dt.timedelta(minutes=15), {"b": 1}),
        Record(t + dt.timedelta(minutes=30), {"c": 1, "old-9-before": 5}),
    ]
    start = Checkpoint(None, 0)
    assert start.hits(records) == 8
    moved = start.moved_to(t + dt.timedelta(minutes=20), records)
    assert (moved.count, moved.edge) == (2, frozenset({"b"}))  # "a" is older than the edge
    # b recorded again after the checkpoint (the same run published late) still counts once.
    late = [*records, Record(t + dt.timedelta(minutes=40), {"b": 1})]
    assert moved.hits(late) == 8
    # A checkpoint never moves back, and moving it again counts nothing twice.
    assert moved.moved_to(t, records) is moved
    again = moved.moved_to(t + dt.timedelta(minutes=50), late)
    assert again.hits(late) == 8 and again.count == 8
    assert again.edge == frozenset({"b"})  # only the late copy is within its edge
    assert EDGE <= SETTLED  # every key in the edge was visible when the edge was drawn


# -- filing through the emulator -------------------------------------------------------------


def test_a_marker_written_over_by_a_stale_job_loses_no_hit(
    emu: GitHubEmulator, clock: Clock
) -> None:
    for run in range(3):
        _file(emu, clock, f"run-{run}")
        clock.advance(hours=5)
    assert _marker(emu)["hits"] == 3
    # A job that read the issue before the last two runs writes its stale marker back.
    stale = {**_marker(emu), "hits": 1, "ledger": {"before": None, "count": 0, "edge": []}}
    emu.issues[1]["body"] = replace_marker(emu.issues[1]["body"], stale)
    assert _recount(emu) == 3  # the records still hold all three
    (filed,) = _file(emu, clock, "run-3").filed
    assert (filed.action, filed.hits) == ("recurred", 4)
    assert _marker(emu)["hits"] == _recount(emu) == 4


def test_the_same_run_published_twice_counts_once_and_says_so(
    emu: GitHubEmulator, clock: Clock
) -> None:
    _file(emu, clock, "run-1")
    clock.advance(minutes=3)
    _file(emu, clock, "run-2")
    comments = len(emu.comments[1])
    clock.advance(days=2)  # a re-run merge job two days later, same shards' reports
    for key in ("run-1", "run-2"):
        (filed,) = _file(emu, clock, key).filed
        assert (filed.action, filed.hits) == ("counted", 2)
    assert len(emu.comments[1]) == comments  # nothing posted for a run already counted
    assert _marker(emu)["hits"] == _recount(emu) == 2


def test_a_record_forged_by_a_drive_by_commenter_counts_nothing(
    emu: GitHubEmulator, clock: Clock
) -> None:
    _file(emu, clock, "run-1")
    forged = emu.add_comment(1, "+1\n\n" + record_line({"fake-1": 1, "fake-2": 1}))
    forged["user"] = {**forged["user"], "login": "mallory", "id": 666, "type": "User"}
    forged["author_association"] = "NONE"
    clock.advance(hours=1)
    (filed,) = _file(emu, clock, "run-2").filed
    assert filed.hits == 2 and _recount(emu) == 2
    # A collaborator's record (say, a hit copied from another tracker by hand) does count.
    kept = emu.add_comment(1, record_line({"copied-1": 1}))
    kept["user"] = {**kept["user"], "login": "alice", "id": 7, "type": "User"}
    kept["author_association"] = "COLLABORATOR"
    assert _recount(emu) == 3


def test_a_flake_with_a_thousand_hits_costs_the_same_few_requests(
    emu: GitHubEmulator, clock: Clock
) -> None:
    _file(emu, clock, "run-0")
    for run in range(1, 1000):  # 999 earlier recurrences, an hour apart
        clock.advance(hours=1)
        emu.add_comment(1, f"Flaked again.\n\n{record_line({f'run-{run}': 1})}\n")
    clock.advance(hours=1)
    logged = len(emu.log)
    (filed,) = _file(emu, clock, "run-1000").filed
    first = emu.log[logged:]
    assert filed.hits == 1001 == _recount(emu)
    # The issue's checkpoint counted from its first comment: ten pages, once.
    assert len([r for r in first if r.path.endswith("/comments") and r.method == "GET"]) >= 10
    for run in range(1001, 1004):
        clock.advance(hours=6)
        logged = len(emu.log)
        (filed,) = _file(emu, clock, f"run-{run}").filed
        spent = emu.log[logged:]
        assert filed.hits == run + 1 == _marker(emu)["hits"] == _recount(emu)
        # list, read, record, write, read back: the same handful at 1,000 hits as at 1.
        assert len(spent) <= 8, [(r.method, r.path, r.query) for r in spent]
        pages = [r for r in spent if r.path.endswith("/comments") and r.method == "GET"]
        assert all("since" in r.query for r in pages) and len(pages) <= 2


def test_an_issue_counted_the_old_way_keeps_its_count_as_a_base(
    emu: GitHubEmulator, clock: Clock
) -> None:
    old = {"id": TID, "hits": 7, "first": "2025-01-01T00:00:00Z", "last": "2025-06-01T00:00:00Z"}
    emu.add_issue(title_for(TID), format_marker(old) + "\nnotes\n", (LABEL,))
    for n in range(3):
        emu.add_comment(1, f"Flaked again in run {n}. Hits so far: **{5 + n}**.\n")
    (filed,) = _file(emu, clock, "run-a").filed
    assert filed.hits == 8
    clock.advance(hours=2)
    (filed,) = _file(emu, clock, "run-b").filed
    assert filed.hits == 9 == _recount(emu)
    ledger = _marker(emu)["ledger"]
    assert ledger["count"] == 8 and ledger["before"] is not None


def test_a_tampered_ledger_is_reported_and_left_alone(emu: GitHubEmulator, clock: Clock) -> None:
    _file(emu, clock, "run-1")
    bad = {**_marker(emu), "ledger": {"before": "yesterday", "count": 3}}
    emu.issues[1]["body"] = replace_marker(emu.issues[1]["body"], bad)
    body = emu.issues[1]["body"]
    result = file_flakes(
        make_client(emu, write_interval=0),
        REPO,
        [flaky(TID)],
        CTX,
        clock.now,
        evidence={TID: _seen("run-2", clock)},
    )
    assert result.not_filed == [TID]
    assert "issue #1: marker is malformed (ledger before" in result.errors[0]
    assert emu.issues[1]["body"] == body  # never rewritten
