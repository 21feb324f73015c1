"""Run a command inside a complete, hostile GitHub Actions environment.

    python tests/hostile_actions.py -- python -m pytest -n 2 -m 'not serial' tests/history

The variables are those of a ``pull_request`` job in *another* repository, whose default
branch is ``trunk``, with a fake token, an API that cannot be reached, debug logging on,
and step summary, output, env, path and state files of its own. A suite that is hermetic
passes in it as on a laptop and writes nothing to the job: after the command, any byte in
those files fails the check (exit 3), naming the file. Exit codes: the command's own when
the files are untouched, 2 on bad usage.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPOSITORY = "someone-else/other-project"
JOB_FILES = ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE")
# Nothing listens on the discard port of loopback: every request is refused at once.
UNREACHABLE = "http://127.0.0.1:9"


def event() -> dict[str, object]:
    repo = {
        "full_name": REPOSITORY,
        "name": "other-project",
        "owner": {"login": "someone-else"},
        "default_branch": "trunk",
        "html_url": f"https://github.com/{REPOSITORY}",
    }
    return {
        "action": "synchronize",
        "number": 4242,
        "repository": repo,
        "pull_request": {
            "number": 4242,
            "head": {"ref": "feature/x", "sha": "f" * 40, "repo": {"full_name": "fork/x"}},
            "base": {"ref": "trunk", "sha": "b" * 40, "repo": repo},
            "html_url": f"https://github.com/{REPOSITORY}/pull/4242",
        },
        "sender": {"login": "mallory"},
    }


def hostile_env(root: Path) -> dict[str, str]:
    """The variables, with their files created (empty) under ``root``."""
    workspace = root / "workspace"
    temp = root / "runner-temp"
    for directory in (workspace, temp):
        directory.mkdir(parents=True, exist_ok=True)
    event_path = root / "event.json"
    event_path.write_text(json.dumps(event()), encoding="utf-8")
    env = {
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_REPOSITORY_OWNER": "someone-else",
        "GITHUB_REPOSITORY_ID": "999999",
        "GITHUB_TOKEN": "ghs_" + "x" * 36,
        "GITHUB_API_URL": UNREACHABLE,
        "GITHUB_GRAPHQL_URL": f"{UNREACHABLE}/graphql",
        "GITHUB_SERVER_URL": UNREACHABLE,
        "GITHUB_REF": "refs/pull/4242/merge",
        "GITHUB_REF_NAME": "4242/merge",
        "GITHUB_REF_TYPE": "branch",
        "GITHUB_HEAD_REF": "feature/x",
        "GITHUB_BASE_REF": "trunk",
        "GITHUB_SHA": "a" * 40,
        "GITHUB_RUN_ID": "31337",
        "GITHUB_RUN_NUMBER": "77",
        "GITHUB_RUN_ATTEMPT": "3",
        "GITHUB_JOB": "hostile",
        "GITHUB_WORKFLOW": "Not ours",
        "GITHUB_WORKFLOW_REF": f"{REPOSITORY}/.github/workflows/x.yml@refs/heads/trunk",
        "GITHUB_ACTION": "__run",
        "GITHUB_ACTOR": "mallory",
        "GITHUB_TRIGGERING_ACTOR": "mallory",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_RETENTION_DAYS": "1",
        "RUNNER_OS": "Linux",
        "RUNNER_ARCH": "X64",
        "RUNNER_NAME": "hostile-runner",
        "RUNNER_TEMP": str(temp),
        "RUNNER_TOOL_CACHE": str(temp / "tool-cache"),
        "RUNNER_TRACKING_ID": "github_hostile",
        "RUNNER_DEBUG": "1",
        "ACTIONS_STEP_DEBUG": "true",
        "ACTIONS_RUNTIME_TOKEN": "fake-runtime-token",
        "ACTIONS_RUNTIME_URL": f"{UNREACHABLE}/",
        "ACTIONS_RESULTS_URL": f"{UNREACHABLE}/",
        "ACTIONS_CACHE_URL": f"{UNREACHABLE}/",
        "ACTIONS_ID_TOKEN_REQUEST_URL": f"{UNREACHABLE}/token",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "fake-oidc",
        "FLAKEWARDEN_GITHUB_TOKEN": "ghs_" + "y" * 36,
        "FLAKEWARDEN_JOB_NAME": "hostile (3.99)",
        "FLAKEWARDEN_MATRIX": json.dumps({"python": "3.99"}),
        "FLAKEWARDEN_REPOSITORY": REPOSITORY,
        "FLAKEWARDEN_REF": "refs/heads/trunk",
        "FLAKEWARDEN_RUNNER": "hostile-runner",
        "FLAKEWARDEN_STRESS_FORK": "0",
    }
    for name in JOB_FILES:
        path = root / name.lower()
        path.write_bytes(b"")
        env[name] = str(path)
    return env


def written(env: dict[str, str]) -> list[str]:
    """The job files the command wrote to, with their sizes."""
    return [
        f"{name} ({os.path.getsize(env[name])} bytes)"
        for name in JOB_FILES
        if os.path.getsize(env[name])
    ]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        sys.stderr.write("usage: hostile_actions.py -- COMMAND...\n")
        return 2
    with tempfile.TemporaryDirectory(prefix="hostile-actions-") as tmp:
        env = hostile_env(Path(tmp))
        code = subprocess.call(argv, env={**os.environ, **env})
        touched = written(env)
    if touched:
        sys.stderr.write(f"hostile_actions: the command wrote to the job: {', '.join(touched)}\n")
        return 3
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
