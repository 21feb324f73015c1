"""The reusable ``pytest.yml``: its plan, shard and merge scripts run with bash on a real suite.

GitHub is out of reach, so each job's ``run:`` script is taken from the workflow as written
and run as the runner would (``bash -e`` on the step's ``env:``, a ``$GITHUB_OUTPUT`` and a
``$GITHUB_STEP_SUMMARY`` of its own), with the artifacts laid out as download-artifact lays
them: one folder per shard's artifact.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml
from helpers.hermetic import clean_env
from helpers.interpreter import path_with_python
from helpers.project import Project, flaky_module
from helpers.workflow_commands import parse_commands, read_output_file

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "pytest.yml"


def _step(job: str, name: str) -> dict[str, Any]:
    document = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps = document["jobs"][job]["steps"]
    return next(s for s in steps if s.get("name") == name or s.get("id") == name)


def _bash(
    step: dict[str, Any], env: dict[str, str], cwd: Path, tmp: Path
) -> tuple[subprocess.CompletedProcess[str], dict[str, str], str]:
    assert set(step["env"]) == set(env), "the test sets exactly the step's variables"
    output, summary = tmp / "output", tmp / "summary"
    output.write_text("", encoding="utf-8")
    summary.write_text("", encoding="utf-8")
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=cwd,
        env=clean_env(
            {
                **env,
                # `python` is this suite's interpreter, in a virtualenv or not.
                "PATH": path_with_python(tmp / "bin"),
                "GITHUB_ACTIONS": "true",
                "GITHUB_OUTPUT": str(output),
                "GITHUB_STEP_SUMMARY": str(summary),
            }
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    outputs = read_output_file(output)
    return done, outputs, summary.read_text(encoding="utf-8")


def test_the_plan_lists_the_shards_and_refuses_a_bad_count(tmp_path: Path) -> None:
    step = _step("plan", "plan")
    done, outputs, _ = _bash(step, {"SHARDS": "3"}, tmp_path, tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(outputs["shards"]) == [1, 2, 3]
    for bad in ("0", "65", "x", ""):
        done, outputs, _ = _bash(step, {"SHARDS": bad}, tmp_path, tmp_path)
        assert done.returncode == 4 and "::error title=flakewarden::shards must be 1 to 64" in (
            done.stdout
        )


def _suite(project: Project) -> None:
    project.write("pkg/__init__.py", "def one():\n    return 1\n\n\ndef two():\n    return 2\n")
    project.write(".coveragerc", "[run]\nsource = pkg\n")
    project.write(
        "tests/test_one.py", "from pkg import one\n\n\ndef test_one():\n    assert one() == 1\n"
    )
    project.write(
        "tests/test_two.py", "from pkg import two\n\n\ndef test_two():\n    assert two() == 2\n"
    )
    project.write("tests/test_flaky.py", flaky_module("flaky"))


def _shard_env(k: int, n: int) -> dict[str, str]:
    return {
        "COMMAND": "python -m pytest -p no:randomly",
        "SHARD": str(k),
        "SHARDS": str(n),
        "COVERAGE": "true",
        "RERUNS": "2",
        "MAX_FAILURES": "10",
    }


def test_shards_then_the_merge_publish_the_whole_suite(project: Project, tmp_path: Path) -> None:
    _suite(project)
    run_shard = _step("shard", "Run this shard")
    downloaded = tmp_path / "merge-job"
    (downloaded / "shards").mkdir(parents=True)
    shutil.copy(project.root / ".coveragerc", downloaded / ".coveragerc")
    for k in (1, 2):
        done, _, _ = _bash(run_shard, _shard_env(k, 2), project.root, tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        report = json.loads((project.root / "flakewarden-report" / "report.json").read_text())
        assert report["shard"] == f"{k}/2"
        # download-artifact with a pattern: each artifact in a folder of its name.
        shutil.move(
            project.root / "flakewarden-report",
            downloaded / "shards" / f"flakewarden-report-shard-{k}",
        )
    merge = _step("merge", "Merge, gate and publish")
    env = {"SHARDS": "2", "COV_FAIL_UNDER": "100", "FAIL_ON_FLAKY": "false"}
    done, outputs, summary = _bash(merge, env, downloaded, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    merged = json.loads((downloaded / "flakewarden-report" / "report.json").read_text())
    assert merged["totals"]["tests"] == 3 and merged["totals"]["flaky"] == 1
    assert merged["coverage"]["percent"] == 100.0  # one() and two(), each from one shard
    assert (outputs["outcome"], outputs["flaky"], outputs["passed"]) == ("flaky", "1", "2")
    assert "Merged from 2 reports" in summary
    warnings = [
        props["title"] for kind, props, _ in parse_commands(done.stdout) if kind == "warning"
    ]
    assert warnings == ["Flaky test: tests/test_flaky.py::test_flaky"]
    # Shard 2's artifact never arrived: the merge says so and fails; the rest is published.
    shutil.rmtree(downloaded / "shards" / "flakewarden-report-shard-2")
    shutil.rmtree(downloaded / "flakewarden-report")
    done, outputs, summary = _bash(merge, env, downloaded, tmp_path)
    assert done.returncode == 1
    assert "shard 2 of 2 missing" in done.stdout and "shard 2 of 2 missing" in summary
    assert outputs["outcome"] == "failed"
