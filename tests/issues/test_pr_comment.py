"""``flakewarden comment``: one pull-request comment, edited in place, through the emulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.github_emulator import Fault, GitHubEmulator, LoggedRequest
from helpers.github_fixtures import emulator_env, flaky, passed, write_report

from flakewarden.cli import main
from flakewarden.issues.pr_comment import marker_line, name_of


def _pull_request(emu: GitHubEmulator) -> int:
    issue = emu.add_issue("Make the cache faster", "the change")
    issue["pull_request"] = {"url": f"https://api.github.com/repos/{emu.full_name}/pulls/1"}
    return int(issue["number"])


def _comment(tmp_path: Path, tests: list[Any], *extra: str, name: str = "rep") -> int:
    report = write_report(tmp_path / name, tests)
    return main(["comment", "--report-dir", str(report), *extra])


def _ours(emu: GitHubEmulator, pr: int) -> list[dict[str, Any]]:
    return [c for c in emu.comments[pr] if name_of(c["body"]) == "flakewarden"]


def test_one_comment_per_pull_request_is_edited_in_place(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    pr = _pull_request(emulator)
    monkeypatch.setenv("GITHUB_REF", f"refs/pull/{pr}/merge")
    assert _comment(tmp_path, [flaky("tests/test_a.py::test_race"), passed("t.py::ok")]) == 0
    (first,) = _ours(emulator, pr)
    assert "### flakewarden: 0 failed, 1 flaky of 2 tests" in first["body"]
    assert "`tests/test_a.py::test_race`" in first["body"]
    # The source link points at the commit that ran, and the run is linked.
    assert "/octo-org/octo-repo/blob/0123456789abcdef" in first["body"]
    assert "https://github.com/octo-org/octo-repo/actions/runs/4242" in first["body"]
    # The next push: same comment, new text.
    assert _comment(tmp_path, [flaky("tests/test_b.py::test_other")], name="rep2") == 0
    (second,) = _ours(emulator, pr)
    assert second["id"] == first["id"] and "test_other" in second["body"]
    assert "test_race" not in second["body"]
    # A green push says so in the same comment.
    assert _comment(tmp_path, [passed("t.py::ok")], name="rep3") == 0
    (third,) = _ours(emulator, pr)
    assert third["id"] == first["id"]
    assert "no failed or flaky tests among 1" in third["body"]
    assert len(emulator.comments[pr]) == 1
    assert len(emulator.requests_for("POST", "/comments$")) == 1


def test_a_green_run_creates_no_comment(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    pr = _pull_request(emulator)
    assert _comment(tmp_path, [passed("t.py::ok")], "--pr", str(pr)) == 0
    assert emulator.comments[pr] == []
    assert f"nothing to say, and no comment yet, on pull request #{pr}" in capsys.readouterr().out


def test_a_comment_by_someone_else_holding_the_marker_is_never_edited(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    pr = _pull_request(emulator)
    copied = emulator.add_comment(pr, marker_line("flakewarden") + "\nI copied your comment")
    copied["user"] = {**copied["user"], "login": "mallory", "id": 666, "type": "User"}
    before = copied["body"]
    assert _comment(tmp_path, [flaky("t.py::test_x")], "--pr", str(pr)) == 0
    assert copied["body"] == before
    bots = [c for c in emulator.comments[pr] if c["user"]["type"] == "Bot"]
    assert len(bots) == 1 and "t.py::test_x" in bots[0]["body"]


def test_two_jobs_creating_the_comment_at_once_leave_one(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    pr = _pull_request(emulator)

    def rival(request: LoggedRequest) -> None:  # another job creates one just before ours
        if (
            request.method == "POST"
            and request.path.endswith("/comments")
            and not _ours(emulator, pr)
        ):
            emulator.add_comment(pr, marker_line("flakewarden") + "\nanother job's text")

    emulator.before = rival
    assert _comment(tmp_path, [flaky("t.py::test_x")], "--pr", str(pr)) == 0
    emulator.before = None
    (kept,) = _ours(emulator, pr)
    assert "t.py::test_x" in kept["body"]  # the older comment stays, with this run's text
    assert len(emulator.requests_for("DELETE")) == 1


def test_named_comments_are_kept_apart(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    pr = _pull_request(emulator)
    for name in ("unit", "integration"):
        assert _comment(tmp_path, [flaky(f"t.py::{name}")], "--pr", str(pr), "--name", name) == 0
    assert sorted(name_of(c["body"]) or "" for c in emulator.comments[pr]) == [
        "integration",
        "unit",
    ]
    assert _comment(tmp_path, [], "--pr", str(pr), "--name", "   ") == 4
    assert _comment(tmp_path, [], "--pr", str(pr), "--name", "bad\nname") == 4
    # A workflow's name is anything: it cannot close the marker's comment.
    weird = "CI (tests) --> <b>@team</b>"
    assert _comment(tmp_path, [flaky("t.py::w")], "--pr", str(pr), "--name", weird) == 0
    (found,) = [c for c in emulator.comments[pr] if name_of(c["body"]) == weird]
    assert found["body"].splitlines()[0].count("-->") == 1 and "@team" not in found["body"]


def test_hostile_test_ids_are_inert_in_the_comment(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    pr = _pull_request(emulator)
    hostile = "t.py::test[@org/team <img src=x onerror=alert(1)> --> ](javascript:x)|"
    assert _comment(tmp_path, [flaky(hostile, message="@admin <script>")], "--pr", str(pr)) == 0
    (comment,) = _ours(emulator, pr)
    body = comment["body"]
    # The id is shown only as a code span (rendered literally), its "|" escaped for the
    # table and its "@" broken by a zero-width space: no tag, no mention, no link.
    span = "`t.py::test[@\u200borg/team <img src=x onerror=alert(1)> --> ](javascript:x)\\|`"
    assert body.count("<img") == 1 and span in body
    assert "@\u200badmin &lt;script&gt;" in body and "<script>" not in body
    assert "@org" not in body and "@admin" not in body
    assert "](javascript:" not in body.replace(span, "")


def test_the_pull_request_is_found_in_the_event_payload(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    pr = _pull_request(emulator)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": pr}}), encoding="utf-8")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    assert _comment(tmp_path, [flaky("t.py::test_x")]) == 0
    assert len(_ours(emulator, pr)) == 1


def test_outside_a_pull_request_nothing_is_asked_of_github(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    monkeypatch.setenv("GITHUB_REF", "refs/heads/main")
    assert _comment(tmp_path, [flaky("t.py::test_x")]) == 0
    assert "not a pull request run" in capsys.readouterr().out
    assert emulator.log == []


def test_an_outage_is_one_warning_and_exit_zero(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    pr = _pull_request(emulator)
    emulator.faults.append(Fault(502, method="GET", path="/comments$", times=50))
    assert _comment(tmp_path, [flaky("t.py::test_x")], "--pr", str(pr), "--deadline", "5") == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"pull request comment on #{pr} not posted" in err
    assert emulator.comments[pr] == []
