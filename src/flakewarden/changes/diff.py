"""The diff of HEAD against its merge base with a base ref, as changed line ranges per file.

``changes_since(root, base)`` answers a ``Diff`` or an ``Unavailable`` that says why there is
none and what to fetch, so a caller can go on without it. Nothing here raises for a state a
clone can be in (not a repository, a shallow clone, a missing base); ``default_base`` raises
``UsageError`` when no base can be chosen, and ``Unavailable.error()`` turns an answer into
one for a caller that cannot go on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from flakewarden.errors import UsageError

from .cosmetic import is_cosmetic
from .git import GitUnusable, decode, read_blob, run_git
from .patch import FilePatch, Hunk, PatchError, Status, parse_patch

# Exactly what is compared: renames followed, no colour, no external driver or textconv,
# zero context, hunks never merged by context, git's own prefixes, paths from the top.
DIFF_OPTIONS = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--find-renames",
    "-U0",
    "--inter-hunk-context=0",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--no-relative",
    "--submodule=short",
)

FETCH_HINT = "on GitHub Actions, actions/checkout with fetch-depth: 0"


@dataclass(frozen=True)
class LineRange:
    """Lines ``start`` to ``end`` of the new side, both included, counted from 1."""

    start: int
    end: int

    def __contains__(self, line: object) -> bool:
        return isinstance(line, int) and self.start <= line <= self.end

    def overlaps(self, start: int, end: int) -> bool:
        return self.start <= end and start <= self.end


@dataclass(frozen=True)
class FileChange:
    """One file the change touched.

    ``path`` is its path in the new tree (for a deleted file: the path it had), relative to
    the repository's top, with ``/``; ``old_path`` its path at the merge base (None when
    added). ``ranges`` are the new side's changed lines: added or rewritten lines, and for
    lines only taken out, the line before and the line after the gap. A binary file has
    none. ``cosmetic_hunks`` counts the hunks left out as whitespace or comments only.
    """

    path: str
    old_path: Optional[str]
    status: Status
    ranges: tuple[LineRange, ...]
    binary: bool = False
    cosmetic_hunks: int = 0
    # Where lines were only taken out: the new side's line after which they were (0: the
    # top). ``ranges`` holds the lines around each such gap too.
    gaps: tuple[int, ...] = ()

    def touches(self, start: int, end: int) -> bool:
        """Whether any changed line falls in ``start`` .. ``end`` (new side, inclusive)."""
        return any(r.overlaps(start, end) for r in self.ranges)

    def lines(self) -> frozenset[int]:
        return frozenset(n for r in self.ranges for n in range(r.start, r.end + 1))


@dataclass(frozen=True)
class Diff:
    """HEAD against ``merge_base`` (of ``base`` and HEAD) in the repository at ``root``."""

    root: Path
    base: str
    merge_base: str
    head: str
    files: tuple[FileChange, ...]

    def file(self, path: str) -> Optional[FileChange]:
        """The change to ``path`` (new-tree path, relative to ``root``); None when untouched."""
        return next((f for f in self.files if f.path == path), None)


@dataclass(frozen=True)
class Unavailable:
    """No diff, and why: one line saying what is missing and what to run."""

    reason: str

    def error(self) -> UsageError:
        return UsageError(self.reason)


DiffResult = Union[Diff, Unavailable]


def _ranges_of(lines: set[int]) -> tuple[LineRange, ...]:
    ranges: list[LineRange] = []
    for line in sorted(lines):
        if ranges and ranges[-1].end == line - 1:
            ranges[-1] = LineRange(ranges[-1].start, line)
        else:
            ranges.append(LineRange(line, line))
    return tuple(ranges)


def changed_lines(hunks: tuple[Hunk, ...], new_length: Optional[int]) -> set[int]:
    """The new side's changed lines of ``hunks``; a gap's neighbours for lines only taken out.

    ``new_length`` (lines in the new file) keeps the line after a gap at the end inside the
    file; None trusts it is there.
    """
    lines: set[int] = set()
    for hunk in hunks:
        lines.update(hunk.added)
        if hunk.removed and not hunk.added:
            after = hunk.new_start + 1
            lines.update(n for n in (hunk.new_start, after) if n >= 1)
    if new_length is not None:
        lines = {n for n in lines if n <= new_length}
    return lines


def _line_count(data: Optional[bytes]) -> Optional[int]:
    if data is None:
        return None
    return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)


def _file_change(
    root: Path, merge_base: str, head: str, patch: FilePatch, ignore_cosmetic: bool
) -> FileChange:
    if patch.binary or patch.status == "deleted":
        return FileChange(patch.path, patch.old_path, patch.status, (), patch.binary)
    hunks = patch.hunks
    cosmetic = 0
    new_text: Optional[bytes] = None
    if ignore_cosmetic and hunks and patch.path.endswith(".py"):
        new_text = read_blob(root, head, patch.path)
        old_text = b"" if patch.old_path is None else read_blob(root, merge_base, patch.old_path)
        if new_text is not None and old_text is not None:
            kept = tuple(h for h in hunks if not is_cosmetic(old_text, new_text, h))
            cosmetic, hunks = len(hunks) - len(kept), kept
    length: Optional[int] = None
    if any(h.removed and not h.added for h in hunks):
        if new_text is None:
            new_text = read_blob(root, head, patch.path)
        length = _line_count(new_text)
    ranges = _ranges_of(changed_lines(hunks, length))
    gaps = tuple(sorted({h.new_start for h in hunks if h.removed and not h.added}))
    return FileChange(patch.path, patch.old_path, patch.status, ranges, False, cosmetic, gaps)


def _missing_base(base: str) -> str:
    remote, _, branch = base.partition("/")
    fetch = f"git fetch {remote} {branch}" if branch and remote == "origin" else "git fetch"
    return (
        f"the base {base!r} is not in this clone: fetch it ({fetch}; {FETCH_HINT}), "
        "or pass a base that exists"
    )


def _no_merge_base(root: Path, base: str) -> str:
    shallow = run_git(root, ["rev-parse", "--is-shallow-repository"]).line == "true"
    if shallow:
        return (
            f"no merge base of {base!r} and HEAD: this clone is shallow, so their common "
            f"history is missing; fetch it (git fetch --unshallow, or git fetch --deepen=N "
            f"until they meet; {FETCH_HINT})"
        )
    return f"{base!r} and HEAD share no history (no merge base): compare with another base"


def _commit(root: Path, ref: str) -> Optional[str]:
    answer = run_git(
        root, ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"]
    )
    return answer.line if answer.ok and answer.line else None


def changes_since(
    root: Path,
    base: Optional[str] = None,
    *,
    ignore_cosmetic: bool = False,
    environ: Optional[Mapping[str, str]] = None,
) -> DiffResult:
    """HEAD's changes since its merge base with ``base`` (default: ``default_base``).

    ``ignore_cosmetic`` leaves out, in Python files, hunks that change only white space,
    comments or blank lines (the tokens of both sides compare equal): blame asks whether a
    failure ran a change that could matter. Burn-in keeps every hunk.
    """
    try:
        return _changes_since(root, base, ignore_cosmetic, environ)
    except GitUnusable as error:
        return Unavailable(str(error))


def _changes_since(
    root: Path,
    base: Optional[str],
    ignore_cosmetic: bool,
    environ: Optional[Mapping[str, str]],
) -> DiffResult:
    top = run_git(root, ["rev-parse", "--show-toplevel"])
    if not top.ok:
        return Unavailable(f"{root} is not in a git repository ({top.why}): no diff to read")
    top_path = Path(top.line)
    if base is None:
        try:
            base = default_base(top_path, environ)
        except UsageError as error:
            return Unavailable(str(error))
    head = _commit(top_path, "HEAD")
    if head is None:
        return Unavailable("HEAD is not a commit yet (no commit in this repository): no diff")
    base_commit = _commit(top_path, base)
    if base_commit is None:
        return Unavailable(_missing_base(base))
    found = run_git(top_path, ["merge-base", base_commit, head])
    if not found.ok or not found.line:
        return Unavailable(_no_merge_base(top_path, base))
    merge_base = found.line
    diff = run_git(top_path, ["diff", *DIFF_OPTIONS, merge_base, head])
    if not diff.ok:
        return Unavailable(f"git diff {base} failed: {diff.why}")
    try:
        patches = parse_patch(decode(diff.stdout))
    except PatchError as error:
        return Unavailable(f"git diff's output could not be read: {error}")
    files = tuple(_file_change(top_path, merge_base, head, p, ignore_cosmetic) for p in patches)
    return Diff(top_path, base, merge_base, head, files)


def default_base(root: Path, environ: Optional[Mapping[str, str]] = None) -> str:
    """The base to compare with when none is given.

    On GitHub Actions in a pull request, ``origin/<GITHUB_BASE_REF>`` (the pull request's
    base branch; when the clone lacks it the answer says which fetch brings it, rather than
    falling back to another branch and diffing against the wrong base); else ``origin/HEAD``
    (the remote's default branch); else ``UsageError``.
    """
    env = os.environ if environ is None else environ
    try:
        pull_base = env.get("GITHUB_BASE_REF", "").strip()
        if pull_base:
            ref = f"origin/{pull_base}"
            if _commit(root, f"refs/remotes/{ref}") is None:
                raise UsageError(_missing_base(ref))
            return ref
        if _commit(root, "refs/remotes/origin/HEAD") is not None:
            return "origin/HEAD"
    except GitUnusable as error:
        raise UsageError(str(error)) from error
    raise UsageError(
        "no base to compare with: pass the base branch (e.g. origin/main), or record the "
        "remote's default branch with git remote set-head origin --auto"
    )
