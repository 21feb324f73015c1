"""Running the test command: one fresh process group per attempt, with our plugin injected.

All child processes go through ``run_child`` so interruption is handled in one
place: Ctrl-C or SIGTERM stops the child's whole process group, and the caller
still gets what the child wrote so far.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple, Optional, Union

from flakewarden.errors import UsageError
from flakewarden.model import timings
from flakewarden.runner import leftovers

PLUGIN_MODULE = "flakewarden_pytest_plugin"
# Every folder plugin_dir makes is named so; coverage_merge drops any file measured in one.
PLUGIN_DIR_PREFIX = "flakewarden-plugin-"
_INSIDE = Path(__file__).parent.parent / "inside"
_PLUGIN_PACKAGE = _INSIDE / "plugin"
# The plugin's parts, packed in one file (``pack_plugin``).
PLUGIN_PACK = "flakewarden-plugin.pack"
# The stress fork server's child (``inside/fork_child.py``), run by path in the tested interpreter.
FORK_SERVER_FILE = "flakewarden_fork_server.py"
_FORK_SERVER_SOURCE = _INSIDE / "fork_child.py"
# A stub that runs the plugin package's code under file names starting with "<": coverage.py
# never traces such code, whatever the project's config, so the tests' own coverage report
# (pytest-cov prints one per attempt) never shows the plugin. The stub makes itself the
# package and finds its parts (``<flakewarden_pytest_plugin/recorder.py>``, ...) with a finder
# of its own; linecache holds their source, so a traceback through them reads as usual. The
# stub's own few lines run at import, before pytest-cov starts; only `coverage run` sees
# them, and the merge drops them.
_PLUGIN_STUB = f"""\
import importlib.machinery as _machinery
import importlib.util as _util
import linecache as _linecache
import marshal as _marshal
import os as _os
import sys as _sys

# Every part's source and, when current for the Python that packed it, its bytecode: one
# file (``{PLUGIN_PACK}``), since each file made costs a run's start more than reading it.
with open(_os.path.join(_os.path.dirname(__file__), "{PLUGIN_PACK}"), "rb") as _stream:
    _PACK = _marshal.loads(_stream.read())
_PARTS = _PACK["parts"]


def _renamed(code, name):
    consts = tuple(_renamed(c, name) if type(c) is type(code) else c for c in code.co_consts)
    return code.replace(co_filename=name, co_consts=consts)


def _cached(part, name):
    # The part's installed bytecode, when packed for this interpreter: loaded in a
    # millisecond where compiling the source takes ten.
    data = _PARTS[part][1]
    if _PACK["tag"] != _sys.implementation.cache_tag or _sys.flags.optimize or not data:
        return None
    if data[:4] != _util.MAGIC_NUMBER:
        return None
    try:
        return _renamed(_marshal.loads(data[16:]), name)
    except Exception:
        return None


def _compiled(part):
    name = "<{PLUGIN_MODULE}/" + part + ".py>"
    code = _PARTS[part][0]
    _linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    return _cached(part, name) or compile(code, name, "exec", dont_inherit=True)


class _Parts:
    def find_spec(self, fullname, path=None, target=None):
        package, _, part = fullname.rpartition(".")
        if package == __name__ and part in _PARTS:
            return _machinery.ModuleSpec(fullname, self, origin="<" + fullname + ">")
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(_compiled(module.__name__.rpartition(".")[2]), module.__dict__)


