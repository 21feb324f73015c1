"""The digest workflow builds the dashboard, uploads it, and publishes it to Pages only on request.

The build step's ``run:`` script is executed with bash on a real history database; the
Pages job is checked for what it may do: only it holds ``pages: write`` and
``id-token: write``, and only when the caller passes ``publish-pages: true``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import yaml
from dashboard_builders import build_history
from helpers.interpreter import path_with_python

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".github" / "workflows" / "flake-digest.yml"


def _document() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return document


def _step(job: str, name: str) -> dict[str, Any]:
    return next(s for s in _document()["jobs"][job]["steps"] if s.get("name") == name)


def test_the_build_step_writes_the_page_the_upload_step_takes(tmp_path: Path) -> None:
    build = _step("digest", "Build the flake dashboard")
    upload = _step("digest", "Upload the flake dashboard")
    db = build_history(tmp_path, runs=12)
    db.rename(tmp_path / "flakewarden-history.db")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "FLAKEWARDEN"))}
    env["PATH"] = path_with_python(tmp_path / "python-bin", env.get("PATH", ""))
    done = subprocess.run(
        ["bash", "-c", build["run"]], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / upload["with"]["path"]).is_file()
    # Not a name history ingest would read as a report artifact.
    assert not upload["with"]["name"].startswith("flakewarden-")
    assert "steps.ingest.outcome == 'success'" in build["if"] == upload["if"]


def test_pages_is_opt_in_and_only_its_job_may_deploy() -> None:
    document = _document()
    inputs = document[True]["workflow_call"]["inputs"]  # YAML 1.1 reads `on:` as true
    assert inputs["publish-pages"] == {
        "description": inputs["publish-pages"]["description"],
        "required": False,
        "type": "boolean",
        "default": False,
    }
    jobs = document["jobs"]
    assert jobs["digest"]["permissions"] == {"actions": "read", "issues": "write"}
    pages = jobs["pages"]
    assert pages["permissions"] == {"pages": "write", "id-token": "write"}
    assert pages["if"] == "${{ inputs.publish-pages }}" and pages["needs"] == "digest"
    assert pages["environment"]["name"] == "github-pages"
    uses = [s["uses"].split("@")[0] for s in pages["steps"]]
    assert uses == [
        "actions/download-artifact",
        "actions/upload-pages-artifact",
        "actions/deploy-pages",
    ]
    download = pages["steps"][0]["with"]["name"]
    assert download == _step("digest", "Upload the flake dashboard")["with"]["name"]
