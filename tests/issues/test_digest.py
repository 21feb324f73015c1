"""The rolling flake digest over real HTTP against the loopback GitHub emulator."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import FakeSleep, make_client

from flakewarden.cli import main
from flakewarden.errors import GitHubError
from flakewarden.github.api import GitHubClient
from flakewarden.issues.digest import ranking as digest
from flakewarden.issues.marker import format_marker

REPO = "octo-org/octo-repo"
NOW = dt.datetime(2024, 6, 1, 12, 0, tzinfo=dt.timezone.utc)


def _flake(emu: GitHubEmulator, test_id: str, hits: int, last: str, **extra: object) -> int:
    marker = {"id": test_id, "hits": hits, "first": "2024-05-01T00:00:00Z", "last": last, **extra}
    return int(emu.add_issue(f"flake: {test_id}", format_marker(marker), ("flaky-test",))["number"])


def _digest_issue(emu: GitHubEmulator) -> dict[str, object]:
    (issue,) = [
        i for i in emu.issues.values() if any(lb["name"] == "flake-digest" for lb in i["labels"])
    ]
    return issue


def _rows(body: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip("|"))]
        for line in body.splitlines()
        if re.match(r"\| \d+ \|", line)
    ]


def test_creates_the_digest_ranked_by_hits_then_recency(emulator: GitHubEmulator) -> None:
    a = _flake(emulator, "t::often", 9, "2024-05-20T00:00:00Z")
    b = _flake(emulator, "t::tie_old", 4, "2024-05-02T00:00:00Z")
    c = _flake(emulator, "t::tie_new", 4, "2024-05-30T00:00:00Z")
    _flake(emulator, "t::once", 1, "2024-05-31T00:00:00Z")
    closed = emulator.add_issue(
        "flake: t::fixed", format_marker({"id": "t::fixed", "hits": 50}), ("flaky-test",), "closed"
    )
    emulator.add_issue(
        "pr", format_marker({"id": "t::pr", "hits": 99}), ("flaky-test",), pull_request=True
    )
    result = digest.build_digest(make_client(emulator, write_interval=0), REPO, NOW)
    assert result.created and result.entries == 4
    issue = _digest_issue(emulator)
    assert issue["title"] == "flake digest: octo-org/octo-repo"
    assert [lb["name"] for lb in issue["labels"]] == ["flake-digest"]  # type: ignore[index]
    assert emulator.labels["flake-digest"]["color"] == digest.LABEL_COLOR
    body = str(issue["body"])
    rows = _rows(body)
    assert [r[1] for r in rows] == ["`t::often`", "`t::tie_new`", "`t::tie_old`", "`t::once`"]
    assert [r[2] for r in rows] == ["9", "4", "4", "1"]
    assert rows[0][3] == "2024-05-20" and rows[0][4] == "4 weeks"
    assert rows[0][-1] == f"#{a}" and rows[1][-1] == f"#{c}" and rows[2][-1] == f"#{b}"
    assert f"#{closed['number']}" not in body and "t::pr" not in body
    assert "Quarantine" not in body and "verdict" not in body.lower()
    assert "```mermaid\nxychart-beta" in body
    assert f'x-axis ["#{a}", "#{c}", "#{b}", "#4"]' in body
    assert "bar [9, 4, 4, 1]" in body
    assert "18 hits in total" in body


def test_rewrites_only_its_own_region(emulator: GitHubEmulator) -> None:
    _flake(emulator, "t::a", 2, "2024-05-20T00:00:00Z")
    client = make_client(emulator, write_interval=0)
    digest.build_digest(client, REPO, NOW)
    issue = _digest_issue(emulator)
    issue["body"] = "Team note above.\n\n" + str(issue["body"]) + "\nOwner: @qa-team, see #12.\n"
    head, tail = str(issue["body"]).split(digest.START)[0], str(issue["body"]).split(digest.END)[1]
    _flake(emulator, "t::b", 5, "2024-05-31T00:00:00Z")
    writes_before = len([r for r in emulator.log if r.is_write])
    result = digest.build_digest(client, REPO, NOW)
    assert not result.created
    body = str(issue["body"])
    assert body.startswith(head + digest.START) and head == "Team note above.\n\n"
    assert body.endswith(digest.END + tail) and tail.endswith("\nOwner: @qa-team, see #12.\n")
    assert [r[1] for r in _rows(body)] == ["`t::b`", "`t::a`"]
    assert body.count(digest.START) == 1 and body.count(digest.END) == 1
    assert len([r for r in emulator.log if r.is_write]) == writes_before + 1


def test_shows_quarantine_and_stress_verdict_when_present(emulator: GitHubEmulator) -> None:
    _flake(
        emulator,
        "t::racy",
        7,
        "2024-05-30T00:00:00Z",
        verdict="race",
        verdict_at="2024-05-29T10:00:00Z",
    )
    _flake(
        emulator,
        "t::noisy",
        3,
        "2024-05-30T00:00:00Z",
        verdict="flaky",
        quarantined_at="2024-05-28T00:00:00Z",
    )
    digest.build_digest(make_client(emulator, write_interval=0), REPO, NOW)
    body = str(_digest_issue(emulator)["body"])
    assert "| # | Test | Hits | Last seen | Age | Quarantine | Stress verdict | Issue |" in body
    racy, noisy = _rows(body)
    assert racy[5] == "" and racy[6] == "race (2024-05-29)"
    assert noisy[5] == "quarantined since 2024-05-28" and noisy[6] == "flaky"


def test_hostile_ids_are_inert_in_the_digest() -> None:
    entries = digest.entries_from(
        [
            {
                "number": 1,
                "html_url": "https://github.com/o/r/issues/1",
                "body": format_marker(
                    {"id": "t::x[| @all <b> `]", "hits": 1, "last": "2024-05-01"}
                ),
            }
        ]
    )
    region = digest.render("o/r", entries, NOW)
    row = _rows(region)[0]
    assert len(row) == 6  # the | inside the id did not add a cell
    assert "@all" not in region
    prose = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", region)  # code spans render as text
    assert "<b>" not in prose and "t::x" not in prose


def test_empty_repository_gets_a_calm_digest(emulator: GitHubEmulator) -> None:
    digest.build_digest(make_client(emulator, write_interval=0), REPO, NOW)
    body = str(_digest_issue(emulator)["body"])
    assert "No open flaky-test issues" in body and "mermaid" not in body


def test_digest_of_a_thousand_flakes_costs_twelve_reads_and_one_write() -> None:
    """10 pages of open flakes, 1 of recently closed ones (unverified fixes), 1 digest."""
    with GitHubEmulator() as emu:
        emu.add_label("flaky-test")
        for n in range(1000):
            _flake(
                emu,
                f"tests/test_{n}.py::test_it",
                n % 17 + 1,
                f"2024-05-{n % 28 + 1:02d}T00:00:00Z",
            )
        client = make_client(emu, write_interval=0)
        digest.build_digest(client, REPO, NOW)  # creates the digest issue
        emu.log.clear()
        result = digest.build_digest(client, REPO, NOW)
        reads = [r for r in emu.log if r.method == "GET"]
        writes = [r for r in emu.log if r.is_write]
        assert result.entries == 1000
        assert (len(reads), len(writes)) == (12, 1)
        closed = [r for r in reads if r.query.get("state") == ["closed"]]
        assert len(closed) == 1 and "since" in closed[0].query
        body = str(emu.issues[result.number]["body"])
        assert len(_rows(body)) == digest.TABLE_ROWS
        assert "…and 900 more open flaky-test issues" in body
        assert emu.schema_errors == []


def test_digest_command(
    emulator: GitHubEmulator, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _flake(emulator, "t::a", 2, "2024-05-20T00:00:00Z")
    monkeypatch.setenv("GITHUB_API_URL", emulator.url)
    monkeypatch.setenv("GITHUB_TOKEN", emulator.token)
    monkeypatch.setenv("GITHUB_REPOSITORY", REPO)
    real = GitHubClient.from_env
    monkeypatch.setattr(
        GitHubClient,
        "from_env",
        lambda token=None, env=None, **kw: real(token, env, sleep=FakeSleep(), **kw),
    )
    assert main(["digest"]) == 0
    assert "created the flake digest #2 (1 open flaky tests)" in capsys.readouterr().out
    assert main(["digest"]) == 0
    assert "updated the flake digest #2" in capsys.readouterr().out


def test_digest_command_fails_loudly(
    emulator: GitHubEmulator, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_API_URL", emulator.url)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_notTheRightOne1234")
    monkeypatch.setenv("GITHUB_REPOSITORY", REPO)
    assert main(["digest"]) == 3
    err = capsys.readouterr().err
    assert "401" in err and "GITHUB_TOKEN" in err and "ghp_notTheRightOne1234" not in err
    monkeypatch.delenv("GITHUB_REPOSITORY")
    assert main(["digest"]) == 4
    assert "GITHUB_REPOSITORY" in capsys.readouterr().err


def test_long_notes_above_the_ranking_are_kept_whole_and_the_ranking_clipped(
    emulator: GitHubEmulator,
) -> None:
    """60k characters of notes: the ranking shrinks to fit, the notes stay where they are."""
    for n in range(150):
        _flake(emulator, f"tests/test_{n}.py::test_" + "p" * 190, n + 1, "2024-05-20T00:00:00Z")
    notes = "".join(f"note {n}: " + "n" * 50 + "\n" for n in range(1_000))
    # 1,000 lines of "note N: " + 50 + "\n": 58 characters plus N's digits (2,890 in all).
    assert len(notes) == 1_000 * 58 + 2_890
    client = make_client(emulator, write_interval=0)
    first = digest.build_digest(client, REPO, NOW)
    issue = emulator.issues[first.number]
    issue["body"] = notes + "\n" + str(issue["body"]) + "\nnotes below\n"  # a human edits
    for _ in range(2):
        digest.build_digest(client, REPO, NOW)
        body = str(emulator.issues[first.number]["body"])
        assert len(body) < 65_536
        assert body.startswith(notes + "\n" + digest.START)
        assert body.endswith(digest.END + "\n\nnotes below\n")
        assert body.count(digest.START) == 1 and body.count(digest.END) == 1
        shown = len(_rows(body))
        assert 0 < shown < digest.TABLE_ROWS
        assert f"…and {150 - shown} more open flaky-test issues" in body


def test_notes_that_leave_no_room_are_not_cut(emulator: GitHubEmulator) -> None:
    _flake(emulator, "t::a", 2, "2024-05-20T00:00:00Z")
    client = make_client(emulator, write_interval=0)
    first = digest.build_digest(client, REPO, NOW)
    notes = "n" * 65_400
    emulator.issues[first.number]["body"] = (
        notes + "\n" + str(emulator.issues[first.number]["body"])
    )
    with pytest.raises(GitHubError, match="no room for the ranking"):
        digest.build_digest(client, REPO, NOW)
    assert str(emulator.issues[first.number]["body"]).startswith(notes)


def test_a_ranking_cut_by_an_older_version_is_repaired_in_place(emulator: GitHubEmulator) -> None:
    _flake(emulator, "t::a", 2, "2024-05-20T00:00:00Z")
    client = make_client(emulator, write_interval=0)
    first = digest.build_digest(client, REPO, NOW)
    cut = (
        "my notes\n\n" + digest.START + "\n| 1 | `t::a` | 2 |\n\n---\n"
        "_flakewarden cut this text here: it was 80,000 characters long and GitHub accepts "
        "at most 65,536._\n"
    )
    emulator.issues[first.number]["body"] = cut
    digest.build_digest(client, REPO, NOW)
    body = str(emulator.issues[first.number]["body"])
    assert body.startswith("my notes\n\n" + digest.START)
    assert body.count(digest.START) == 1 and "cut this text" not in body


def test_open_flakes_are_grouped_by_owner_with_nobodys_first(emulator: GitHubEmulator) -> None:
    stamp = "2024-05-20T00:00:00Z"
    alone = _flake(emulator, "t::nobodys", 2, stamp)
    mine = _flake(emulator, "t::alices", 9, stamp)
    shared = _flake(emulator, "t::shared", 5, stamp, owners=["alice", "@acme/cache"])
    team = _flake(emulator, "t::teams", 1, stamp, owners=["@acme/cache"])
    for number, logins in ((mine, ["alice"]), (shared, ["alice"])):
        emulator.issues[number]["assignees"] = [emulator._user(login) for login in logins]
    digest.build_digest(make_client(emulator, write_interval=0), REPO, NOW)
    body = str(_digest_issue(emulator)["body"])
    section = body[body.index("### By owner") :]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "#" in line]
    assert rows == [
        f"| _nobody_ (label `flake-triage`) | 1 | 2 | #{alone} |",
        f"| `alice` | 2 | 14 | #{mine}, #{shared} |",
        f"| `acme/cache` | 2 | 6 | #{shared}, #{team} |",
    ]
    assert "@alice" not in body and "@acme" not in body  # listed, never mentioned


def test_a_close_whose_fix_is_unverified_is_listed(emulator: GitHubEmulator) -> None:
    _flake(emulator, "t::open", 3, "2024-05-20T00:00:00Z")
    check = {"result": "unverified", "verdict": "inconclusive", "runs": 40, "at": "2024-05-30"}
    doubt = emulator.add_issue(
        "flake: t::doubt",
        format_marker({"id": "t::doubt", "hits": 2, "fix_check": check}),
        ("flaky-test",),
        "closed",
    )
    held = {"result": "held", "verdict": "not-reproducible", "runs": 900, "at": "2024-05-30"}
    emulator.add_issue(
        "flake: t::fixed",
        format_marker({"id": "t::fixed", "hits": 2, "fix_check": held}),
        ("flaky-test",),
        "closed",
    )
    digest.build_digest(make_client(emulator, write_interval=0), REPO, NOW)
    body = str(_digest_issue(emulator)["body"])
    section = body[body.index("### Closed, fix unverified") :]
    assert f"| #{doubt['number']} | `t::doubt` | inconclusive | 40 | 2024-05-30 |" in section
    assert "t::fixed" not in body