__path__ = []
__package__ = __name__
__spec__.submodule_search_locations = []
_sys.meta_path.append(_Parts())
exec(_compiled("__init__"))
"""
TERMINATE_GRACE_SECONDS = 5.0


class ChildResult(NamedTuple):
    exit_code: int
    duration: float
    interrupted: bool
    timed_out: bool = False  # stopped by ``run_child``'s timeout


class Interrupted(Exception):
    """The user (or the CI runner) asked us to stop; the child group has been stopped."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def plugin_dir() -> Iterator[Path]:
    """A private directory holding only our plugin, for ``PYTHONPATH``.

    Only this one module (its parts in a pack no import reads) is exposed, so the tested
    interpreter never sees our dependencies (coverage, requests, ...) shadowing its own. The
    stress fork server's script (``FORK_SERVER_FILE``, standard library only) sits beside it.
    """
    directory = Path(tempfile.mkdtemp(prefix=PLUGIN_DIR_PREFIX))
    try:
        (directory / PLUGIN_PACK).write_bytes(pack_plugin())
        shutil.copyfile(_FORK_SERVER_SOURCE, directory / FORK_SERVER_FILE)
        (directory / f"{PLUGIN_MODULE}.py").write_text(_PLUGIN_STUB, encoding="utf-8")
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def pack_plugin() -> bytes:
    """The plugin's parts, packed for the stub: ``{"tag": this Python's cache tag, "parts":
    {name: (source, bytecode or b"")}}`` in ``marshal``'s format 4, which every Python 3 the
    tests may run reads. Each part's installed bytecode (``__pycache__``) is packed when it
    was compiled from the source as it is, as import checks it."""
    import marshal

    parts = {
        part.stem: (part.read_text(encoding="utf-8"), bytecode_of(part))
        for part in _PLUGIN_PACKAGE.glob("*.py")
    }
    return marshal.dumps({"tag": sys.implementation.cache_tag or "", "parts": parts}, 4)


def bytecode_of(source: Path) -> bytes:
    """The installed bytecode of ``source``, or ``b""`` when it is stale, hash-based or absent."""
    import importlib.util

    try:
        data = Path(importlib.util.cache_from_source(str(source))).read_bytes()
        stat = source.stat()
    except (OSError, ValueError, NotImplementedError):
        return b""
    header = [int.from_bytes(data[i : i + 4], "little") for i in (4, 8, 12)]
    current = [0, int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size & 0xFFFFFFFF]
    if data[:4] != importlib.util.MAGIC_NUMBER or header != current:
        return b""
    return data


