"""A fork server run in the tested interpreter: standard library only, Python 3.9+.

``flakewarden stress`` starts this script with the interpreter the test command
names, e.g. ``.venv/bin/python flakewarden_fork_server.py --module`` for ``.venv/bin/python -m
pytest``. It imports pytest, pytest's built-in plugins and the installed plugins
(entry points of group ``pytest11``, through pytest's assertion-rewriting hook as
pytest imports them) and the top-level packages of those plugins' distributions (which
their hooks import later in every run: ``hypothesis`` for its plugin) once, then forks
one child per run. Each
child leads a process group of its own in the server's session, takes the
run's environment, working directory and log, and runs pytest's own
``__main__`` (or the ``pytest`` console script) as a fresh interpreter would:
``SystemExit`` and the interpreter's shutdown (atexit, non-daemon threads)
happen as in a spawned process. Test modules and conftest files are imported
in the child only.

Protocol, one JSON object per line. On stdout, first a greeting: ``{"ready":
true, "pid", "loaded"}``, or ``{"ready": false, "reason": "threads", "threads",
"after"}`` (a thread was running after the start-up, pytest's import or one
plugin's, named in ``plugin``; forking a threaded process is unsafe) or
``{"ready": false, "reason": "error", "error"}``, after which the server exits.
Then, on stdin, requests ``{"id", "args", "env", "cwd", "log"}``; the server
forks and answers ``{"id", "pid"}`` at once (``{"id", "error"}`` when the fork
failed) and ``{"id", "pid", "exit"}`` once the child is reaped, a signal's death
as a negative code as ``subprocess`` reports it. When stdin closes, every
child still running is killed with its group and the server exits.

Options: ``--module`` (run ``-m pytest``) or ``--script PATH`` (run that console
script), ``--skip VALUE`` (an entry point, e.g. ``pytest_randomly``, not to import
in the server: the child imports it), ``--prefix JSON`` (the command's start, for
``sys.orig_argv``), ``--conftest PATH`` (a conftest file to import after the plugins, as
pytest's default ``prepend`` import mode does; the reruns' server is given the ones its
children's pytest would import) with ``--rootdir PATH``. A conftest whose import fails,
starts a thread or opens a socket makes the greeting ``{"ready": false, "reason":
"error" | "threads" | "sockets", "conftest"}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
from typing import Any, Optional

ENTRY_POINT_GROUP = "pytest11"


class Options:
    def __init__(self, argv: list[str]) -> None:
        self.script: Optional[str] = None
        self.skip: set[str] = set()
        self.prefix: list[str] = []
        self.conftests: list[str] = []
        self.rootdir = ""
        index = 0
        while index < len(argv):
            flag = argv[index]
            if flag == "--module":
                index += 1
                continue
            value = argv[index + 1]
            if flag == "--script":
                self.script = value
            elif flag == "--skip":
                self.skip.add(value)
            elif flag == "--prefix":
                self.prefix = [str(p) for p in json.loads(value)]
            elif flag == "--conftest":
                self.conftests.append(value)
            elif flag == "--rootdir":
                self.rootdir = value
            else:
                raise SystemExit(f"fork server: unknown option {flag}")
            index += 2


def threads() -> int:
    """Threads in this process: the kernel's count, which sees threads Python did not start."""
    try:
        native = len(os.listdir("/proc/self/task"))
    except OSError:
        native = 1
    threading = sys.modules.get("threading")
    python = threading.active_count() if threading is not None else 1
    return max(native, python)


