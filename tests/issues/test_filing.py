"""One issue per flaky test, over real HTTP against the loopback GitHub emulator."""

from __future__ import annotations

import datetime as dt
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers.github_emulator import Fault, GitHubEmulator, LoggedRequest
from helpers.github_fixtures import (
    FakeSleep,
    emulator_env,
    flaky,
    make_client,
    passed,
    write_report,
)

from flakewarden.cli import main
from flakewarden.github.api import GitHubClient
from flakewarden.issues.filing import file_flakes
from flakewarden.issues.hit_ledger import SETTLED, iso, record_keys
from flakewarden.issues.marker import (
    format_marker,
    parse_time,
    read_marker,
    replace_marker,
    update_marker,
)
from flakewarden.issues.records import LABEL, RunContext

REPO = "octo-org/octo-repo"
T0 = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.timezone.utc)
T1 = dt.datetime(2024, 5, 8, 9, 30, tzinfo=dt.timezone.utc)
CTX = RunContext(REPO, "https://github.com", "4242", "1", "0123456789abcdef0123", "main")


def _file(
    emu: GitHubEmulator, tests: list[Any], now: dt.datetime = T0, ctx: RunContext = CTX, **kw: Any
) -> Any:
    return file_flakes(make_client(emu, write_interval=0, **kw), REPO, tests, ctx, now)


def _issues_for(emu: GitHubEmulator, test_id: str) -> list[dict[str, Any]]:
    return [
        i
        for i in emu.issues.values()
        if "pull_request" not in i and (read_marker(i["body"]) or {}).get("id") == test_id
    ]


def _without_code(markdown: str) -> str:
    """Markdown with fenced blocks and code spans removed: what renders as prose or HTML."""
    markdown = re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1\s*$", "", markdown)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", markdown)


# -- the marker ------------------------------------------------------------------------------


def test_marker_round_trips_and_cannot_close_the_comment() -> None:
    data = {"id": "tests/t.py::test[a-->b<!--c&d @team]", "hits": 2, "first": "x", "last": "y"}
    line = format_marker(data)
    assert line.startswith("<!-- flakewarden: {") and line.endswith("} -->")
    assert line.count("-->") == 1 and line.count("<!--") == 1 and "\n" not in line
    assert "@" not in line
    assert read_marker(f"notes\n{line}\nmore") == data


def test_replace_marker_rewrites_only_that_line() -> None:
    body = "top notes\n" + format_marker({"id": "t", "hits": 1}) + "\n\n## Investigation\nmine\n"
    new = update_marker(body, hits=2, verdict="race")
    assert new.splitlines()[0] == "top notes"
    assert new.splitlines()[2:] == body.splitlines()[2:]
    assert read_marker(new) == {"id": "t", "hits": 2, "verdict": "race"}


def test_replace_marker_puts_a_missing_marker_first() -> None:
    assert replace_marker("notes", {"id": "t"}).splitlines() == [
        format_marker({"id": "t"}),
        "notes",
    ]
    assert read_marker("<!-- flakewarden: not json -->") is None
    with pytest.raises(ValueError):
        update_marker("no marker", hits=1)


# -- filing ----------------------------------------------------------------------------------


def test_first_flake_creates_an_issue_with_label_marker_and_run_link(
    emulator: GitHubEmulator,
) -> None:
    result = _file(emulator, [flaky("tests/test_x.py::test_a", message="AssertionError: 1 != 2")])
    assert [(f.action, f.number, f.hits) for f in result.filed] == [("created", 1, 1)]
    assert result.errors == []
    issue = emulator.issues[1]
    assert issue["title"] == "flake: tests/test_x.py::test_a"
    assert [lb["name"] for lb in issue["labels"]] == [LABEL]
    assert emulator.labels[LABEL]["color"] == "d93f0b"  # created by us, not implicitly
    body = issue["body"]
    marker = read_marker(body)
    assert marker is not None
    # The run that opened it is its first record; the checkpoint counts from the start.
    assert re.fullmatch(r"local-[0-9a-f]{24}", marker.pop("origin"))
    assert marker == {
        "id": "tests/test_x.py::test_a",
        "hits": 1,
        "first": "2024-05-01T12:00:00Z",
        "last": "2024-05-01T12:00:00Z",
        "ledger": {"before": None, "count": 0, "edge": []},
    }
    assert "https://github.com/octo-org/octo-repo/actions/runs/4242" in body
    assert "| 1 | failed | call |" in body and "| 2 | passed |" in body
    assert "| AssertionError: 1 != 2 |" in body  # the first failure line
    assert "### Investigation" in body


