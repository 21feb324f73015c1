"""The share of a flake's hits that ran none of the change they were tested with.

Counted like the hits (one per run's evidence key, through the checkpoint), shown in the
issue and its comments, and ranked by in the digest. Through the loopback emulator.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Any, Optional

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import flaky, make_client

from flakewarden.issues.digest import ranking as digest
from flakewarden.issues.filing import file_flakes
from flakewarden.issues.hit_ledger import (
    Checkpoint,
    Evidence,
    Record,
    Tally,
    record_line,
    record_of,
    records_of,
)
from flakewarden.issues.marker import format_marker, read_marker
from flakewarden.issues.records import FlakeIssue, RunContext
from flakewarden.model import TestResult
from flakewarden.model.blame import BaseCheck, TestChange

REPO = "octo-org/octo-repo"
CTX = RunContext(REPO, "https://github.com", "4242", "1", "0123456789abcdef0123", "feature/x")
TID = "tests/test_x.py::test_a"
START = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.timezone.utc)
HOSTILE_WHY = "::error::owned <script>alert(1)</script> a|b @team"


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


def judged(verdict: Optional[str], base: Optional[BaseCheck] = None) -> TestResult:
    test = flaky(TID)
    if verdict is not None:
        test.change = TestChange(verdict, {"src/a.py": [(3, 4)]} if verdict == "touches" else {})  # type: ignore[arg-type]
    test.base = base
    return test


def _file(emu: GitHubEmulator, clock: Clock, key: str, test: TestResult) -> Any:
    seen = Evidence(key, (clock.now - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"))
    result = file_flakes(
        make_client(emu, write_interval=0), REPO, [test], CTX, clock.now, evidence={TID: seen}
    )
    assert result.errors == [], result.errors
    return result


def _marker(emu: GitHubEmulator, number: int = 1) -> dict[str, Any]:
    marker = read_marker(emu.issues[number]["body"])
    assert marker is not None
    return marker


def _recount(emu: GitHubEmulator, number: int = 1) -> Tally:
    issue = emu.issues[number]
    marker = read_marker(issue["body"]) or {}
    flake = FlakeIssue.from_api(issue, marker)
    return Checkpoint.of(marker).tally(records_of(flake, emu.comments[number]))


# -- the record line and the checkpoint --------------------------------------------------------


def test_a_record_line_carries_each_keys_verdict() -> None:
    line = record_line(
        {"run-a": 1, "run-b": 1, "run-c": 1}, {"run-a": "untouched", "run-b": "touches"}
    )
    assert '"untouched": ["run-a"]' in line and '"touches": ["run-b"]' in line
    assert record_of(f"Flaked again.\n\n{line}\n") == (
        {"run-a": 1, "run-b": 1, "run-c": 1},
        {"run-a": "untouched", "run-b": "touches"},
    )
    # A verdict for a key the line does not record is not written.
    assert "untouched" not in record_line({"run-a": 1}, {"run-z": "untouched"})


def test_a_record_line_of_an_older_version_or_a_forged_verdict_knows_no_verdict() -> None:
    old = '<!-- flakewarden-hit: {"keys": ["run-a"]} -->'
    assert record_of(old) == ({"run-a": 1}, {})
    # A verdict list naming a key the line does not record counts the hit, not the verdict.
    forged = '<!-- flakewarden-hit: {"keys": ["run-a"], "untouched": ["run-a", "run-x"]} -->'
    assert record_of(forged) == ({"run-a": 1}, {})
    assert record_of('<!-- flakewarden-hit: {"keys": ["run-a"], "touches": "run-a"} -->') == (
        {"run-a": 1},
        {},
    )


def test_the_checkpoint_carries_verdicts_across_its_move_and_counts_each_key_once() -> None:
    t = START
    records = [
        Record(t, {"a": 1}, {"a": "untouched"}),
        Record(t + dt.timedelta(minutes=15), {"b": 1}, {"b": "touches"}),
        Record(t + dt.timedelta(minutes=30), {"c": 1}, {"c": "untouched"}),
        Record(t + dt.timedelta(minutes=31), {"d": 1}),  # a run on main: nothing to judge
    ]
    start = Checkpoint(None, 0)
    assert start.tally(records) == Tally(4, 2, 1)
    moved = start.moved_to(t + dt.timedelta(minutes=20), records)
    assert (moved.count, moved.untouched, moved.touches) == (2, 1, 1)
    # b published again after the checkpoint still counts once, hit and verdict.
    late = [*records, Record(t + dt.timedelta(minutes=40), {"b": 1}, {"b": "touches"})]
    assert moved.tally(late) == Tally(4, 2, 1)
    assert Checkpoint.of({"ledger": moved.to_json()}) == moved


# -- filing ------------------------------------------------------------------------------------


def test_an_issue_counts_and_shows_the_hits_that_ran_none_of_their_change(
    emu: GitHubEmulator, clock: Clock
) -> None:
    _file(emu, clock, "run-1", judged("untouched", BaseCheck("fails")))
    body = emu.issues[1]["body"]
    assert (
        "In this run it ran none of this pull request's changes; fails on the base too. "
        "1 of 1 hit ran none of the change they were tested with."
    ) in body
    marker = _marker(emu)
    assert (marker["hits"], marker["untouched"], marker["touches"]) == (1, 1, 0)

    clock.advance(hours=2)
    _file(emu, clock, "run-2", judged("touches"))
    [comment] = emu.comments[1]
    assert "Hits so far: **2**." in comment["body"]
    assert (
        "In this run it ran 2 changed lines in src/a.py. "
        "1 of 2 hits ran none of the change they were tested with."
    ) in comment["body"]

    clock.advance(hours=2)
    _file(emu, clock, "run-3", judged(None))  # on main: no change to judge
    clock.advance(hours=2)
    _file(emu, clock, "run-4", judged("unknown"))  # coverage could not tell
    clock.advance(hours=2)
    _file(emu, clock, "run-5", judged("untouched"))
    clock.advance(hours=2)
    _file(emu, clock, "run-5", judged("untouched"))  # the same report published twice
    marker = _marker(emu)
    assert (marker["hits"], marker["untouched"], marker["touches"]) == (5, 2, 1)
    assert _recount(emu) == Tally(5, 2, 1)  # the marker's cache is what the records say
    assert marker["ledger"]["count"] > 0  # the checkpoint moved past counted verdicts
    assert "2 of 3 hits ran none of the change" in emu.comments[1][-1]["body"]
    assert "In this run" not in emu.comments[1][1]["body"]  # run-3 said nothing of a change


def test_an_older_issue_without_the_counts_reads_as_none_known(
    emu: GitHubEmulator, clock: Clock
) -> None:
    marker = {"id": TID, "hits": 7, "first": "2025-01-01T00:00:00Z", "last": "2025-02-01T00:00:00Z"}
    emu.add_issue(f"flake: {TID}", format_marker(marker) + "\nnotes\n", ("flaky-test",))
    _file(emu, clock, "run-1", judged("untouched"))
    marker = _marker(emu)
    assert (marker["hits"], marker["untouched"], marker["touches"]) == (8, 1, 0)
    assert "1 of 1 hit ran none of the change" in emu.comments[1][0]["body"]


def test_an_issue_never_judged_gets_no_counts_and_no_sentence(
    emu: GitHubEmulator, clock: Clock
) -> None:
    _file(emu, clock, "run-1", judged(None))
    clock.advance(hours=1)
    _file(emu, clock, "run-2", judged(None))
    assert "untouched" not in _marker(emu) and "touches" not in _marker(emu)
    assert "ran none of the change" not in emu.issues[1]["body"] + emu.comments[1][0]["body"]


def test_a_tampered_untouched_count_is_reported_and_left_alone(
    emu: GitHubEmulator, clock: Clock
) -> None:
    marker = {"id": TID, "hits": 3, "untouched": "lots"}
    emu.add_issue(f"flake: {TID}", format_marker(marker), ("flaky-test",))
    before = emu.issues[1]["body"]
    seen = Evidence("run-1", "2026-01-05T08:00:00Z")
    result = file_flakes(
        make_client(emu, write_interval=0),
        REPO,
        [judged("untouched")],
        CTX,
        clock.now,
        evidence={TID: seen},
    )
    assert result.not_filed == [TID]
    assert 'untouched: "lots"' in result.errors[0]
    assert emu.issues[1]["body"] == before


def test_a_hostile_reason_is_escaped_in_the_issue(emu: GitHubEmulator, clock: Clock) -> None:
    _file(emu, clock, "run-1", judged("unknown", BaseCheck("error", why=HOSTILE_WHY)))
    body = emu.issues[1]["body"]
    [line] = [line for line in body.splitlines() if line.startswith("In this run")]
    assert "<script>" not in line and "@team" not in line
    assert re.search(r"(?<!\\)\|", line) is None  # no pipe left to split a table
    assert "could not be run on the base" in line


# -- the digest --------------------------------------------------------------------------------


def _flake(emu: GitHubEmulator, test_id: str, hits: int, **counts: int) -> int:
    marker = {"id": test_id, "hits": hits, "last": "2024-05-20T00:00:00Z", **counts}
    return int(emu.add_issue(f"flake: {test_id}", format_marker(marker), ("flaky-test",))["number"])


def _rows(body: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip("|"))]
        for line in body.splitlines()
        if re.match(r"\| (#|\d+) \|", line)
    ]


def test_the_digest_shows_the_untouched_share_and_breaks_ties_by_it(
    emu: GitHubEmulator,
) -> None:
    low = _flake(emu, "t::low_share", 4, untouched=1, touches=3)
    old = _flake(emu, "t::old_issue", 4)  # no counts: none known
    high = _flake(emu, "t::high_share", 4, untouched=3, touches=1)
    most = _flake(emu, "t::most_hits", 9, untouched=0, touches=2)
    now = dt.datetime(2024, 6, 1, tzinfo=dt.timezone.utc)
    digest.build_digest(make_client(emu, write_interval=0), REPO, now)
    (issue,) = [i for i in emu.issues.values() if i["title"].startswith("flake digest")]
    header, *rows = _rows(issue["body"])
    assert header[:4] == ["#", "Test", "Hits", "Ran none of the change"]
    assert [(r[3], r[-1]) for r in rows] == [
        ("0 of 2", f"#{most}"),  # hits first, whatever the share
        ("3 of 4", f"#{high}"),
        ("1 of 4", f"#{low}"),
        ("", f"#{old}"),
    ]
    assert "then by the share of hits that ran none of the change" in issue["body"]


def test_the_digest_has_no_untouched_column_when_no_hit_was_judged() -> None:
    items = [
        {"number": 1, "title": "flake: t::a", "body": format_marker({"id": "t::a", "hits": 2})},
        {"number": 2, "title": "flake: t::b", "body": format_marker({"id": "t::b", "hits": 1})},
    ]
    entries = digest.entries_from(items)
    text = digest.render(REPO, entries, dt.datetime(2024, 6, 1, tzinfo=dt.timezone.utc))
    assert "Ran none of the change" not in text
    assert _rows(text)[0] == ["#", "Test", "Hits", "Last seen", "Age", "Issue"]