def _threaded(after: str, plugin: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {"ready": False, "reason": "threads", "threads": threads()}
    found["after"] = after
    if plugin:
        found["plugin"] = plugin
    return found


class _RewriteConfig:
    """What pytest's assertion-rewriting hook reads of a config, at pytest's defaults.

    The server parses no ini file (that is each run's business), so a real config
    cannot answer ``getini`` yet; the hook only needs its state and two values.
    """

    def __init__(self, stash: Any) -> None:
        self.stash = stash

    def getini(self, name: str) -> Any:
        if name == "python_files":
            return ["test_*.py", "*_test.py"]
        if name == "enable_assertion_pass_hook":
            return False
        raise ValueError(name)

    def issue_config_time_warning(self, warning: Warning, stacklevel: int) -> None:
        """A plugin module imported before us (a .pth file): the child's pytest says so."""


def _rewrite_hook(config: Any) -> Any:
    """pytest's assertion-rewriting import hook, with every plugin's modules marked, as in a run.

    pytest rewrites the asserts of the plugin modules it imports; one imported here
    without the hook would be left as is, and pytest would warn of it in every run
    (an error under ``-W error``). None when this pytest's internals are not as
    expected: no plugin is imported here then.
    """
    try:
        import importlib.metadata

        from _pytest.assertion import AssertionState
        from _pytest.assertion.rewrite import AssertionRewritingHook
        from _pytest.assertion.rewrite import assertstate_key as key
        from _pytest.config import _iter_rewritable_modules

        config.stash[key] = AssertionState(config, "rewrite")
        hook = AssertionRewritingHook(_RewriteConfig(config.stash))  # type: ignore[arg-type]
        config.stash[key].hook = hook
        files = (
            str(file)
            for dist in importlib.metadata.distributions()
            if any(point.group == ENTRY_POINT_GROUP for point in dist.entry_points)
            for file in dist.files or []
        )
        for name in _iter_rewritable_modules(files):
            hook.mark_rewrite(name)
    except Exception:
        return None
    sys.meta_path.insert(0, hook)
    return hook


def _pytest_config() -> Any:
    """A config of pytest's own, holding its built-in plugins (imported); None on an old pytest.

    It reads no ini file and no conftest: those are each run's business.
    """
    try:
        from _pytest.config import get_config

        return get_config([])
    except Exception:
        return None


_NOT_PACKAGES = {"test", "tests", "testing", "docs", "doc", "examples", "benchmarks"}


def _packages(dist: Any) -> list[str]:
    """The top-level packages a distribution installs (``top_level.txt``, else its files)."""
    text = None
    with contextlib.suppress(Exception):
        text = dist.read_text("top_level.txt")
    if text:
        names = {line.strip() for line in text.splitlines()}
    else:
        names = set()
        for file in dist.files or []:
            parts = str(file).replace("\\", "/").split("/")
            if len(parts) > 1 and parts[1] == "__init__.py":
                names.add(parts[0])
    return sorted(
        n for n in names if n.isidentifier() and not n.startswith("_") and n not in _NOT_PACKAGES
    )


def preload(
    skip: set[str], conftests: Optional[list[str]] = None, rootdir: str = ""
) -> dict[str, Any]:
    """Import pytest, its plugins and the given conftests as pytest does; say if forking is safe."""
    if threads() > 1:
        return _threaded("start-up")
    try:
        import pytest  # noqa: F401
    except Exception as exc:
        return {"ready": False, "reason": "error", "error": f"{type(exc).__name__}: {exc}"}
    config = _pytest_config()
    if threads() > 1:
        return _threaded("pytest")
    loaded: list[str] = []
    autoload = config is not None and not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    hook = _rewrite_hook(config) if config is not None and (autoload or conftests) else None
    if hook is None:
        return {"ready": True, "pid": os.getpid(), "loaded": loaded}
    try:
        refused = _load_plugins(skip, loaded) if autoload else None
        if refused is None:
            refused = _load_conftests(conftests or [], rootdir, loaded)
        if refused is not None:
            return refused
    finally:
        if hook in sys.meta_path:
            sys.meta_path.remove(hook)  # each child's pytest installs its own
    return {"ready": True, "pid": os.getpid(), "loaded": loaded}


def _load_plugins(skip: set[str], loaded: list[str]) -> Optional[dict[str, Any]]:
    """Import the installed plugins and their distributions' packages; a refusal, or None."""
    import importlib.metadata

    for dist in list(importlib.metadata.distributions()):
        plugin = ""
        for point in dist.entry_points:
            if point.group != ENTRY_POINT_GROUP or point.value in skip:
                continue
            try:
                point.load()
            except Exception:  # the child's pytest meets the same error and reports it
                continue
            if threads() > 1:
                return _threaded("plugin", point.value)
            loaded.append(point.value)
            plugin = point.value
        # The plugin's own distribution: its hooks import it later, in every child
        # (hypothesis's terminal summary imports hypothesis: 0.2-0.4 s a run).
        for name in _packages(dist) if plugin else ():
            if name in sys.modules:
                continue
            try:
                importlib.import_module(name)
            except Exception:
                continue
            if threads() > 1:
                return _threaded("plugin", plugin)
    return None


def _sockets() -> set[str]:
    """The sockets this process holds open (Linux's ``/proc``; none seen elsewhere)."""
    found = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/self/fd/{fd}")
                if target.startswith("socket:"):
                    found.add(target)
    return found


def _load_conftests(paths: list[str], rootdir: str, loaded: list[str]) -> Optional[dict[str, Any]]:
    """Import conftest files as pytest's default import mode does, under the rewriting hook.

    The child's pytest finds in ``sys.modules`` what they imported (and a conftest in a
    package, itself); a conftest outside a package is executed anew by the child's pytest,
    which drops ``conftest`` from ``sys.modules`` before each import. One whose import
    fails, starts a thread or opens a socket refuses the fork: nothing of it may be shared.
    """
    if not paths:
        return None
    try:
        import inspect
        from pathlib import Path

        from _pytest.pathlib import ImportMode, import_path, resolve_package_path

        takes = inspect.signature(import_path).parameters
    except Exception as exc:
        return {"ready": False, "reason": "error", "error": f"{type(exc).__name__}: {exc}"}
    options: dict[str, Any] = {"mode": ImportMode.prepend, "root": Path(rootdir)}
    if "consider_namespace_packages" in takes:
        options["consider_namespace_packages"] = False
    sockets = _sockets()
    path_before = list(sys.path)
    try:
        for path in paths:
            conftest = Path(path)
            if resolve_package_path(conftest) is None:
                sys.modules.pop(conftest.stem, None)  # as pytest does before each
            try:
                import_path(conftest, **options)
            except BaseException as exc:
                error = f"{type(exc).__name__}: {exc}"
                return {"ready": False, "reason": "error", "error": error, "conftest": path}
            if threads() > 1:
                return {**_threaded("conftest"), "conftest": path}
            if _sockets() - sockets:
                return {"ready": False, "reason": "sockets", "conftest": path}
            loaded.append(path)
    finally:
        sys.path[:] = path_before  # the child's pytest puts the rootdir there itself
    return None


def _send(fd: int, message: dict[str, Any]) -> None:
    data = (json.dumps(message) + "\n").encode("utf-8")
    while data:
        data = data[os.write(fd, data) :]


def _ignore(signum: int, frame: object) -> None:
    """SIGCHLD's handler: the wake-up pipe does the work."""


class Server:
    """Reads requests, forks children, reports how they end."""

    def __init__(self, requests: int, replies: int) -> None:
        self.requests = requests
        self.replies = replies
        self.children: dict[int, object] = {}  # pid -> request id
        self.wake_read, self.wake_write = os.pipe()
        for fd in (self.wake_read, self.wake_write):
            os.set_blocking(fd, False)

    def serve(self) -> Optional[dict[str, Any]]:
        """Serve until stdin closes (None); in a forked child, return its request."""
        signal.signal(signal.SIGCHLD, _ignore)
        signal.set_wakeup_fd(self.wake_write, warn_on_full_buffer=False)
        pending = b""
        while True:
            readable, _, _ = select.select([self.requests, self.wake_read], [], [])
            if self.wake_read in readable:
                while True:
                    try:
                        if not os.read(self.wake_read, 4096):
                            break
                    except BlockingIOError:
                        break
            self.reap()
            if self.requests not in readable:
                continue
            chunk = os.read(self.requests, 1 << 16)
            if not chunk:
                self.shutdown()
                return None
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if not line.strip():
                    continue
                request = json.loads(line)
                if self.fork(request) == 0:
                    return dict(request)

    def fork(self, request: dict[str, Any]) -> int:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()  # else the child would write our buffered text again
        try:
            pid = os.fork()
        except OSError as exc:
            _send(self.replies, {"id": request.get("id"), "error": str(exc)})
            return -1
        if pid == 0:
            os.setpgid(0, 0)
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (self.requests, self.replies, self.wake_read, self.wake_write):
                os.close(fd)
            return 0
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # also here: the group exists before anyone hears the pid
        self.children[pid] = request.get("id")
        _send(self.replies, {"id": request.get("id"), "pid": pid})
        return pid

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            ident = self.children.pop(pid, None)
            code = os.waitstatus_to_exitcode(status)
            _send(self.replies, {"id": ident, "pid": pid, "exit": code})

    def shutdown(self) -> None:
        """flakewarden is gone or done: nothing we forked outlives us."""
        for pid in self.children:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        for pid in list(self.children):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        self.children.clear()


def become_run(request: dict[str, Any], options: Options, path0: Optional[str]) -> int:
    """In the forked child: take on the run's process state, then run pytest as ``-m`` would."""
    import importlib
    import runpy

    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    os.dup2(log, 1)
    os.dup2(log, 2)  # from here on, a traceback (an uncaught error: exit 1) lands in the log
    os.close(log)
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in request["env"].items()})
    os.chdir(request["cwd"])
    importlib.invalidate_caches()  # files made since the server started are found
    args = [str(a) for a in request["args"]]
    if options.script is None:
        if path0 is not None:
            sys.path[0] = os.getcwd()
        sys.argv = ["-m", *args]  # runpy puts the module's file first, as -m does
    else:
        if path0 is not None:
            sys.path[0] = os.path.dirname(os.path.realpath(options.script))
        sys.argv = [options.script, *args]
    if hasattr(sys, "orig_argv") and options.prefix:
        sys.orig_argv = [*options.prefix, *args]
    if options.script is None:
        runpy.run_module("pytest", run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(options.script, run_name="__main__")
    return 0


def main(argv: list[str]) -> int:
    options = Options(argv)
    here = os.path.dirname(os.path.realpath(__file__))
    # The script's folder leads sys.path as for any script; a child puts its own there.
    path0 = None if getattr(sys.flags, "safe_path", False) or sys.path[0] != here else here
    requests, replies = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # what an import prints goes to our stderr, never into the replies
    greeting = preload(options.skip, options.conftests, options.rootdir)
    if greeting["ready"]:
        import gc

        # What the server made is out of the collector's sight in the children: a collection
        # there would write to every object and copy each page the server shares with them.
        gc.freeze()
    _send(replies, greeting)
    if not greeting["ready"]:
        return 0
    request = Server(requests, replies).serve()
    if request is None:
        return 0
    return become_run(request, options, path0)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
