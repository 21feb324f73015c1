"""Real git repositories in a test's directory: write files, commit, branch.

No configuration outside the repository is read or written: git runs with the global and
system files turned off and the identity and dates given in its environment.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path
from typing import Union

START = 1_700_000_000  # the first commit's time; each commit is a minute later


class Repo:
    def __init__(self, root: Path, *, init: bool = True) -> None:
        self.root = root
        self.commits = 0
        if init:
            root.mkdir(parents=True, exist_ok=True)
            self.git("init", "-q", "-b", "main")

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        when = f"@{START + 60 * self.commits} +0000"
        env.update(
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_CONFIG_NOSYSTEM="1",
            GIT_AUTHOR_NAME="Test Author",
            GIT_AUTHOR_EMAIL="author@example.invalid",
            GIT_COMMITTER_NAME="Test Author",
            GIT_COMMITTER_EMAIL="author@example.invalid",
            GIT_AUTHOR_DATE=when,
            GIT_COMMITTER_DATE=when,
        )
        return env

    def git(self, *args: str, cwd: Union[Path, None] = None) -> str:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd or self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, f"git {args}: {done.stderr}"
        return done.stdout.strip()

    def write(self, path: str, text: Union[str, bytes]) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")

    def commit(self, message: str = "change", **files: Union[str, bytes]) -> str:
        for path, text in files.items():
            self.write(path, text)
        self.git("add", "-A")
        self.commits += 1
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def branch(self, name: str) -> None:
        self.git("checkout", "-q", "-b", name)

    def remove(self, path: str) -> None:
        (self.root / path).unlink()

    def move(self, old: str, new: str) -> None:
        (self.root / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", old, new)


def base_and_branch(root: Path, files: dict[str, Union[str, bytes]]) -> Repo:
    """A repository whose ``main`` holds ``files``, on a new branch ``topic`` off it."""
    repo = Repo(root)
    for path, text in files.items():
        repo.write(path, text)
    repo.commit("base")
    repo.branch("topic")
    return repo
