"""Which files are the project's, and which of their lines a knob is limited to.

Shared by the knobs and records that look at the project's own code (``yields``,
``lines``, ``state``, ``event_loop``). Standard library only.
"""

from __future__ import annotations

import os
import sys
import sysconfig

__all__ = ["Only", "Places"]


class Only:
    """The lines pauses are limited to (``FLAKEWARDEN_YIELD_LINES``), by file as code names it."""

    def __init__(self, rootdir: str, text: str) -> None:
        self.wanted: dict[str, set[int]] = {}
        for item in text.split(","):
            file, colon, line = item.strip().rpartition(":")
            if colon and file and line.isdigit():
                for form in _forms(os.path.join(rootdir, file)):
                    self.wanted.setdefault(form, set()).add(int(line))
        self.known: dict[str, frozenset[int]] = {}

    def lines(self, filename: str) -> frozenset[int]:
        """The lines of ``filename`` pauses may be taken at (empty: none of its lines)."""
        found = self.known.get(filename)
        if found is None:
            found = frozenset().union(*(self.wanted.get(f, set()) for f in _forms(filename)))
            self.known[filename] = found
        return found


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class Places:
    """Which files are the project's: decided once per file name."""

    def __init__(self, rootdir: str, plugin_dir: str = "") -> None:
        self.roots = _forms(rootdir)
        paths = sysconfig.get_paths()
        folders = [paths.get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")]
        folders += [plugin_dir, os.path.dirname(os.__file__)]
        for name in ("pytest", "_pytest", "pluggy"):
            folders.append(os.path.dirname(getattr(sys.modules.get(name), "__file__", "") or ""))
        # A folder holding the whole root (an install prefix around the project) hides nothing.
        self.outside = [
            form
            for folder in folders
            if folder
            for form in _forms(folder)
            if not any(_within(root, form) for root in self.roots)
        ]
        self.known: dict[str, bool] = {}

    def __call__(self, filename: str) -> bool:
        known = self.known.get(filename)
        if known is None:
            known = self.known[filename] = self._decide(filename)
        return known

    def _decide(self, filename: str) -> bool:
        if not filename or filename.startswith("<"):
            return False
        for path in _forms(filename):
            parts = path.split(os.sep)
            if "site-packages" in parts or "dist-packages" in parts:
                return False
            if any(_within(path, folder) for folder in self.outside):
                return False
            if any(_within(path, root) for root in self.roots):
                return True
        return False


def _forms(path: str) -> list[str]:
    """The absolute and the real form of a path (a symlinked tmp or checkout has both)."""
    absolute = os.path.normcase(os.path.abspath(path))
    real = os.path.normcase(os.path.realpath(path))
    return [absolute] if real == absolute else [absolute, real]