def test_recurrence_comments_and_bumps_only_the_marker(emulator: GitHubEmulator) -> None:
    test = flaky("tests/test_x.py::test_a")
    _file(emulator, [test], T0)
    issue = emulator.issues[1]
    notes = "\n\nSuspect: the cache warms up in another thread. -- alice\n"
    extra = {"verdict": "race", "verdict_at": "2024-05-02T00:00:00Z", "runs": 200}
    issue["body"] = update_marker(issue["body"], **extra) + notes
    before = issue["body"]
    ctx = RunContext(REPO, "https://github.com", "5555", "2", "fedcba9876543210", "feature/x")
    result = _file(emulator, [test], T1, ctx)
    assert [(f.action, f.number, f.hits) for f in result.filed] == [("recurred", 1, 2)]
    after = emulator.issues[1]["body"]
    assert after.splitlines()[1:] == before.splitlines()[1:]  # everything but the marker kept
    (comment,) = emulator.comments[1]
    origin = read_marker(before)["origin"]
    recorded = record_keys(comment["body"])
    assert len(recorded) == 1 and origin not in recorded  # this run's key, once
    posted = parse_time(comment["created_at"])
    assert posted is not None
    assert read_marker(after) == {
        "id": "tests/test_x.py::test_a",
        "hits": 2,
        "first": "2024-05-01T12:00:00Z",
        "last": "2024-05-08T09:30:00Z",
        "origin": origin,
        # Moved to ten minutes before this run's record: both records are younger.
        "ledger": {"before": iso(posted - SETTLED), "count": 0, "edge": []},
        **extra,
    }
    assert "https://github.com/octo-org/octo-repo/actions/runs/5555/attempts/2" in comment["body"]
    assert "`feature/x`" in comment["body"]
    assert len(emulator.issues) == 1


def test_closed_issue_is_reopened_because_the_fix_did_not_hold(emulator: GitHubEmulator) -> None:
    marker = {
        "id": "tests/test_x.py::test_a",
        "hits": 5,
        "first": "2024-01-01T00:00:00Z",
        "last": "x",
    }
    emulator.add_issue(
        "flake: tests/test_x.py::test_a", format_marker(marker), (LABEL,), state="closed"
    )
    result = _file(emulator, [flaky("tests/test_x.py::test_a")])
    assert [(f.action, f.number, f.hits) for f in result.filed] == [("reopened", 1, 6)]
    assert emulator.issues[1]["state"] == "open"
    assert emulator.issues[1]["state_reason"] == "reopened"
    assert "fix did not hold" in emulator.comments[1][0]["body"]
    assert len(emulator.issues) == 1


def test_open_issue_wins_over_closed_and_pull_requests_are_skipped(
    emulator: GitHubEmulator,
) -> None:
    tid = "tests/test_x.py::test_a"
    body = format_marker({"id": tid, "hits": 1})
    emulator.add_issue("a pull request that quotes the marker", body, (LABEL,), pull_request=True)
    emulator.add_issue("flake: " + tid, body, (LABEL,), state="closed")
    emulator.add_issue("flake: " + tid, format_marker({"id": tid, "hits": 3}), (LABEL,))
    result = _file(emulator, [flaky(tid)])
    assert [(f.action, f.number, f.hits) for f in result.filed] == [("recurred", 3, 4)]
    assert emulator.issues[1]["body"] == body and emulator.comments[1] == []
    assert emulator.issues[2]["state"] == "closed"


def test_only_a_pull_request_with_the_marker_means_a_new_issue(emulator: GitHubEmulator) -> None:
    tid = "tests/test_x.py::test_a"
    emulator.add_issue("pr", format_marker({"id": tid, "hits": 9}), (LABEL,), pull_request=True)
    result = _file(emulator, [flaky(tid)])
    assert [(f.action, f.number) for f in result.filed] == [("created", 2)]


def test_issue_whose_marker_was_deleted_is_found_by_title(emulator: GitHubEmulator) -> None:
    tid = "tests/test_x.py::test_a"
    emulator.add_issue("flake: " + tid, "our notes only", (LABEL,))
    result = _file(emulator, [flaky(tid)])
    assert [(f.action, f.number, f.hits) for f in result.filed] == [("recurred", 1, 1)]
    body = emulator.issues[1]["body"]
    assert read_marker(body)["id"] == tid and body.endswith("our notes only")


