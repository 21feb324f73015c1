"""The fork pair: the pull request's workflow holds no token; the publisher runs no code of
the pull request, holds the token in one step, and hands the artifact to the validator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "workflows"


def _load(name: str) -> dict[str, Any]:
    document = yaml.safe_load((EXAMPLES / name).read_text(encoding="utf-8"))
    # PyYAML reads the key `on` as True.
    document["on"] = document.pop(True, document.get("on"))
    return document


def test_the_pull_request_workflow_can_write_nothing() -> None:
    tests = _load("fork-tests.yml")
    assert set(tests["on"]) == {"pull_request"}
    assert tests["permissions"] == {}
    (job,) = tests["jobs"].values()
    assert job["permissions"] == {"contents": "read"}
    action = [s for s in job["steps"] if s.get("uses", "").startswith("flakewarden/")]
    (step,) = action
    assert step["with"]["github-token"] == "" and step["with"]["file-issues"] == "false"
    assert step["with"]["artifact-name"] == "flakewarden-report"
    checkout = job["steps"][0]
    assert checkout["with"]["persist-credentials"] is False


def test_the_publisher_runs_no_code_of_the_pull_request() -> None:
    tests, publish = _load("fork-tests.yml"), _load("fork-publish.yml")
    trigger = publish["on"]["workflow_run"]
    assert trigger["workflows"] == [tests["name"]] and trigger["types"] == ["completed"]
    assert publish["permissions"] == {}
    (job,) = publish["jobs"].values()
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    assert job["if"] == "github.event.workflow_run.event == 'pull_request'"
    uses = [s["uses"].split("@")[0] for s in job["steps"] if "uses" in s]
    assert uses == ["actions/setup-python"]  # no checkout, no download-artifact of its own
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert not any("pip install -e" in r or "pytest" in r for r in runs)
    holding = [s for s in job["steps"] if "GITHUB_TOKEN" in (s.get("env") or {})]
    assert len(holding) == 1
    assert holding[0]["run"].startswith("flakewarden publish-run ")
    assert holding[0]["env"]["RUN_ID"] == "${{ github.event.workflow_run.id }}"
