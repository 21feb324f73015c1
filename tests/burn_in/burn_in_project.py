"""Real git repositories holding a small pytest project, and the real ``burn-in`` CLI on them."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

from helpers.git_repo import Repo

# The tested pytest loads only the plugin flakewarden injects: the environment's other
# plugins (xdist, randomly, hypothesis, ...) would slow every stressed process down.
FAST_PYTEST = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]

CONFTEST = """
import pytest


@pytest.fixture
def db():
    return {"rows": 1}


@pytest.fixture
def clock():
    return 0
"""

USERS = """
def test_reads_db(db):
    assert db["rows"] >= 1


def test_reads_clock(clock):
    assert clock == 0
"""

OLD = """
def test_old_name():
    assert 1 + 1 == 2


def test_kept():
    assert "a" in "abc"
"""

MORE = "".join(f"\n\ndef test_more_{n}():\n    assert {n} == {n}\n" for n in range(8))


@dataclasses.dataclass
class BurnInResult:
    returncode: int
    stdout: str
    stderr: str
    report_dir: Path
    seconds: float

    @property
    def data(self) -> dict[str, Any]:
        path = self.report_dir / "burn-in.json"
        return json.loads(path.read_text(encoding="utf-8"))

    @property
    def markdown(self) -> str:
        return (self.report_dir / "burn-in.md").read_text(encoding="utf-8")

    def test(self, node_id: str) -> dict[str, Any]:
        return next(t for t in self.data["tests"] if t["id"] == node_id)

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def base_project(root: Path) -> Repo:
    """``main``: a conftest with two fixtures, their users, an old test and a few more;
    then a branch ``topic`` off it."""
    repo = Repo(root)
    repo.write("pytest.ini", "[pytest]\n")
    repo.write("tests/conftest.py", CONFTEST)
    repo.write("tests/test_users.py", USERS)
    repo.write("tests/test_old.py", OLD)
    repo.write("tests/test_more.py", MORE)
    repo.write("src_module.py", "VALUE = 1\n")
    repo.commit("base")
    repo.branch("topic")
    return repo


def burn_in(
    cwd: Path,
    *options: str,
    env: Optional[dict[str, str]] = None,
    command: Optional[list[str]] = None,
) -> BurnInResult:
    """``flakewarden burn-in OPTIONS -- python -m pytest`` in ``cwd``, as a user runs it."""
    full_env = {**os.environ, **FAST_PYTEST, **(env or {})}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "flakewarden", "burn-in", *options, "--", *(command or PYTEST)],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    seconds = time.monotonic() - started
    return BurnInResult(
        done.returncode, done.stdout, done.stderr, cwd / "flakewarden-burn-in", seconds
    )