def test_deleted_marker_of_an_id_with_folded_whitespace_is_found_by_title(
    emulator: GitHubEmulator,
) -> None:
    tid = "tests/test_x.py::test_p[a  b\nc]"  # the title folds the spaces and the break
    emulator.add_issue("flake: tests/test_x.py::test_p[a b c]", "our notes only", (LABEL,))
    result = _file(emulator, [flaky(tid)])
    assert [(f.action, f.number) for f in result.filed] == [("recurred", 1)]
    marker = read_marker(emulator.issues[1]["body"])
    assert marker is not None and marker["id"] == tid and "from_title" not in marker
    assert len(emulator.issues) == 1


def test_existing_label_is_not_recreated_and_lookup_is_by_listing(emulator: GitHubEmulator) -> None:
    emulator.add_label(LABEL, "000000")
    _file(emulator, [flaky("a::b"), flaky("a::c")])
    assert emulator.labels[LABEL]["color"] == "000000"
    assert emulator.requests_for("POST", "/labels$") == []
    assert emulator.requests_for("GET", "/search") == []
    assert len(emulator.requests_for("GET", "/labels/")) == 1  # checked once per run


def test_hostile_test_id_and_failure_text_stay_inert(emulator: GitHubEmulator) -> None:
    tid = "tests/test_x.py::test_p[@octo-org/admins -->]"
    text = "E   assert '<img src=x onerror=alert(1)>' ```` @alice -->"
    _file(emulator, [flaky(tid, message=text, longrepr=text)])
    body = emulator.issues[1]["body"]
    assert read_marker(body)["id"] == tid
    marker_line, rest = body.split("\n", 1)
    assert marker_line.endswith("} -->") and marker_line.count("-->") == 1
    assert "@octo-org" not in body and "@alice" not in body
    assert "`````text\n" + text.replace("@", "@\u200b") + "\n`````" in rest  # longer fence
    # Outside code, nothing is HTML: no tag, no comment end, no comment start.
    prose = _without_code(rest)
    assert "<img" not in prose and "-->" not in prose and "<!--" not in prose
    assert "&lt;img src=x" in prose


