"""Which loaded modules came from a folder: the base check's proof that it ran the base.

A project installed in editable mode, or with its source folder put on ``sys.path``,
imports the checkout it was installed from wherever its tests run. The base check runs
the tests in a worktree of the merge base and names the pull request's checkout in
``FLAKEWARDEN_MODULES_UNDER``; a module loaded from under it means the base check ran
the pull request's code. Files under the interpreter's own prefixes (a virtual
environment inside the checkout) are installed code, not the checkout's, and are left out.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

ENV = "FLAKEWARDEN_MODULES_UNDER"
LIMIT = 50  # files named in one record: the first is the one reported


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def loaded_under(folder: str) -> list[str]:
    """The files of loaded modules under ``folder``, real paths, in the order they loaded."""
    top = os.path.realpath(folder)
    prefixes = {
        os.path.realpath(p)
        for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix)
    }
    # A prefix holding the whole folder would hide everything under it: not left out.
    installed = [p for p in prefixes if not _within(top, p)]
    found: dict[str, None] = {}
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if not isinstance(name, str) or not name:
            continue
        path = os.path.realpath(name)
        if _within(path, top) and not any(_within(path, p) for p in installed):
            found.setdefault(path, None)
            if len(found) >= LIMIT:
                break
    return list(found)


def record() -> Optional[dict[str, Any]]:
    """The ``modules`` record, when ``FLAKEWARDEN_MODULES_UNDER`` names a folder."""
    folder = os.environ.get(ENV)
    if not folder:
        return None
    return {"kind": "modules", "under": folder, "files": loaded_under(folder)}
