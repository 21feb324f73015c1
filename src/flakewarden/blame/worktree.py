"""A temporary worktree of a commit, outside the repository, removed however the work ends.

``git worktree add --detach`` checks the commit out in a new temporary folder that is not
under the repository (an import or a test's glob there never sees the checkout, and the
checkout's tools never see it). No hook runs: the repository's ``post-checkout`` is the
pull request's code. On the way out, whether the work returned, raised or was interrupted,
``git worktree remove --force`` and ``git worktree prune`` take it off git's list and the
folder is deleted. Ctrl-C raises ``KeyboardInterrupt`` (``Interrupted`` in ``run_child``);
SIGTERM, which would end the process without cleaning up, raises ``Interrupted`` meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from flakewarden.changes.git import GIT_SECONDS, GitUnusable, run_git
from flakewarden.runner.process import Interrupted

PREFIX = "flakewarden-base-"


class WorktreeError(Exception):
    """The worktree could not be made: git's one-line reason."""


def _temporary_parent(root: Path) -> Path:
    """A new temporary folder that is not inside ``root`` (a ``TMPDIR`` under it is not used)."""
    parent = Path(tempfile.mkdtemp(prefix=PREFIX)).resolve()
    if parent == root or root in parent.parents:
        parent.rmdir()
        parent = Path(tempfile.mkdtemp(prefix=PREFIX, dir=root.parent)).resolve()
    return parent


def _raise_interrupted(signum: int, frame: object) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def _terminate_raises() -> Iterator[None]:
    """SIGTERM raises ``Interrupted`` here, where it would otherwise end the process."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:
        yield  # someone else handles it
        return
    signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def worktree_of(root: Path, commit: str, *, timeout: float = GIT_SECONDS) -> Iterator[Path]:
    """A detached worktree of ``commit`` (a commit-ish) of the repository at ``root``.

    Raises ``WorktreeError`` when git cannot make it (an unknown commit, git missing).
    """
    if not commit or commit.startswith("-"):
        raise WorktreeError(f"not a commit: {commit!r}")
    root = root.resolve()
    with _terminate_raises():
        parent = _temporary_parent(root)
        path = parent / "worktree"
        try:
            args = ["-c", f"core.hooksPath={os.devnull}", "worktree", "add", "--detach"]
            try:
                answer = run_git(root, [*args, str(path), commit], timeout=timeout)
            except GitUnusable as error:
                raise WorktreeError(str(error)) from error
            if not answer.ok:
                raise WorktreeError(answer.why)
            yield path
        finally:
            remove_worktree(root, path)
            shutil.rmtree(parent, ignore_errors=True)


def remove_worktree(root: Path, path: Path) -> None:
    """Take ``path`` off the repository's worktrees and delete it; never raises for git."""
    with contextlib.suppress(GitUnusable):
        run_git(root, ["worktree", "remove", "--force", str(path)])
    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(GitUnusable):
        run_git(root, ["worktree", "prune"])
