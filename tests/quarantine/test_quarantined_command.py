"""``flakewarden quarantined``: the set read from GitHub, written for ``--quarantined-file``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.github_emulator import GitHubEmulator

from flakewarden.issues.marker import format_marker


def quarantined(
    args: list[str], env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "FLAKEWARDEN"))}
    return subprocess.run(
        [sys.executable, "-m", "flakewarden", "quarantined", *args],
        env={**base, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_writes_the_open_quarantined_ids_and_nothing_else(tmp_path: Path) -> None:
    with GitHubEmulator() as github:
        for test_id, labels in (
            ("tests/a.py::test_q", ("flaky-test", "quarantined")),
            ("tests/b.py::test_flaky_only", ("flaky-test",)),
        ):
            github.add_issue(f"flake: {test_id}", format_marker({"id": test_id}), labels=labels)
        env = {
            "GITHUB_TOKEN": github.token,
            "GITHUB_API_URL": github.url,
            "GITHUB_REPOSITORY": github.full_name,
        }
        to_stdout = quarantined([], env, tmp_path)
        to_file = quarantined(["--output", "set.json"], env, tmp_path)
    assert to_stdout.returncode == 0, to_stdout.stderr
    assert json.loads(to_stdout.stdout) == ["tests/a.py::test_q"]
    assert to_file.returncode == 0, to_file.stderr
    assert json.loads((tmp_path / "set.json").read_text(encoding="utf-8")) == ["tests/a.py::test_q"]
    assert "1 quarantined test(s) written to set.json" in to_file.stdout
    assert github.token not in to_stdout.stdout + to_stdout.stderr + to_file.stdout


def test_fails_open_with_one_warning_and_an_empty_list(tmp_path: Path) -> None:
    env = {"GITHUB_TOKEN": "ghs_" + "x" * 36, "GITHUB_API_URL": "http://127.0.0.1:9"}
    proc = quarantined(["--output", "set.json"], env, tmp_path)  # and no GITHUB_REPOSITORY
    assert proc.returncode == 0
    [warning] = proc.stderr.splitlines()
    assert warning.startswith("flakewarden: warning: cannot read the quarantined tests")
    assert "GITHUB_REPOSITORY" in warning
    assert json.loads((tmp_path / "set.json").read_text(encoding="utf-8")) == []


def test_an_unwritable_output_is_a_usage_error(tmp_path: Path) -> None:
    proc = quarantined(["--output", str(tmp_path / "no" / "such" / "dir.json")], {}, tmp_path)
    assert proc.returncode == 4
    assert proc.stderr.splitlines()[-1].startswith("flakewarden: error: --output ")
