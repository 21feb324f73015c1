"""The verify-fix workflow: the job that runs the project's tests holds no token; the job
that holds one runs only flakewarden, on the verdict artifact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]


def _load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document["on"] = document.pop(True, document.get("on"))
    return document


def test_the_tests_run_without_a_token_and_the_writer_runs_no_tests() -> None:
    workflow = _load(REPO / ".github" / "workflows" / "verify-fix.yml")
    assert set(workflow["on"]) == {"workflow_call"}
    assert workflow["permissions"] == {}
    check, record = workflow["jobs"]["check"], workflow["jobs"]["record"]
    assert check["permissions"] == {"contents": "read"}
    assert not any("GITHUB_TOKEN" in (s.get("env") or {}) for s in check["steps"])
    stress = [s for s in check["steps"] if "verify-fix" in s.get("run", "")]
    (step,) = stress
    assert "--from-event --no-github" in step["run"]
    assert record["needs"] == "check" and record["permissions"] == {"issues": "write"}
    uses = [s["uses"].split("@")[0] for s in record["steps"] if "uses" in s]
    assert uses == ["actions/setup-python", "actions/download-artifact"]  # no checkout
    (writer,) = [s for s in record["steps"] if "GITHUB_TOKEN" in (s.get("env") or {})]
    assert writer["run"].endswith("--from-event --from-verdict flakewarden-fix-check")


def test_the_example_checks_only_closes_that_claim_a_fix() -> None:
    example = _load(REPO / "examples" / "workflows" / "verify-fix.yml")
    assert example["on"] == {"issues": {"types": ["closed"]}}
    (job,) = example["jobs"].values()
    assert "'flaky-test'" in job["if"] and "state_reason == 'completed'" in job["if"]
    assert job["uses"].startswith("flakewarden/flakewarden/.github/workflows/verify-fix.yml@")
    assert job["permissions"] == {"contents": "read", "issues": "write"}
