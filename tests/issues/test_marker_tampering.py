"""A hostile or broken marker affects only its own issue, and no hit is lost or invented.

Anyone who can edit an issue can edit its hidden marker. Each test seeds the
loopback emulator with such an issue and runs the real commands against it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import emulator_env, flaky, write_report

from flakewarden.cli import main
from flakewarden.github.api import BODY_LIMIT
from flakewarden.issues.marker import PREFIX, SUFFIX, format_marker, read_marker
from flakewarden.issues.records import LABEL

TAMPERED = "tests/a.py::test_tampered"
OTHER = "tests/a.py::test_other"
NEW = "tests/a.py::test_new"
# What a marker's JSON says instead of a count, as a human (or an attacker) typed it.
BAD_HITS = {
    "string": '"abc"',
    "list": "[1, 2]",
    "overflow": "1e400",
    "negative": "-5",
    "fraction": "2.9",
    "huge": "9" * 5000,
    "bool": "true",
}


def _raw_marker(test_id: str, hits: str) -> str:
    first = '"first": "2024-05-01T00:00:00Z"'
    return f'{PREFIX}{{"id": {json.dumps(test_id)}, "hits": {hits}, {first}}}{SUFFIX}'


def _seed(emu: GitHubEmulator, marker_line: str, notes: str = "## Investigation\nmine\n") -> int:
    issue = emu.add_issue(f"flake: {TAMPERED}", marker_line + "\n\n" + notes, (LABEL,))
    return int(issue["number"])


def _issues_of(emu: GitHubEmulator, test_id: str) -> list[dict[str, Any]]:
    return [
        i
        for i in emu.issues.values()
        if (read_marker(i["body"]) or {}).get("id") == test_id or i["title"] == f"flake: {test_id}"
    ]


def _run_issues(tmp_path: Path, *test_ids: str) -> int:
    report = write_report(tmp_path / "rep", [flaky(t) for t in test_ids])
    return main(["issues", "--report-dir", str(report)])


@pytest.mark.parametrize("kind", sorted(BAD_HITS))
def test_tampered_count_is_reported_once_and_left_alone(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    emulator_env(monkeypatch, emulator)
    number = _seed(emulator, _raw_marker(TAMPERED, BAD_HITS[kind]))
    body_before = emulator.issues[number]["body"]
    other = emulator.add_issue(
        f"flake: {OTHER}", format_marker({"id": OTHER, "hits": 4}) + "\n", (LABEL,)
    )["number"]
    assert _run_issues(tmp_path, TAMPERED, OTHER, NEW) == 0
    out, err = capsys.readouterr()
    # The tampered issue: untouched, not duplicated, the recurrence told in a comment.
    assert emulator.issues[number]["body"] == body_before
    assert [i["number"] for i in _issues_of(emulator, TAMPERED)] == [number]
    assert "not counted" in emulator.comments[number][-1]["body"]
    # The others: filed as if nothing had happened.
    assert read_marker(emulator.issues[other]["body"])["hits"] == 5
    assert [read_marker(i["body"])["hits"] for i in _issues_of(emulator, NEW)] == [1]
    # One warning, naming the issue by number, once.
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1
    assert warnings[0].count(f"issue #{number}: marker is malformed") == 1
    assert "1 of 3 flaky tests" in warnings[0]
    assert f"#{other}" in out and "opened" in out


def test_marker_that_is_not_json_is_not_reset_or_doubled(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    line = f'{PREFIX}{{"id": {json.dumps(TAMPERED)}, "hits": 7,, }}{SUFFIX}'
    number = _seed(emulator, line)
    body_before = emulator.issues[number]["body"]
    assert _run_issues(tmp_path, TAMPERED) == 0
    err = capsys.readouterr().err
    body = emulator.issues[number]["body"]
    assert body == body_before and body.count(PREFIX) == 1
    assert len(emulator.issues) == 1
    assert f"issue #{number}: marker is malformed (not valid JSON)" in err


def test_quarantined_issue_with_a_tampered_count_is_reported_once(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    line = f'{PREFIX}{{"id": {json.dumps(TAMPERED)}, "hits": 3, "runs": "many"}}{SUFFIX}'
    number = int(emulator.add_issue(f"flake: {TAMPERED}", line, (LABEL, "quarantined"))["number"])
    assert _run_issues(tmp_path, TAMPERED) == 0
    err = capsys.readouterr().err
    assert emulator.issues[number]["body"] == line
    assert len(emulator.issues) == 1
    assert err.count(f"issue #{number}") == 1 and "runs: " in err


# -- the digest reads the same markers -------------------------------------------------------


def test_digest_survives_tampered_counts_and_does_not_count_them(
    emulator: GitHubEmulator, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator_env(monkeypatch, emulator)
    good = emulator.add_issue(
        f"flake: {OTHER}", format_marker({"id": OTHER, "hits": 3}) + "\n", (LABEL,)
    )["number"]
    overflow = emulator.add_issue("flake: t::inf", _raw_marker("t::inf", "1e400"), (LABEL,))
    negative = emulator.add_issue("flake: t::neg", _raw_marker("t::neg", "-5"), (LABEL,))
    assert main(["digest"]) == 0
    capsys.readouterr()
    (digest,) = emulator.open_issues("flake-digest")
    body = digest["body"]
    assert "3 open `flaky-test` issues · 3 hits in total" in body
    assert f"#{overflow['number']}, #{negative['number']}" in body
    rows = {line.split("|")[-2].strip(): line for line in body.splitlines() if "| #" in line}
    assert "| 3 |" in rows[f"#{good}"]
    assert "| ? |" in rows[f"#{overflow['number']}"] and "| ? |" in rows[f"#{negative['number']}"]


# -- a test id longer than an issue body -----------------------------------------------------


def test_huge_test_id_is_found_again_instead_of_filed_every_run(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    huge = "tests/a.py::test_p[" + "x" * 70_000 + "]"
    for _ in range(3):
        assert _run_issues(tmp_path, huge) == 0
    _, err = capsys.readouterr()
    assert "warning" not in err
    (issue,) = emulator.issues.values()
    assert len(issue["body"]) < BODY_LIMIT
    marker = read_marker(issue["body"])
    assert marker is not None and marker["hits"] == 3
    assert len(marker["id_sha256"]) == 64 and marker["id"].startswith("tests/a.py::test_p[xxx")
    assert "cut this text" not in issue["body"]  # nothing had to be capped
    assert len(issue["title"]) <= 256
