"""The stress workflow's merge: it fails when fewer shards arrived than ``runners`` asked for.

The merge and comment jobs' ``run:`` scripts are taken from
``.github/workflows/stress.yml`` and executed with bash, as the runner would,
over shard directories written by flakewarden's own verdict writer.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.interpreter import path_with_python

from flakewarden.stress.verdict import Arm, Verdict, read_verdict
from flakewarden.stress.verdict_render import write_verdict

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "stress.yml"
TEST_ID = "tests/test_x.py::test_y"
TWO_RUNNERS = '["ubuntu-24.04", "ubuntu-24.04-arm"]'


def step(job: str, name: str) -> dict[str, Any]:
    document = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return next(s for s in document["jobs"][job]["steps"] if s.get("name") == name)


def shard(runner: str, failures: int) -> Verdict:
    arms = [Arm("timing", knob, runs=200, failures=failures) for knob in ("baseline", "cpu-load")]
    return Verdict(
        test_id=TEST_ID,
        verdict="flaky" if failures else "not-reproducible",
        reason="shard",
        rule="shard rule",
        arms=arms,
        environment={"runner": runner},
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:10:00+00:00",
    )


def run_step(job: str, name: str, work: Path, runners: str) -> subprocess.CompletedProcess[str]:
    summary = work / "summary.md"
    summary.touch()
    script = work / "step.sh"
    script.write_text(step(job, name)["run"], encoding="utf-8")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GITHUB_", "FLAKEWARDEN"))
    }
    env.update(
        {
            # `python` is the interpreter running this suite, which has flakewarden installed
            # (perhaps only there: in a virtualenv).
            "PATH": path_with_python(work / "python-bin", env.get("PATH", "")),
            "RUNNERS": runners,
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_TOKEN": "",
        }
    )
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(("job", "name"), [("merge", "Merge"), ("comment", "Comment")])
def test_a_missing_shard_fails_the_merge_in_one_line(tmp_path: Path, job: str, name: str) -> None:
    # Two runners were asked for; the second shard's job died and uploaded nothing.
    write_verdict(shard("ubuntu-24.04", 0), tmp_path / "shards" / "flakewarden-stress-shard-0")
    proc = run_step(job, name, tmp_path, TWO_RUNNERS)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("flakewarden: error: --merge got 1 shard directory but 2 runners")
    assert not (tmp_path / "flakewarden-stress-merged" / "verdict.json").exists()
    assert (tmp_path / "summary.md").read_text(encoding="utf-8") == ""
    assert "over 1 runner" not in proc.stdout


def test_every_shard_present_merges_into_one_verdict(tmp_path: Path) -> None:
    for index, runner in enumerate(("ubuntu-24.04", "ubuntu-24.04-arm")):
        directory = tmp_path / "shards" / f"flakewarden-stress-shard-{index}"
        write_verdict(shard(runner, 0), directory)
    proc = run_step("merge", "Merge", tmp_path, TWO_RUNNERS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    merged = read_verdict(tmp_path / "flakewarden-stress-merged")
    assert (merged.test_id, merged.verdict) == (TEST_ID, "not-reproducible")
    assert sorted(merged.environment["shards"]) == ["ubuntu-24.04", "ubuntu-24.04-arm"]
    # Each shard's two arms, then both pooled: 200 clean runs a knob a runner, 400 pooled.
    assert [(a.knob, a.runs, a.failures) for a in merged.arms] == [
        *[(knob, 200, 0) for _ in range(2) for knob in ("baseline", "cpu-load")],
        ("baseline", 400, 0),
        ("cpu-load", 400, 0),
    ]
    assert "no failure in 800 runs over 2 runners" in (tmp_path / "summary.md").read_text(
        encoding="utf-8"
    )


def test_expect_shards_needs_merge(tmp_path: Path) -> None:
    command = ["python", "-m", "pytest"]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flakewarden",
            "stress",
            TEST_ID,
            "--expect-shards",
            "2",
            "--",
            *command,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 4
    assert "--expect-shards goes with --merge" in proc.stderr
