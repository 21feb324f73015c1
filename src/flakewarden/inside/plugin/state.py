"""What each test leaves behind in shared state (``FLAKEWARDEN_STATE=1``).

An order-dependent test fails after a polluter because the polluter changed something the
two share. As PolDet and iFixFlakies do, each run's state is taken right before its setup
and again after its teardown, and what differs goes on the teardown's report
(``STATE_ATTRIBUTE``), from there into the run's ``test`` record as ``state``:

- the globals of the project's modules and of the installed libraries' (not the standard
  library's, the test runner's or this plugin's), by a bounded ``repr`` (with the length
  of a container); an object whose ``repr`` names only its id (a settings object, a
  cache) by each of its attributes, named in full (``pkg.config.PORT``);
- the class attributes of the classes those modules define (methods and properties aside);
- environment variables; the working directory; the modules imported (``sys.modules``,
  the test runner's own aside);
- files under the rootdir (size and modification time), skipping version control, caches,
  virtual environments and at most ``MAX_FILES`` entries.

A value is compared by its ``repr`` cut to ``MAX_REPR`` characters: a list appended to, a
dict updated in place, an attribute of a settings object or a setting replaced all show.
The state is taken around the first run of each test in a process only (what a test
leaves behind for its own repeats, or a polluter for the next test): taking it costs time
in proportion to the modules and files, so only the stress engine's localisation asks
for it, on a handful of runs. Standard library only.
"""

from __future__ import annotations

import os
import reprlib
import sys
import types
from typing import Any, Optional

from .places import Places
from .recorder import STATE_ATTRIBUTE

__all__ = ["STATE_ATTRIBUTE", "VARIABLE", "configure"]

VARIABLE = "FLAKEWARDEN_STATE"
MAX_REPR = 120
MAX_FILES = 5_000
MAX_CHANGES = 300  # a first run may import many modules: the one that matters sorts last
MAX_ATTRIBUTES = 200  # of one object a module holds, each compared on its own
_SKIPPED_DIRS = {".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".tox"}
_SKIPPED_DIRS |= {".nox", "node_modules", ".venv", "venv", "flakewarden-stress", ".eggs"}
# Modules the test runner imports for itself, not what a test leaves in ``sys.modules``.
_OWN_MODULES = ("_pytest", "pytest", "pluggy", "py.", "iniconfig", "flakewarden", "xdist")
_repr = reprlib.Repr()
_repr.maxstring = MAX_REPR
_repr.maxother = MAX_REPR
_repr.maxlevel = 4
_KINDS = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)
_METHODS = (types.FunctionType, staticmethod, classmethod, property)
_DEFAULT_REPR: Any = object.__repr__


def _attributes(value: Any) -> dict[str, Any]:
    """An object's attributes: its ``__dict__`` and its slots."""
    found = dict(vars(value)) if isinstance(getattr(value, "__dict__", None), dict) else {}
    for cls in type(value).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(value, name):
                found[name] = getattr(value, name)
    return found


def _text(value: Any) -> str:
    try:
        if getattr(type(value), "__repr__", None) is _DEFAULT_REPR:
            # its repr names only its id: the type, its attributes taken one by one apart
            text = f"<{type(value).__name__} object>"
        else:
            text = _repr.repr(value)
            if isinstance(value, (list, dict, set, tuple, frozenset)) and len(value) > 6:
                text = f"{text} (len {len(value)})"  # a cut repr still shows an item added
    except Exception:  # a __repr__ that raises still leaves the value comparable by type
        text = f"<{type(value).__name__} whose repr raised>"
    return text if len(text) <= MAX_REPR else text[: MAX_REPR - 12] + "..." + text[-9:]


class Shared:
    """Whose globals are taken: the project's modules and the installed libraries' (a
    library's settings object is shared state too), not the standard library's, the test
    runner's or this plugin's."""

    def __init__(self, places: Places, plugin_dir: str) -> None:
        self.places = places
        self.plugin_dir = os.path.normcase(os.path.realpath(plugin_dir))
        self.known: dict[str, bool] = {}

    def __call__(self, name: str, filename: str) -> bool:
        found = self.known.get(filename)
        if found is None:
            real = os.path.normcase(os.path.realpath(filename))
            parts = real.split(os.sep)
            installed = "site-packages" in parts or "dist-packages" in parts
            # an installed library (site-packages may sit inside the standard library's
            # folder, as in an interpreter without a virtualenv)
            found = self.places(filename) or (
                installed
                and not name.startswith(_OWN_MODULES)
                and not real.startswith(self.plugin_dir)
            )
            self.known[filename] = found
        return found


