"""Reading git's patch text: quoted paths, headers, hunks (pure, no repository)."""

from __future__ import annotations

import pytest

from flakewarden.changes.patch import PatchError, header_paths, parse_patch, unquote


@pytest.mark.parametrize(
    ("written", "path"),
    [
        ("plain.py", "plain.py"),
        ('"a\\tb.py"', "a\tb.py"),
        ('"q\\"uote.py"', 'q"uote.py'),
        ('"back\\\\slash.py"', "back\\slash.py"),
        ('"caf\\303\\251.py"', "café.py"),  # octal bytes, as with core.quotePath on
        ('"line\\nbreak.py"', "line\nbreak.py"),
        ('"\\377raw.py"', "\udcffraw.py"),  # not UTF-8: kept, not lost
    ],
)
def test_unquote(written: str, path: str) -> None:
    assert unquote(written) == path


def test_unquote_refuses_an_unknown_escape() -> None:
    with pytest.raises(PatchError):
        unquote('"bad\\q.py"')


@pytest.mark.parametrize(
    ("rest", "paths"),
    [
        ("a/x.py b/x.py", ("x.py", "x.py")),
        ("a/with space.py b/with space.py", ("with space.py", "with space.py")),
        ("a/a b/c.py b/a b/c.py", ("a b/c.py", "a b/c.py")),
        ('"a/t\\tab.py" "b/t\\tab.py"', ("t\tab.py", "t\tab.py")),
        ("a/old.py b/new.py", None),  # a rename: read from its own lines instead
    ],
)
def test_header_paths(rest: str, paths: tuple[str, str] | None) -> None:
    assert header_paths(rest) == paths


PATCH = """\
diff --git a/mod.py b/mod.py
index 1111111..2222222 100644
--- a/mod.py
+++ b/mod.py
@@ -2 +2 @@ def f():
-    return 1
+    return 2
@@ -5,2 +4,0 @@ def g():
--- this removed line starts like a header
-++ and so does this
@@ -9,0 +8,2 @@
+new one
+new two
\\ No newline at end of file
diff --git a/old name.py b/new name.py
similarity index 90%
rename from old name.py
rename to new name.py
diff --git a/img.png b/img.png
new file mode 100644
index 0000000..3333333
Binary files /dev/null and b/img.png differ
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 4444444..0000000
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
"""


def test_parse_a_patch() -> None:
    mod, renamed, image, gone = parse_patch(PATCH)
    assert (mod.path, mod.old_path, mod.status, mod.binary) == (
        "mod.py",
        "mod.py",
        "modified",
        False,
    )
    assert [(h.old_start, h.old_count, h.new_start, h.new_count) for h in mod.hunks] == [
        (2, 1, 2, 1),
        (5, 2, 4, 0),
        (9, 0, 8, 2),
    ]
    assert [h.added for h in mod.hunks] == [(2,), (), (8, 9)]
    assert [h.removed for h in mod.hunks] == [(2,), (5, 6), ()]
    assert (renamed.path, renamed.old_path, renamed.status) == (
        "new name.py",
        "old name.py",
        "renamed",
    )
    assert (renamed.similarity, renamed.hunks) == (90, ())
    assert (image.path, image.old_path, image.status, image.binary) == (
        "img.png",
        None,
        "added",
        True,
    )
    assert (gone.path, gone.old_path, gone.status) == ("gone.txt", "gone.txt", "deleted")


def test_an_empty_diff_has_no_files() -> None:
    assert parse_patch("") == []


@pytest.mark.parametrize(
    "text",
    [
        "not a diff\n",
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n",  # ends early
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n?odd\n",
    ],
)
def test_output_that_is_not_a_patch_is_refused(text: str) -> None:
    with pytest.raises(PatchError):
        parse_patch(text)
