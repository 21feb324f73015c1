"""A new flake issue goes to its test's owners: CODEOWNERS, or the config's ``owners`` over
it; nobody's test is labelled for triage. Real ``flakewarden issues`` runs, emulator-backed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import emulator_env, flaky, write_report

from flakewarden.cli import main
from flakewarden.issues.marker import read_marker

CODEOWNERS = """\
# Everything else is the platform team's.
*                     @acme/platform
/tests/cache/         @alice @acme/cache-team   # the cache's tests
/tests/legacy/
"""


def _checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str = "") -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".github").mkdir()
    (root / ".github" / "CODEOWNERS").write_text(CODEOWNERS, encoding="utf-8")
    if config:
        (root / ".github" / "flakewarden.yml").write_text(config, encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def _file(root: Path, test_file: str, test_id: str) -> int:
    test = flaky(test_id)
    test.file = test_file
    report = write_report(root / "report", [test])
    data = json.loads((report / "report.json").read_text(encoding="utf-8"))
    data["rootdir"] = str(root)
    (report / "report.json").write_text(json.dumps(data), encoding="utf-8")
    return main(["issues", "--report-dir", str(report)])


def _issue(emu: GitHubEmulator, test_id: str) -> dict[str, Any]:
    (issue,) = [i for i in emu.issues.values() if i["title"] == f"flake: {test_id}"]
    return issue


def test_a_new_flake_is_assigned_to_the_owners_codeowners_names(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    emulator.assignable = {"alice"}
    root = _checkout(tmp_path, monkeypatch)
    tid = "tests/cache/test_fill.py::test_concurrent_fill"
    assert _file(root, "tests/cache/test_fill.py", tid) == 0
    issue = _issue(emulator, tid)
    assert [a["login"] for a in issue["assignees"]] == ["alice"]
    assert [lb["name"] for lb in issue["labels"]] == ["flaky-test"]
    body = issue["body"]
    # The team is mentioned once (it cannot be assigned); the rule that decided is quoted.
    assert body.count("@acme/cache-team") == 1 and "@alice" not in body
    assert (
        "assigned to `alice`; @acme/cache-team: `tests/cache/test_fill.py` matches "
        # The quoted line mentions nobody: its "@" are broken by a zero-width space.
        "`/tests/cache/ @\u200balice @\u200bacme/cache-team # the cache's tests` "
        "(line 3 of `.github/CODEOWNERS`)."
    ) in body
    assert read_marker(body)["owners"] == ["alice", "@acme/cache-team"]


def test_a_flake_nobody_owns_is_labelled_for_triage(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    root = _checkout(tmp_path, monkeypatch)
    tid = "tests/legacy/test_old.py::test_x"
    assert _file(root, "tests/legacy/test_old.py", tid) == 0
    issue = _issue(emulator, tid)
    assert issue["assignees"] == []
    assert sorted(lb["name"] for lb in issue["labels"]) == ["flake-triage", "flaky-test"]
    assert emulator.labels["flake-triage"]["color"] == "fbca04"
    assert (
        "Nobody: `/tests/legacy/` (line 4 of `.github/CODEOWNERS`) leaves "
        "`tests/legacy/test_old.py` without owners. Labelled `flake-triage` for triage."
    ) in issue["body"]
    assert "owners" not in read_marker(issue["body"])


def test_the_configs_owners_win_and_name_the_triage_label(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    emulator.assignable = {"bob", "alice"}
    config = (
        'owners:\n  "tests/cache/": ["@bob"]\n  "*.txt": "qa@example.com"\n'
        "triage_label: needs-owner\n"
    )
    root = _checkout(tmp_path, monkeypatch, config)
    assert _file(root, "tests/cache/test_fill.py", "tests/cache/test_fill.py::test_a") == 0
    issue = _issue(emulator, "tests/cache/test_fill.py::test_a")
    assert [a["login"] for a in issue["assignees"]] == ["bob"]
    assert "matches `tests/cache/: @\u200bbob` (the config's owners)" in issue["body"]
    # No config rule matches: CODEOWNERS decides (here: nobody), with the config's label.
    assert _file(root, "tests/legacy/test_old.py", "tests/legacy/test_old.py::test_b") == 0
    other = _issue(emulator, "tests/legacy/test_old.py::test_b")
    assert "needs-owner" in {lb["name"] for lb in other["labels"]}


def test_an_owner_github_cannot_assign_still_gets_the_issue_filed(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    root = _checkout(tmp_path, monkeypatch)  # alice has no push access here
    tid = "tests/cache/test_fill.py::test_y"
    assert _file(root, "tests/cache/test_fill.py", tid) == 0
    issue = _issue(emulator, tid)
    assert issue["assignees"] == [] and "@acme/cache-team" in issue["body"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "assigning alice" in err and "opened unassigned" in err


def test_a_run_in_a_subfolder_is_matched_by_its_path_in_the_repository(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    emulator.assignable = {"carol"}
    root = _checkout(tmp_path, monkeypatch)
    (root / ".github" / "CODEOWNERS").write_text("/services/api/tests/ @carol\n", "utf-8")
    project = root / "services" / "api"
    project.mkdir(parents=True)
    test = flaky("tests/test_api.py::test_z")
    test.file = "tests/test_api.py"
    report = write_report(root / "report", [test])
    data = json.loads((report / "report.json").read_text(encoding="utf-8"))
    data["rootdir"] = str(project)
    (report / "report.json").write_text(json.dumps(data), encoding="utf-8")
    assert main(["issues", "--report-dir", str(report)]) == 0
    issue = _issue(emulator, "tests/test_api.py::test_z")
    assert [a["login"] for a in issue["assignees"]] == ["carol"]
    assert "`services/api/tests/test_api.py` matches" in issue["body"]