class Snapshot:
    """The shared state one process holds at one moment, as comparable text."""

    def __init__(self, shared: Shared, rootdir: str) -> None:
        self.values: dict[tuple[str, str], str] = {}
        self.modules = set(sys.modules)
        self.origin: dict[tuple[str, str], str] = {}  # a global's or class's module
        for name, module in list(sys.modules.items()):
            try:  # anything may sit in sys.modules: an object whose every attribute raises
                filename = getattr(module, "__file__", None)
                if isinstance(filename, str) and shared(name, filename):
                    self._module(name, module)
            except Exception:
                continue
        for key, value in os.environ.items():
            if key != "PYTEST_CURRENT_TEST":  # pytest's own, changed by every phase
                self.values[("env", key)] = _text(value)
        try:
            self.values[("cwd", "")] = os.getcwd()
        except OSError:
            self.values[("cwd", "")] = "<removed>"
        self._files(rootdir)
        for name in list(sys.modules):
            if not name.startswith(_OWN_MODULES):
                self.values[("module", name)] = "imported"

    def _module(self, name: str, module: types.ModuleType) -> None:
        try:
            items = list(vars(module).items())
        except TypeError:
            return
        for key, value in items:
            if key.startswith("__") or isinstance(value, _KINDS):
                if isinstance(value, type) and getattr(value, "__module__", None) == name:
                    self._class(name, f"{name}.{key}", value)
                continue
            if key.startswith("@"):  # pytest's assertion rewriting helpers
                continue
            self.values[("global", f"{name}.{key}")] = _text(value)
            self.origin[("global", f"{name}.{key}")] = name
            if getattr(type(value), "__repr__", None) is _DEFAULT_REPR:
                # a settings object, a cache: each attribute on its own, named in full
                try:
                    attributes = list(_attributes(value).items())[:MAX_ATTRIBUTES]
                except Exception:  # a property or slot that raises: compared as a whole
                    continue
                for attribute, inner in attributes:
                    self.values[("global", f"{name}.{key}.{attribute}")] = _text(inner)
                    self.origin[("global", f"{name}.{key}.{attribute}")] = name

    def _class(self, module: str, qualname: str, cls: type) -> None:
        for key, value in list(vars(cls).items()):
            if key.startswith("__") or isinstance(value, _METHODS) or callable(value):
                continue
            self.values[("class", f"{qualname}.{key}")] = _text(value)
            self.origin[("class", f"{qualname}.{key}")] = module

    def _files(self, rootdir: str) -> None:
        seen = 0
        # the records this very process appends to, when they are under the rootdir
        records = os.path.abspath(os.environ.get("FLAKEWARDEN_RESULTS") or os.devnull)
        for folder, dirs, files in os.walk(rootdir):
            dirs[:] = sorted(
                d
                for d in dirs
                if d not in _SKIPPED_DIRS
                and not d.endswith(".egg-info")
                and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
            )
            for file in sorted(files):
                if file.startswith(".coverage"):
                    continue  # coverage's data files: written by the measurement, not the test
                seen += 1
                if seen > MAX_FILES:
                    return
                path = os.path.join(folder, file)
                if os.path.abspath(path) == records:
                    continue
                try:
                    stat = os.lstat(path)
                except OSError:
                    continue
                relative = os.path.relpath(path, rootdir)
                self.values[("file", relative)] = f"{stat.st_size} bytes, {stat.st_mtime_ns}"


def changes(before: Snapshot, after: Snapshot) -> list[dict[str, str]]:
    """What differs, in a stable order: each entry's kind, name and both values."""
    found = []
    for key in sorted(before.values.keys() | after.values.keys()):
        old, new = before.values.get(key), after.values.get(key)
        if old == new:
            continue
        if old is None and key in after.origin and after.origin[key] not in before.modules:
            continue  # a module imported meanwhile brought it: its "module" entry says so
        kind, name = key
        found.append(
            {
                "kind": kind,
                "name": name,
                "before": "<absent>" if old is None else old,
                "after": "<absent>" if new is None else new,
            }
        )
        if len(found) >= MAX_CHANGES:
            break
    return found


def _taken(shared: Shared, rootdir: str) -> Optional[Snapshot]:
    """The state now; None when taking it failed: the test must never fail for it."""
    try:
        return Snapshot(shared, rootdir)
    except Exception:
        return None


def configure(config: Any, plugin_dir: str) -> None:
    """Register the hooks that take the state around each run."""
    import pytest  # pytest is running us by now

    rootdir = str(config.rootpath)
    shared = Shared(Places(rootdir, plugin_dir), plugin_dir)

    class State:
        def __init__(self) -> None:
            self.before: Optional[Snapshot] = None
            self.ran: set[str] = set()

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_setup(self, item: Any) -> None:
            if item.nodeid in self.ran:
                return  # its first run in the process is what leaves state to the next
            self.ran.add(item.nodeid)
            self.before = _taken(shared, rootdir)

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
            outcome = yield
            if call.when != "teardown" or self.before is None:
                return
            after = _taken(shared, rootdir)
            if after is None:
                self.before = None
                return
            found = changes(self.before, after)
            self.before = None
            setattr(outcome.get_result(), STATE_ATTRIBUTE, found)

    config.pluginmanager.register(State(), "flakewarden-state")