def test_concurrent_shards_leave_one_issue_with_all_hits() -> None:
    """Two jobs list before either creates; the lower number survives with both hits."""
    with GitHubEmulator() as emu:
        listed = threading.Barrier(2, timeout=20)

        def hold(request: LoggedRequest) -> None:
            if request.method == "GET" and request.query.get("state") == ["all"]:
                listed.wait()

        emu.before = hold
        results: list[Any] = []
        threads = [
            threading.Thread(
                target=lambda: results.append(_file(emu, [flaky("tests/t.py::test_race")]))
            )
            for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(f.action for r in results for f in r.filed) == ["created", "merged"]
        open_issues = emu.open_issues(LABEL)
        assert [i["number"] for i in open_issues] == [1]
        assert read_marker(open_issues[0]["body"])["hits"] == 2
        loser = emu.issues[2]
        assert loser["state"] == "closed" and loser["state_reason"] == "not_planned"
        assert read_marker(loser["body"])["duplicate_of"] == 1
        assert "Duplicate of #1" in emu.comments[2][-1]["body"]
        assert all(f.number == 1 for r in results for f in r.filed)
        assert emu.schema_errors == []


def test_duplicate_created_elsewhere_after_our_listing_is_merged(emulator: GitHubEmulator) -> None:
    """Another job's issue for the same test appears between our listing and our create."""
    tid = "tests/t.py::test_race"

    def rival(request: LoggedRequest) -> None:
        if request.method == "POST" and request.path.endswith("/issues") and not emulator.issues:
            emulator.add_issue("flake: " + tid, format_marker({"id": tid, "hits": 1}), (LABEL,))

    emulator.before = rival
    result = _file(emulator, [flaky(tid)])
    assert [(f.action, f.number, f.hits) for f in result.filed] == [("merged", 1, 2)]
    assert emulator.issues[2]["state"] == "closed"
    ours = read_marker(emulator.issues[2]["body"])
    assert ours["duplicate_of"] == 1
    # Our run's hit is recorded on the winner under our issue's origin, then counted there.
    (moved,) = emulator.comments[1]
    assert record_keys(moved["body"]) == {ours["origin"]: 1}
    assert read_marker(emulator.issues[1]["body"])["hits"] == 2


def test_leftover_duplicates_are_merged_once_on_recurrence(emulator: GitHubEmulator) -> None:
    tid = "tests/t.py::test_a"
    emulator.add_issue("flake: " + tid, format_marker({"id": tid, "hits": 2}), (LABEL,))
    emulator.add_issue("flake: " + tid, format_marker({"id": tid, "hits": 3}), (LABEL,))
    _file(emulator, [flaky(tid)])
    assert read_marker(emulator.issues[1]["body"])["hits"] == 2 + 1 + 3
    assert emulator.issues[2]["state"] == "closed"
    _file(emulator, [flaky(tid)], T1)  # the closed duplicate is never counted again
    assert read_marker(emulator.issues[1]["body"])["hits"] == 7
    assert emulator.issues[2]["state"] == "closed"


# -- fail-open -------------------------------------------------------------------------------


def test_failed_lookup_files_a_fresh_issue(emulator: GitHubEmulator) -> None:
    emulator.faults.append(Fault(500, method="GET", path="/issues$", times=20))
    result = _file(emulator, [flaky("a::b")], max_retries=1)
    assert [f.action for f in result.filed] == ["created"]
    assert "listing flaky-test issues" in result.errors[0]
    assert len(emulator.open_issues(LABEL)) == 1


def test_a_failed_write_skips_one_test_not_the_rest(emulator: GitHubEmulator) -> None:
    emulator.faults.append(Fault(502, method="POST", path="/issues$", times=2))
    result = _file(emulator, [flaky("a::first"), flaky("a::second")], max_retries=1)
    assert result.not_filed == ["a::first"]
    assert [f.test_id for f in result.filed] == ["a::second"]
    assert "1 of 2 flaky tests" in result.warning(2)


def test_permission_error_stops_after_the_first_refusal() -> None:
    with GitHubEmulator(read_only_tokens=("ghs_ro",)) as emu:
        client = GitHubClient("ghs_ro", api_url=emu.url, sleep=FakeSleep(), write_interval=0)
        result = file_flakes(client, REPO, [flaky("a::b"), flaky("a::c"), flaky("a::d")], CTX, T0)
        assert result.not_filed == ["a::b", "a::c", "a::d"]
        assert len([r for r in emu.log if r.is_write]) == 1
        assert "issues: write" in result.warning(3)


# -- the command ----------------------------------------------------------------------------


def _report(tmp_path: Path) -> Path:
    return write_report(
        tmp_path / "rep",
        [flaky("tests/a.py::test_one"), passed("tests/a.py::ok"), flaky("tests/a.py::test_two", 2)],
    )


def test_issues_command_files_and_reports(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    code = main(["issues", "--report-dir", str(_report(tmp_path))])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert "FLAKY-TEST-DETECTED: tests/a.py::test_one (1/2 attempts failed, then passed)" in out
    assert "FLAKY-TEST-DETECTED: tests/a.py::test_two (2/3 attempts failed, then passed)" in out
    assert "tests/a.py::test_one: opened #1" in out
    assert len(emulator.open_issues(LABEL)) == 2


def test_bad_token_warns_once_and_keeps_exit_code_zero(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator, token="ghp_wrongTOKENvalue999")
    code = main(["issues", "--report-dir", str(_report(tmp_path))])
    out, err = capsys.readouterr()
    assert code == 0
    assert out.count("FLAKY-TEST-DETECTED: ") == 2
    assert err.count("warning") == 1 and "GITHUB_TOKEN" in err and "401" in err
    assert "ghp_wrongTOKENvalue999" not in out + err
    assert len(emulator.log) == 1  # stopped at the refusal


def test_no_token_warns_what_to_set_without_any_request(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)  # an API that would answer, so a request would be seen
    monkeypatch.delenv("GITHUB_TOKEN")
    code = main(["issues", "--report-dir", str(_report(tmp_path))])
    out, err = capsys.readouterr()
    assert code == 0 and out.count("FLAKY-TEST-DETECTED") == 2
    assert err.count("warning") == 1 and "set GITHUB_TOKEN" in err
    assert emulator.log == []


def test_on_actions_the_warning_is_an_annotation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator_env(monkeypatch, None)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert main(["issues", "--report-dir", str(_report(tmp_path))]) == 0
    out, err = capsys.readouterr()
    assert out.count("::warning title=flakewarden issues::") == 1 and "warning" not in err


def test_no_flaky_tests_needs_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator_env(monkeypatch, None)
    report = write_report(tmp_path / "rep", [passed("a::ok")])
    assert main(["issues", "--report-dir", str(report)]) == 0
    out, err = capsys.readouterr()
    assert "no flaky tests" in out and err == ""


def test_missing_report_is_an_error_not_a_silent_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator_env(monkeypatch, None)
    assert main(["issues", "--report-dir", str(tmp_path / "nowhere")]) == 3
    assert "report.json not found: run flakewarden run first" in capsys.readouterr().err


def test_unknown_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["issues", "--bogus"]) == 4
