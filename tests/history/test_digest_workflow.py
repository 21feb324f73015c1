"""The digest workflow keeps the history: its steps' ``run:`` scripts, executed with bash against
the emulator, rebuild a lost database from the retained artifacts, then ingest only new runs."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml
from helpers.github_emulator import GitHubEmulator
from helpers.github_emulator_actions import zip_directory
from helpers.history_reports import as_github_run, report_dirs
from helpers.interpreter import path_with_python

from flakewarden.history.store import HistoryStore

__all__ = ["report_dirs"]  # the fixture

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".github" / "workflows" / "flake-digest.yml"
CACHE_V4_3_0 = "0057852bfaa89a56745cba8c7296529d2fc39830"


def _job() -> dict[str, Any]:
    document = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    job: dict[str, Any] = document["jobs"]["digest"]
    return job


def _step(name: str) -> dict[str, Any]:
    return next(s for s in _job()["steps"] if s.get("name") == name)


def test_the_cache_steps_and_permissions() -> None:
    job = _job()
    assert job["permissions"] == {"actions": "read", "issues": "write"}
    restore, save = _step("Restore the flake history"), _step("Save the flake history")
    assert restore["uses"] == f"actions/cache/restore@{CACHE_V4_3_0}"
    assert save["uses"] == f"actions/cache/save@{CACHE_V4_3_0}"
    assert restore["with"]["path"] == save["with"]["path"] == "flakewarden-history.db"
    # A new key each run (entries are immutable), restored from the newest by its prefix.
    assert restore["with"]["key"] == save["with"]["key"]
    assert "github.run_id" in save["with"]["key"]
    assert save["with"]["key"].startswith(restore["with"]["restore-keys"])
    assert "steps.ingest.outcome == 'success'" in save["if"]
    names = [s.get("name") for s in job["steps"]]
    order = ["Restore the flake history", "Ingest the runs since the last digest"]
    order += ["Save the flake history", "Reevaluate quarantined tests", "Rewrite the digest"]
    assert [n for n in names if n in order] == order


def _run_step(name: str, work: Path, emu: GitHubEmulator) -> subprocess.CompletedProcess[str]:
    step = _step(name)
    values = {"${{ github.token }}": emu.token, "${{ inputs.history-workflow }}": "ci.yml"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "FLAKEWARDEN"))}
    for key, value in (step.get("env") or {}).items():
        env[key] = values[value]
    env.update(
        {
            "PATH": path_with_python(work.parent / "python-bin", env.get("PATH", "")),
            "GITHUB_API_URL": emu.url,
            "GITHUB_REPOSITORY": emu.full_name,
        }
    )
    return subprocess.run(
        ["bash", "-c", step["run"]],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_lost_cache_is_rebuilt_then_only_new_runs_are_read(
    report_dirs: list[Path], tmp_path: Path
) -> None:
    with GitHubEmulator() as emu:
        for n, report in enumerate(report_dirs):
            run = emu.add_workflow_run(created_at=1_700_000_000 + n)
            report_dir = as_github_run(report, tmp_path / f"r{n}", run["id"])
            emu.add_artifact(run["id"], "flakewarden-tests-0-attempt-1", zip_directory(report_dir))
        work = tmp_path / "job"
        work.mkdir()
        # No database restored: every retained artifact is read.
        done = _run_step("Ingest the runs since the last digest", work, emu)
        assert done.returncode == 0, done.stderr
        assert "2 new run(s) looked at, 2 report artifact(s), 2 run(s) ingested" in done.stdout
        with HistoryStore.open(work / "flakewarden-history.db") as store:
            assert store.counts() == (2, 3, 6)
        # Restored the next day: only the run completed since is downloaded.
        run = emu.add_workflow_run()
        emu.add_artifact(
            run["id"],
            "flakewarden-tests-0-attempt-1",
            zip_directory(as_github_run(report_dirs[0], tmp_path / "r3", run["id"])),
        )
        again = _run_step("Ingest the runs since the last digest", work, emu)
        assert again.returncode == 0, again.stderr
        assert "1 new run(s) looked at" in again.stdout
        assert re.search(r"4 requests \(3 to the API, 1 downloads\)", again.stdout)
        # The two steps after it run as they are with this flakewarden.
        for name in ("Reevaluate quarantined tests", "Rewrite the digest"):
            step = _run_step(name, work, emu)
            assert step.returncode == 0, (name, step.stdout, step.stderr)
        [digest] = emu.open_issues("flake-digest")  # one digest issue, rewritten in place
        assert "from the flake history" in digest["body"]
        assert emu.leaked_authorization == [] and emu.schema_errors == []