def plugin_env(
    directory: Path,
    results: Path,
    *,
    select: Optional[Path] = None,
    extra: Optional[Mapping[str, str]] = None,
    base: Optional[Mapping[str, str]] = None,
) -> dict[str, str]:
    """The environment of a child that loads the plugin and records into ``results``."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(directory), env.get("PYTHONPATH", "")) if p)
    addopts = env.get("PYTEST_ADDOPTS", "")
    env["PYTEST_ADDOPTS"] = f"-p {PLUGIN_MODULE} {addopts}".strip()
    env["FLAKEWARDEN_RESULTS"] = str(results)
    # A new run: whatever pytest an outer run started is not this one's owner.
    env.pop("FLAKEWARDEN_OWNER_PID", None)
    env.pop("FLAKEWARDEN_GITHUB_TOKEN", None)  # ours alone, never the tests'
    env.pop("FLAKEWARDEN_SELECT", None)
    env.pop(timings.ENV, None)  # a flakewarden the tests run must not overwrite ours
    if select is not None:
        env["FLAKEWARDEN_SELECT"] = str(select)
    env.setdefault("PYTHONIOENCODING", "utf-8")
    if extra:
        env.update(extra)
    return env


def resolve_executable(command: Sequence[str], cwd: Path) -> None:
    """Fail early, with exit code 4, when the command is empty or not found."""
    if not command:
        raise UsageError(
            "no test command: put it after --, e.g. flakewarden run -- python -m pytest"
        )
    program = command[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program) if Path(program).is_absolute() else cwd / program
        if not path.exists():
            raise UsageError(f"command not found: {program}")
        return
    if shutil.which(program) is None:
        raise UsageError(f"command not found: {program} (is it installed and on PATH?)")


def _copy_stream(source: IO[bytes], sinks: Sequence[IO[bytes]]) -> None:
    for chunk in iter(lambda: source.read1(65536), b""):  # type: ignore[attr-defined]
        for sink in sinks:
            sink.write(chunk)
            sink.flush()


def spawn(
    command: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdout: Union[int, IO[bytes]],
    session: bool = True,
) -> subprocess.Popen[bytes]:
    """Start ``command`` as the leader of a new process group, output and errors together.

    The group is also a new session unless ``session`` is false: then it stays in
    ours, where Linux's autogroup scheduler has it share the CPU with whatever
    else runs in our session (stress's burners) instead of getting a share of its own.
    """
    try:
        with leftovers.starting():
            child = subprocess.Popen(
                list(command),
                cwd=cwd,
                env=dict(env),
                stdout=stdout,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=session,
                **({} if session else new_group()),
            )
            leftovers.own(child.pid)
        return child
    except FileNotFoundError as exc:
        raise UsageError(f"command not found: {command[0]}") from exc
    except PermissionError as exc:
        raise UsageError(f"command is not executable: {command[0]}") from exc


def new_group() -> dict[str, Any]:
    """``Popen`` options that make the child lead a new process group in our session."""
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"preexec_fn": os.setpgrp}  # pragma: no cover - Python < 3.11


def run_child(
    command: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log: Path,
    echo: Optional[IO[bytes]] = None,
    timeout: Optional[float] = None,
    while_running: Optional[Callable[[], object]] = None,
) -> ChildResult:
    """Run ``command`` in a new process group, teeing its output to ``log`` (and ``echo``).

    ``while_running`` is called once the child has started, before waiting for it: work
    done there (importing what comes after the tests) overlaps the child's own start-up.

    SIGINT and SIGTERM received meanwhile stop the whole group (TERM, then KILL
    after a grace period) and raise ``Interrupted`` once the child is gone. A
    child still running after ``timeout`` seconds has its group stopped the
    same way, and the result says ``timed_out``.
    """
    started = time.monotonic()
    received: list[int] = []
    leftovers.adopt_orphans()
    with open(log, "wb") as log_stream, timings.phase("child", log=str(log)) as timed:
        child = spawn(command, cwd=cwd, env=env, stdout=subprocess.PIPE)
        timed["spawned"] = time.time()

        killer = threading.Timer(TERMINATE_GRACE_SECONDS, stop_group, (child.pid, signal.SIGKILL))
        killer.daemon = True

        def stop() -> None:
            stop_group(child.pid, signal.SIGTERM)
            if killer.ident is None:  # not started yet
                # A test that ignores SIGTERM is killed after the grace period.
                killer.start()

        def on_signal(signum: int, frame: object) -> None:
            received.append(signum)
            stop()

        previous = _install_handlers(on_signal)
        assert child.stdout is not None
        sinks: list[IO[bytes]] = [log_stream] + ([echo] if echo is not None else [])
        pump = threading.Thread(target=_copy_stream, args=(child.stdout, sinks), daemon=True)
        pump.start()
        timed_out = False
        try:
            with leftovers.ZombieReaper(exclude={child.pid}):
                if while_running is not None:
                    _overlap(while_running)
                # Signals interrupt the wait, run the handler, and the wait resumes.
                try:
                    exit_code = child.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    stop()
                    exit_code = child.wait()
        finally:
            timed["exited"] = time.time()
            killer.cancel()
            _restore_handlers(previous)
            # Whatever the child left behind goes too: its group, and (Linux) every
            # process that detached from it. The pipe keeps what they wrote.
            with timings.phase("end leftovers"):
                stop_group(child.pid, signal.SIGKILL)
                ended = leftovers.end_orphans(exclude={child.pid})
                leftovers.release_orphans()
                pump.join(timeout=10)
            if ended:
                log_stream.write(
                    f"\n[flakewarden] ended {ended} process(es) the command left running\n".encode()
                )
    duration = time.monotonic() - started
    if received:
        raise Interrupted(received[0])
    return ChildResult(exit_code, duration, False, timed_out)


def _overlap(work: Callable[[], object]) -> None:
    """Run ``work`` beside the child; a failure here resurfaces where its result is used."""
    with timings.phase("overlapped with the child"), contextlib.suppress(Exception):
        work()


def stop_group(pid: int, signum: int) -> None:
    """Signal a whole process group; one that is already gone is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


_Handler = object


def _install_handlers(handler: object) -> dict[int, _Handler]:
    previous: dict[int, _Handler] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous
    for signum in (signal.SIGINT, signal.SIGTERM):
        previous[signum] = signal.signal(signum, handler)  # type: ignore[arg-type]
    return previous


def _restore_handlers(previous: dict[int, _Handler]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)  # type: ignore[arg-type]


def stdout_binary() -> IO[bytes]:
    return sys.stdout.buffer
