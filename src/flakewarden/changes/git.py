"""The one way this wing runs git: bounded in time, deaf to the environment's redirections.

Every ``GIT_*`` variable is dropped: ``GIT_DIR``, ``GIT_WORK_TREE``, ``GIT_INDEX_FILE``,
``GIT_EXTERNAL_DIFF``, ``GIT_CONFIG_PARAMETERS`` and their kin would point git at another
repository or change what ``git diff`` prints. Paths come back unescaped (``core.quotePath``
off) and as bytes, decoded as UTF-8 with ``surrogateescape`` so no file name is lost.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

#: Seconds one git command may take; a diff of a large pull request takes well under one.
GIT_SECONDS = 60.0


@dataclass(frozen=True)
class GitAnswer:
    """What git said: its exit status, its output (bytes) and its error text."""

    returncode: int
    stdout: bytes
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def text(self) -> str:
        return decode(self.stdout)

    @property
    def line(self) -> str:
        """The first line of the output, stripped; "" when there is none."""
        lines = self.text.splitlines()
        return lines[0].strip() if lines else ""

    @property
    def why(self) -> str:
        """git's complaint on one line, for a message."""
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        return lines[0] if lines else f"git exited with status {self.returncode}"


class GitUnusable(Exception):
    """git could not be run at all: not installed, or it did not answer in time."""


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape")


def git_environment(environ: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """``environ`` (default: this process's) without a variable that could redirect git."""
    source = os.environ if environ is None else environ
    env = {k: v for k, v in source.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"  # never wait for a password
    env["GIT_OPTIONAL_LOCKS"] = "0"  # a read needs no index lock (another git may hold it)
    return env


def run_git(
    root: Path,
    args: Sequence[str],
    *,
    timeout: Optional[float] = None,
) -> GitAnswer:
    """``git -c core.quotePath=false ARGS`` in ``root``; raises ``GitUnusable`` if it cannot run
    or takes longer than ``timeout`` (default ``GIT_SECONDS``)."""
    timeout = GIT_SECONDS if timeout is None else timeout
    command = ["git", "-c", "core.quotePath=false", *args]
    try:
        done = subprocess.run(
            command,
            cwd=root,
            env=git_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as error:
        raise GitUnusable("git is not installed (or not on PATH)") from error
    except subprocess.TimeoutExpired as error:
        shown = " ".join(args[:2])
        raise GitUnusable(f"git {shown} took longer than {timeout:g} seconds") from error
    except OSError as error:
        raise GitUnusable(f"git could not be run in {root}: {error}") from error
    return GitAnswer(done.returncode, done.stdout, decode(done.stderr))


def read_blob(root: Path, commit: str, path: str) -> Optional[bytes]:
    """The content of ``path`` at ``commit``; None when it is not there."""
    answer = run_git(root, ["cat-file", "blob", f"{commit}:{path}"])
    return answer.stdout if answer.ok else None


def last_commit_time(root: Path, path: str, *, until: str = "HEAD") -> Optional[int]:
    """When the last commit up to ``until`` that touched ``path`` was made (Unix seconds)."""
    answer = run_git(root, ["log", "-1", "--format=%ct", until, "--", f":(literal){path}"])
    text = answer.line
    return int(text) if answer.ok and text.isdigit() else None
