"""What a change touched: the diff against a merge base, as changed line ranges per file.

Burn-in (the tests a pull request adds or changes) and blame (did a failure run the change)
both read it; verify-fix will too.

- ``diff``: ``changes_since(root, base)``, HEAD against its merge base with ``base``: a
  ``Diff`` (per file: paths, status, changed new-side lines) or an ``Unavailable`` that
  says what to fetch; ``default_base`` (the pull request's base, else ``origin/HEAD``).
- ``patch``: reading ``git diff -U0`` output (pure); ``cosmetic``: whether a Python hunk
  changes only white space or comments (blame's ``ignore_cosmetic``).
- ``definitions``: a Python file's functions, classes, methods and fixtures, and which of
  them a change made new, changed or only renamed.
- ``selection``: ``select_for_burn_in(diff, items)``, the collected tests to stress, why,
  in which order, within a cap.
- ``git``: the one way this wing runs git.
"""

from __future__ import annotations

from .definitions import Definition, FileDefinitions, Touched, definitions_changed, definitions_in
from .diff import (
    Diff,
    DiffResult,
    FileChange,
    LineRange,
    Unavailable,
    changes_since,
    default_base,
)
from .selection import (
    CHANGED_TEST,
    IN_CHANGED_CLASS,
    NEW_TEST,
    CollectedItem,
    NotRun,
    Selected,
    Selection,
    select_for_burn_in,
    uses_changed_fixture,
)

__all__ = [
    "CHANGED_TEST",
    "IN_CHANGED_CLASS",
    "NEW_TEST",
    "CollectedItem",
    "Definition",
    "Diff",
    "DiffResult",
    "FileChange",
    "FileDefinitions",
    "LineRange",
    "NotRun",
    "Selected",
    "Selection",
    "Touched",
    "Unavailable",
    "changes_since",
    "default_base",
    "definitions_changed",
    "definitions_in",
    "select_for_burn_in",
    "uses_changed_fixture",
]
