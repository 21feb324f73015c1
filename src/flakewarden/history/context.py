"""Where a run ran, read from the GitHub Actions environment: recorded in ``report.json``.

So that a report directory alone tells which workflow run, job, matrix entry, event,
branch and commit it belongs to, and the history can be built from any copy of it.
Outside GitHub Actions the branch and commit come from git, when the run's directory
is in a git work tree: a laptop's history is then scored by branch like CI's.
Values are data, never trusted: numbers that do not parse read as unknown, and every
text is bounded.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Optional

from flakewarden.model import RunContext

_LIMIT = 1_000  # characters kept of any one value
_GIT_SECONDS = 5.0
_COMMIT = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_PULL_REF = re.compile(r"refs/pull/([0-9]{1,10})/(?:merge|head)")
PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target"})


def _value(environ: Mapping[str, str], name: str) -> str:
    return environ.get(name, "").strip()[:_LIMIT]


def _positive(text: str) -> Optional[int]:
    return int(text) if text.isdigit() and 0 < int(text) < 2**63 else None


def matrix_name(matrix_json: str) -> str:
    """A matrix entry's name, ``key=value, ...`` from ``toJSON(matrix)``; "" when there is none."""
    try:
        matrix = json.loads(matrix_json) if matrix_json else None
    except ValueError:
        return ""
    if not isinstance(matrix, dict):
        return ""
    parts = []
    for key in sorted(matrix):
        value = matrix[key]
        shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        parts.append(f"{key}={shown}")
    return ", ".join(parts)[:_LIMIT]


def _git(cwd: Path, *args: str) -> str:
    """One line of git's answer in ``cwd``; "" when git is missing, slow or says no."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=_GIT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = done.stdout.splitlines()
    return lines[0].strip()[:_LIMIT] if done.returncode == 0 and lines else ""


def git_branch_and_commit(cwd: Path) -> tuple[str, str]:
    """The checked-out branch ("" when HEAD is detached) and commit of the tree at ``cwd``."""
    commit = _git(cwd, "rev-parse", "--verify", "--quiet", "HEAD")
    if not _COMMIT.fullmatch(commit):
        return "", ""
    branch = _git(cwd, "symbolic-ref", "--quiet", "--short", "HEAD")
    return branch, commit


def collect_context(
    environ: Mapping[str, str],
    *,
    started_at: str,
    version: str,
    job_name: str = "",
    cwd: Optional[Path] = None,
    git: Optional[tuple[str, str]] = None,
) -> RunContext:
    """The run's context: GitHub's coordinates when running in GitHub Actions, and always
    the start time, OS, Python and flakewarden version.

    The matrix name is ``job_name`` when given (``--job-name``), else
    ``FLAKEWARDEN_JOB_NAME``, else built from ``FLAKEWARDEN_MATRIX`` (the action sets it
    to ``toJSON(matrix)``). Outside GitHub Actions, the branch and commit are ``git``
    when given (read earlier by ``git_branch_and_commit``), else git's in ``cwd``.
    """
    name = (
        job_name
        or _value(environ, "FLAKEWARDEN_JOB_NAME")
        or matrix_name(environ.get("FLAKEWARDEN_MATRIX", ""))
    )[:_LIMIT]
    local = RunContext(
        started_at=started_at,
        os=_value(environ, "RUNNER_OS") or platform.system(),
        python=platform.python_version(),
        flakewarden_version=version,
        job_name=name,
    )
    if environ.get("GITHUB_ACTIONS") != "true":
        if git is None and cwd is not None:
            git = git_branch_and_commit(cwd)
        if git is None:
            return local
        return dataclasses.replace(local, branch=git[0], commit=git[1])
    event = _value(environ, "GITHUB_EVENT_NAME")
    pull = _PULL_REF.fullmatch(_value(environ, "GITHUB_REF"))
    if event in PULL_REQUEST_EVENTS or pull:
        branch = _value(environ, "GITHUB_HEAD_REF")
    elif _value(environ, "GITHUB_REF_TYPE") == "tag":
        branch = ""
    else:
        branch = _value(environ, "GITHUB_REF_NAME")
    return dataclasses.replace(
        local,
        repository=_value(environ, "GITHUB_REPOSITORY"),
        workflow=_value(environ, "GITHUB_WORKFLOW"),
        run_id=_positive(_value(environ, "GITHUB_RUN_ID")),
        run_attempt=_positive(_value(environ, "GITHUB_RUN_ATTEMPT")),
        job=_value(environ, "GITHUB_JOB"),
        event=event,
        branch=branch,
        base_branch=_value(environ, "GITHUB_BASE_REF"),
        pr_number=int(pull.group(1)) if pull else None,
        commit=_value(environ, "GITHUB_SHA"),
    )
