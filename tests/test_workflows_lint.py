"""Every workflow and action passes zizmor's auditor persona (offline) and pins what it uses.

The auditor persona is zizmor's strictest: it also reports undocumented
permissions, missing concurrency limits and anonymous definitions. A finding
may be silenced only inline (``# zizmor: ignore[audit]``) under a comment that
says why.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
PINNED = re.compile(r"^[^@\s]+@[0-9a-f]{40}$")
# Files whose run: scripts take every expression through env: (the action's own rule).
NO_EXPRESSIONS_IN_RUN = (
    "action.yml",
    ".github/workflows/ci.yml",
    "examples/workflows/minimal.yml",
    "examples/workflows/coverage-gate.yml",
    "examples/workflows/matrix.yml",
    "examples/workflows/issues-in-own-job.yml",
    "examples/workflows/sharded.yml",
    "examples/workflows/fork-tests.yml",
    "examples/workflows/fork-publish.yml",
    "examples/workflows/verify-fix.yml",
    ".github/workflows/verify-fix.yml",
    ".github/workflows/pytest.yml",
    ".github/workflows/release.yml",
)


AUDITOR = ("--offline", "--no-progress", "--persona=auditor")


def lintable() -> list[Path]:
    files = [REPO / "action.yml"]
    for directory in (REPO / ".github" / "workflows", REPO / "examples" / "workflows"):
        files += sorted(directory.glob("*.yml")) + sorted(directory.glob("*.yaml"))
    files += sorted(
        p for p in (REPO / "examples").rglob("action.y*ml") if "workflows" not in p.parts
    )
    return files


def zizmor() -> Optional[str]:
    beside = Path(sys.executable).parent / "zizmor"
    return str(beside) if beside.exists() else shutil.which("zizmor")


def steps_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    if "runs" in document:
        return list(document["runs"].get("steps") or [])
    steps: list[dict[str, Any]] = []
    for job in (document.get("jobs") or {}).values():
        steps += job.get("steps") or []
    return steps


def relative(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def test_the_expected_files_are_linted() -> None:
    names = {relative(p) for p in lintable()}
    assert set(NO_EXPRESSIONS_IN_RUN) <= names


@pytest.mark.parametrize("path", lintable(), ids=relative)
def test_zizmor_reports_nothing(path: Path) -> None:
    executable = zizmor()
    assert executable, "zizmor is not installed: pip install -e '.[test]'"
    proc = subprocess.run(
        [executable, *AUDITOR, "--format", "plain", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings to report" in proc.stdout + proc.stderr


@pytest.mark.parametrize("path", lintable(), ids=relative)
def test_every_silenced_finding_says_why(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        if "zizmor: ignore[" in line:
            above = lines[number - 1].strip() if number else ""
            assert above.startswith("#"), f"{relative(path)}:{number + 1}: say why above it"


@pytest.mark.parametrize("path", lintable(), ids=relative)
def test_every_remote_uses_is_pinned_to_a_commit(path: Path) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    for step in steps_of(document):
        uses = step.get("uses")
        if uses is None or uses.startswith(("./", "docker://")):
            continue
        assert PINNED.match(uses), f"{relative(path)}: {uses} is not pinned to a commit SHA"
    for job in (document.get("jobs") or {}).values():
        uses = job.get("uses")  # a reusable workflow call
        if uses and not uses.startswith("./"):
            assert PINNED.match(uses), f"{relative(path)}: {uses} is not pinned to a commit SHA"


@pytest.mark.parametrize("path", lintable(), ids=relative)
def test_no_expression_inside_a_run_script(path: Path) -> None:
    """Every workflow, not only the listed ones: values reach scripts only through env:."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    for step in steps_of(document):
        where = f"{relative(path)}: {step.get('name') or step.get('run')}"
        assert "${{" not in step.get("run", ""), where


@pytest.mark.parametrize("path", lintable(), ids=relative)
def test_workflows_declare_permissions(path: Path) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    if "jobs" not in document:
        return  # an action, not a workflow
    jobs = document["jobs"].values()
    assert "permissions" in document or all("permissions" in job for job in jobs), relative(path)


@pytest.mark.parametrize("path", lintable(), ids=relative)
def test_write_access_and_oidc_tokens_are_granted_per_job_only(path: Path) -> None:
    """No workflow-wide write permission; an OIDC token only in a job behind an environment
    (its protection rules gate what the token can publish)."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    if "jobs" not in document:
        return
    top = document.get("permissions") or {}
    assert top in ({}, "read-all") or "write" not in top.values(), relative(path)
    for name, job in document["jobs"].items():
        permissions = job.get("permissions") or {}
        if isinstance(permissions, dict) and permissions.get("id-token") == "write":
            assert job.get("environment"), f"{relative(path)}: job {name} mints OIDC tokens"


def test_zizmor_catches_what_it_should(tmp_path: Path) -> None:
    """The lint is live: an unpinned action and a script injection are both reported."""
    executable = zizmor()
    assert executable
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: pull_request_target\n"
        "permissions: {}\n"
        "jobs:\n"
        "  j:\n"
        "    runs-on: ubuntu-24.04\n"
        "    steps:\n"
        "      - uses: actions/checkout@v4\n"
        "      - run: echo ${{ github.event.pull_request.title }}\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [executable, "--offline", "--no-progress", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "unpinned-uses" in proc.stdout
    assert "template-injection" in proc.stdout


def test_the_auditor_persona_catches_broad_undocumented_permissions(tmp_path: Path) -> None:
    """What the persona adds: workflow-wide write access, no reasons, no concurrency, no names."""
    executable = zizmor()
    assert executable
    bad = tmp_path / "broad.yml"
    bad.write_text(
        "on: workflow_dispatch\n"
        "permissions:\n"
        "  issues: write\n"
        "jobs:\n"
        "  j:\n"
        "    runs-on: ubuntu-24.04\n"
        "    steps:\n"
        "      - run: echo hi\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [executable, *AUDITOR, str(bad)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0
    for audit in (
        "excessive-permissions",
        "undocumented-permissions",
        "concurrency-limits",
        "anonymous-definition",
    ):
        assert audit in proc.stdout, audit
