"""The hostile Actions job the hermetic check runs the suite in, and the suite's own guard."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import hostile_actions
import pytest
from helpers.hermetic import clean_env, is_ambient

HOSTILE = Path(__file__).with_name("hostile_actions.py")


def _inside(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HOSTILE), "--", sys.executable, "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_job_is_complete_and_not_ours(tmp_path: Path) -> None:
    seen = _inside(
        "import json, os\n"
        "event = json.load(open(os.environ['GITHUB_EVENT_PATH']))\n"
        "print(json.dumps({'env': dict(os.environ), 'event': event}))\n",
        tmp_path,
    )
    assert seen.returncode == 0, seen.stderr
    data = json.loads(seen.stdout)
    env, event = data["env"], data["event"]
    assert env["GITHUB_ACTIONS"] == "true" and env["CI"] == "true"
    assert env["GITHUB_EVENT_NAME"] == "pull_request"
    assert event["repository"]["default_branch"] == "trunk"
    assert event["repository"]["full_name"] == env["GITHUB_REPOSITORY"] != "octo-org/octo-repo"
    assert env["GITHUB_TOKEN"].startswith("ghs_") and env["FLAKEWARDEN_GITHUB_TOKEN"]
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH"):
        assert os.path.isabs(env[name])
    # Every variable it sets reached the command, and is one the guard removes for each test.
    job = hostile_actions.hostile_env(tmp_path / "job")
    assert len(job) > 40 and all(env[k] for k in job)
    assert [k for k in job if not is_ambient(k)] == []


@pytest.mark.parametrize("name", ["GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "GITHUB_ENV"])
def test_a_command_that_writes_to_the_job_fails_the_check(tmp_path: Path, name: str) -> None:
    done = _inside(f"import os\nopen(os.environ[{name!r}], 'a').write('leak')\n", tmp_path)
    assert done.returncode == 3
    assert done.stderr.strip() == f"hostile_actions: the command wrote to the job: {name} (4 bytes)"


def test_a_command_that_leaves_the_job_alone_keeps_its_exit_code(tmp_path: Path) -> None:
    assert _inside("raise SystemExit(0)", tmp_path).returncode == 0
    assert _inside("raise SystemExit(5)", tmp_path).returncode == 5
    usage = subprocess.run([sys.executable, str(HOSTILE)], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage" in usage.stderr


def test_each_test_starts_without_the_jobs_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    # The conftest removed them before this test; what a test sets itself, it keeps.
    assert [k for k in os.environ if is_ambient(k)] == []
    monkeypatch.setenv("GITHUB_TOKEN", "set-by-this-test")
    assert os.environ["GITHUB_TOKEN"] == "set-by-this-test"
    assert "GITHUB_TOKEN" not in clean_env()  # a child starts without it unless given it
    assert clean_env({"GITHUB_TOKEN": "given"})["GITHUB_TOKEN"] == "given"


def test_the_suites_own_settings_are_kept() -> None:
    assert not is_ambient("FLAKEWARDEN_CORPUS_CACHE")
    assert is_ambient("FLAKEWARDEN_RESULTS") and is_ambient("CI") and is_ambient("PYTEST_ADDOPTS")
    assert not is_ambient("CIRCLE") and not is_ambient("HOME") and not is_ambient("PATH")
