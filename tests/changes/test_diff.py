"""The diff against a merge base, read from real repositories."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.git_repo import Repo, base_and_branch

from flakewarden.changes.diff import (
    Diff,
    FileChange,
    LineRange,
    Unavailable,
    changes_since,
    default_base,
)
from flakewarden.errors import UsageError

TEN = "".join(f"line {n}\n" for n in range(1, 11))


def _diff(repo: Repo, base: str = "main", **options: bool) -> Diff:
    result = changes_since(repo.root, base, **options)
    assert isinstance(result, Diff), result
    return result


def _file(diff: Diff, path: str) -> FileChange:
    change = diff.file(path)
    assert change is not None, [f.path for f in diff.files]
    return change


def _ranges(change: FileChange) -> list[tuple[int, int]]:
    return [(r.start, r.end) for r in change.ranges]


def _edit(text: str, replace: dict[int, str | None], insert: dict[int, str] | None = None) -> str:
    """``text`` with line N replaced (None: taken out) and lines put in after line N."""
    out = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        new = replace.get(number, line)
        if new is not None:
            out.append(new)
        if insert and number in insert:
            out.append(insert[number])
    return "".join(out)


@pytest.mark.parametrize(
    ("case", "edit", "expected"),
    [
        ("one line rewritten", {5: "five\n"}, [(5, 5)]),
        ("two lines apart", {2: "two\n", 8: "eight\n"}, [(2, 2), (8, 8)]),
        ("a line taken out: its neighbours", {5: None}, [(4, 5)]),
        ("the first line taken out", {1: None}, [(1, 1)]),
        ("the last line taken out", {10: None}, [(9, 9)]),
        ("three lines taken out", {4: None, 5: None, 6: None}, [(3, 4)]),
        ("rewritten and taken out", {2: "two\n", 3: None}, [(2, 2)]),
    ],
)
def test_changed_lines_on_the_new_side(
    tmp_path: Path, case: str, edit: dict[int, str | None], expected: list[tuple[int, int]]
) -> None:
    repo = base_and_branch(tmp_path, {"a.txt": TEN})
    repo.commit(case, **{"a.txt": _edit(TEN, edit)})
    change = _file(_diff(repo), "a.txt")
    assert (change.status, change.old_path) == ("modified", "a.txt")
    assert _ranges(change) == expected


def test_added_lines_make_one_range(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"a.txt": TEN})
    repo.commit("grow", **{"a.txt": _edit(TEN, {}, insert={3: "new a\nnew b\n"})})
    assert _ranges(_file(_diff(repo), "a.txt")) == [(4, 5)]
    assert _file(_diff(repo), "a.txt").lines() == frozenset({4, 5})


def test_added_deleted_and_untouched_files(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"keep.txt": TEN, "gone.txt": TEN})
    repo.remove("gone.txt")
    repo.commit("add and delete", **{"new.txt": "one\ntwo\n"})
    diff = _diff(repo)
    assert {f.path: f.status for f in diff.files} == {"new.txt": "added", "gone.txt": "deleted"}
    added, deleted = _file(diff, "new.txt"), _file(diff, "gone.txt")
    assert (added.old_path, _ranges(added)) == (None, [(1, 2)])
    assert (deleted.old_path, deleted.ranges) == ("gone.txt", ())
    assert diff.file("keep.txt") is None


def test_a_renamed_file_is_followed(tmp_path: Path) -> None:
    body = "".join(f"value_{n} = {n}\n" for n in range(30))
    repo = base_and_branch(tmp_path, {"pkg/old_name.py": body})
    repo.move("pkg/old_name.py", "pkg/new_name.py")
    repo.commit("rename", **{"pkg/new_name.py": body.replace("value_7 = 7", "value_7 = 70")})
    change = _file(_diff(repo), "pkg/new_name.py")
    assert (change.status, change.old_path) == ("renamed", "pkg/old_name.py")
    assert _ranges(change) == [(8, 8)]


def test_a_pure_rename_has_no_changed_lines(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"a.py": TEN})
    repo.move("a.py", "b.py")
    repo.commit("rename only")
    change = _file(_diff(repo), "b.py")
    assert (change.status, change.old_path, change.ranges) == ("renamed", "a.py", ())


@pytest.mark.parametrize(
    "name",
    [
        "with space.py",
        "dir with space/t est.py",
        "unicodé/naïve_測試.py",
        'quote"d.py',
        "back\\slash.py",
        "tab\tname.py",
        " leading and trailing .py",
        "a b/ b/c.py",  # " b/" inside the name: the header cannot be split on it
    ],
)
def test_awkward_paths(tmp_path: Path, name: str) -> None:
    repo = base_and_branch(tmp_path, {name: TEN, "other.txt": "x\n"})
    repo.commit("edit", **{name: _edit(TEN, {3: "three\n"}), "other.txt": "y\n"})
    diff = _diff(repo)
    change = _file(diff, name)
    assert (change.old_path, change.status, _ranges(change)) == (name, "modified", [(3, 3)])
    assert _ranges(_file(diff, "other.txt")) == [(1, 1)]


@pytest.mark.parametrize(
    ("old", "new"),
    [("plain.py", "with space.py"), ("ü ber.py", "über/ neu.py"), ('a"b.py', "a b.py")],
)
def test_awkward_paths_renamed(tmp_path: Path, old: str, new: str) -> None:
    body = "".join(f"row {n}\n" for n in range(20))
    repo = base_and_branch(tmp_path, {old: body})
    repo.move(old, new)
    repo.commit("rename", **{new: body.replace("row 3\n", "row three\n")})
    change = _file(_diff(repo), new)
    assert (change.status, change.old_path, _ranges(change)) == ("renamed", old, [(4, 4)])


def test_binary_files_have_no_ranges(tmp_path: Path) -> None:
    blob = bytes(range(256)) * 4
    repo = base_and_branch(tmp_path, {"image one.bin": blob, "text.txt": "a\n"})
    repo.commit(
        "binary",
        **{"image one.bin": blob[::-1], "new ü.bin": b"\x00\x01\x02", "text.txt": "b\n"},
    )
    diff = _diff(repo)
    modified, added = _file(diff, "image one.bin"), _file(diff, "new ü.bin")
    assert (modified.binary, modified.status, modified.ranges) == (True, "modified", ())
    assert (added.binary, added.status, added.old_path) == (True, "added", None)
    assert _ranges(_file(diff, "text.txt")) == [(1, 1)]


def test_the_diff_starts_at_the_merge_base_not_at_the_base_tip(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"a.txt": TEN, "b.txt": TEN})
    repo.commit("topic work", **{"a.txt": _edit(TEN, {2: "two\n"})})
    repo.git("checkout", "-q", "main")
    repo.commit("main moves on", **{"b.txt": _edit(TEN, {9: "nine\n"})})
    repo.git("checkout", "-q", "topic")
    diff = _diff(repo)
    assert [f.path for f in diff.files] == ["a.txt"]
    assert diff.merge_base == repo.git("merge-base", "main", "topic")
    assert diff.head == repo.git("rev-parse", "HEAD")


def test_a_detached_head_works(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"a.txt": TEN})
    commit = repo.commit("edit", **{"a.txt": _edit(TEN, {6: "six\n"})})
    repo.git("checkout", "-q", "--detach", commit)
    assert repo.git("rev-parse", "--abbrev-ref", "HEAD") == "HEAD"
    diff = _diff(repo)
    assert diff.head == commit
    assert _ranges(_file(diff, "a.txt")) == [(6, 6)]


def test_the_environment_cannot_redirect_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = base_and_branch(tmp_path / "repo", {"a.txt": TEN})
    repo.commit("edit", **{"a.txt": _edit(TEN, {1: "one\n"})})
    decoy = Repo(tmp_path / "decoy")
    decoy.commit("decoy", **{"z.txt": "z\n"})
    monkeypatch.setenv("GIT_DIR", str(decoy.root / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(decoy.root))
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "false")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'diff.noprefix'='true'")
    diff = _diff(repo)
    assert [f.path for f in diff.files] == ["a.txt"]
    assert _ranges(_file(diff, "a.txt")) == [(1, 1)]


def test_the_repository_configuration_cannot_change_the_reading(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"a b.txt": TEN, "c.txt": TEN})
    for key, value in [
        ("diff.noprefix", "true"),
        ("diff.mnemonicPrefix", "true"),
        ("diff.relative", "true"),
        ("diff.context", "5"),
        ("diff.interHunkContext", "10"),
        ("color.ui", "always"),
        ("diff.external", "false"),
        ("core.quotePath", "true"),
    ]:
        repo.git("config", key, value)
    repo.commit("edit", **{"a b.txt": _edit(TEN, {2: "two\n", 5: "five\n"}), "c.txt": "c\n"})
    diff = _diff(repo)
    assert _ranges(_file(diff, "a b.txt")) == [(2, 2), (5, 5)]
    assert _ranges(_file(diff, "c.txt")) == [(1, 1)]


def test_a_subdirectory_is_enough_to_find_the_repository(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"sub/a.txt": TEN})
    repo.commit("edit", **{"sub/a.txt": _edit(TEN, {4: "four\n"})})
    diff = changes_since(repo.root / "sub", "main")
    assert isinstance(diff, Diff)
    assert diff.root == repo.root.resolve()
    assert [f.path for f in diff.files] == ["sub/a.txt"]


# -- the diff is unavailable, and says why ----------------------------------------------


def _reason(root: Path, base: str | None = "main") -> str:
    result = changes_since(root, base, environ={})
    assert isinstance(result, Unavailable), result
    assert "\n" not in result.reason
    assert isinstance(result.error(), UsageError)
    return result.reason


def test_not_a_repository(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    reason = _reason(tmp_path / "plain")
    assert "not in a git repository" in reason


@pytest.mark.parametrize(
    ("base", "fetch"),
    [("origin/main", "git fetch origin main"), ("no-such-branch", "git fetch")],
)
def test_a_base_that_does_not_exist(tmp_path: Path, base: str, fetch: str) -> None:
    repo = base_and_branch(tmp_path, {"a.txt": TEN})
    reason = _reason(repo.root, base)
    assert f"{base!r} is not in this clone" in reason
    assert fetch in reason
    assert "fetch-depth: 0" in reason


def test_a_repository_without_commits(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    assert "HEAD is not a commit" in _reason(repo.root)


def test_unrelated_histories_have_no_merge_base(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"a.txt": TEN})
    repo.git("checkout", "-q", "--orphan", "other")
    repo.commit("unrelated", **{"b.txt": "b\n"})
    reason = _reason(repo.root, "main")
    assert "share no history" in reason
    assert "shallow" not in reason


def test_a_shallow_clone_says_which_fetch_is_missing(tmp_path: Path) -> None:
    origin = base_and_branch(tmp_path / "origin", {"a.txt": TEN})
    for n in range(3):
        origin.commit(f"topic {n}", **{"a.txt": _edit(TEN, {n + 1: f"topic {n}\n"})})
    origin.git("checkout", "-q", "main")
    origin.commit("main moves on", **{"b.txt": "b\n"})
    clone = Repo(tmp_path / "clone", init=False)
    url = (tmp_path / "origin").as_uri()
    origin.git(
        "clone", "-q", "--depth", "1", "--no-single-branch", url, str(clone.root), cwd=tmp_path
    )
    clone.git("checkout", "-q", "topic")
    assert clone.git("rev-parse", "--is-shallow-repository") == "true"
    reason = _reason(clone.root, "origin/main")
    assert "no merge base" in reason
    assert "shallow" in reason
    assert "git fetch --unshallow" in reason
    assert "fetch-depth: 0" in reason
    # Once the history is there, the same call answers the diff.
    clone.git("fetch", "-q", "--unshallow")
    diff = changes_since(clone.root, "origin/main")
    assert isinstance(diff, Diff)
    assert _ranges(_file(diff, "a.txt")) == [(3, 3)]


# -- the default base ------------------------------------------------------------------


def _with_origin(tmp_path: Path, branches: tuple[str, ...] = ("main",)) -> Repo:
    origin = base_and_branch(tmp_path / "origin", {"a.txt": TEN})
    for branch in branches:
        if branch != "main":
            origin.git("branch", branch, "main")
    origin.git("checkout", "-q", "main")  # the clone's origin/HEAD
    clone = Repo(tmp_path / "clone", init=False)
    origin.git("clone", "-q", (tmp_path / "origin").as_uri(), str(clone.root), cwd=tmp_path)
    return clone


def test_the_default_base_in_a_pull_request(tmp_path: Path) -> None:
    clone = _with_origin(tmp_path, ("main", "release"))
    env = {"GITHUB_BASE_REF": "release"}
    assert default_base(clone.root, env) == "origin/release"
    assert isinstance(changes_since(clone.root, environ=env), Diff)


def test_the_pull_requests_base_missing_says_what_to_fetch(tmp_path: Path) -> None:
    clone = _with_origin(tmp_path)
    with pytest.raises(UsageError, match="git fetch origin gone") as raised:
        default_base(clone.root, {"GITHUB_BASE_REF": "gone"})
    assert "fetch-depth: 0" in str(raised.value)
    result = changes_since(clone.root, environ={"GITHUB_BASE_REF": "gone"})
    assert isinstance(result, Unavailable)
    assert "origin/gone" in result.reason


def test_the_default_base_outside_a_pull_request_is_origin_head(tmp_path: Path) -> None:
    clone = _with_origin(tmp_path)
    assert clone.git("symbolic-ref", "refs/remotes/origin/HEAD") == "refs/remotes/origin/main"
    assert default_base(clone.root, {"GITHUB_BASE_REF": ""}) == "origin/HEAD"
    clone.commit("work", **{"a.txt": _edit(TEN, {10: "ten\n"})})
    diff = changes_since(clone.root, environ={})
    assert isinstance(diff, Diff)
    assert _ranges(_file(diff, "a.txt")) == [(10, 10)]


def test_no_default_base_is_a_clear_error(tmp_path: Path) -> None:
    repo = base_and_branch(tmp_path, {"a.txt": TEN})
    with pytest.raises(UsageError, match="pass the base branch") as raised:
        default_base(repo.root, {})
    assert "git remote set-head origin --auto" in str(raised.value)
    assert "pass the base branch" in _reason(repo.root, None)


def test_git_answers_within_its_time_limit_or_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = base_and_branch(tmp_path, {"a.txt": TEN})
    monkeypatch.setattr("flakewarden.changes.git.GIT_SECONDS", 1e-6)
    result = changes_since(repo.root, "main")
    assert isinstance(result, Unavailable)
    assert "took longer than" in result.reason


def test_git_missing_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = base_and_branch(tmp_path, {"a.txt": TEN})
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = changes_since(repo.root, "main")
    assert isinstance(result, Unavailable)
    assert "git is not installed" in result.reason


def test_line_range_membership() -> None:
    lines = LineRange(3, 5)
    assert [n for n in range(1, 8) if n in lines] == [3, 4, 5]
    assert lines.overlaps(5, 9) and lines.overlaps(1, 3) and not lines.overlaps(6, 9)
