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
_PLUGIN_CODE_DIR = "plugin-code"
# A part's installed bytecode, copied beside its source as ``<part>.<cache tag>.pyc``.
_BYTECODE_SUFFIX = ".pyc"
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

_CODE = _os.path.join(_os.path.dirname(__file__), "{_PLUGIN_CODE_DIR}")


def _renamed(code, name):
    consts = tuple(_renamed(c, name) if type(c) is type(code) else c for c in code.co_consts)
    return code.replace(co_filename=name, co_consts=consts)


def _cached(part, name):
    # The installed bytecode of the part, copied here when current for this interpreter
    # (``{_BYTECODE_SUFFIX}``): loaded in a millisecond where compiling takes ten.
    tag = _sys.implementation.cache_tag
    if tag is None or _sys.flags.optimize:
        return None
    try:
        with open(_os.path.join(_CODE, part + "." + tag + "{_BYTECODE_SUFFIX}"), "rb") as stream:
            data = stream.read()
        if data[:4] != _util.MAGIC_NUMBER:
            return None
        return _renamed(_marshal.loads(data[16:]), name)
    except Exception:
        return None


def _compiled(part):
    name = "<{PLUGIN_MODULE}/" + part + ".py>"
    with open(_os.path.join(_CODE, part + ".py.txt"), encoding="utf-8") as stream:
        code = stream.read()
    _linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    return _cached(part, name) or compile(code, name, "exec", dont_inherit=True)


class _Parts:
    def find_spec(self, fullname, path=None, target=None):
        package, _, part = fullname.rpartition(".")
        if package == __name__ and _os.path.isfile(_os.path.join(_CODE, part + ".py.txt")):
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

    Only this one module (its parts in a folder no import finds) is exposed, so the tested
    interpreter never sees our dependencies (coverage, requests, ...) shadowing its own. The
    stress fork server's script (``FORK_SERVER_FILE``, standard library only) sits beside it.
    """
    directory = Path(tempfile.mkdtemp(prefix=PLUGIN_DIR_PREFIX))
    try:
        code = directory / _PLUGIN_CODE_DIR
        code.mkdir()
        for part in _PLUGIN_PACKAGE.glob("*.py"):
            shutil.copyfile(part, code / f"{part.name}.txt")
            _copy_bytecode(part, code)
        shutil.copyfile(_FORK_SERVER_SOURCE, directory / FORK_SERVER_FILE)
        (directory / f"{PLUGIN_MODULE}.py").write_text(_PLUGIN_STUB, encoding="utf-8")
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _copy_bytecode(source: Path, code: Path) -> None:
    """The part's installed bytecode (``__pycache__``), when it was compiled from the source
    as it is now, as import checks it: the tested interpreter, when it is this Python, loads
    it instead of compiling the part in every process it starts."""
    import importlib.util

    tag = sys.implementation.cache_tag
    if tag is None:
        return
    try:
        data = Path(importlib.util.cache_from_source(str(source))).read_bytes()
        stat = source.stat()
    except (OSError, ValueError, NotImplementedError):
        return
    header = [int.from_bytes(data[i : i + 4], "little") for i in (4, 8, 12)]
    current = [0, int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size & 0xFFFFFFFF]
    if data[:4] != importlib.util.MAGIC_NUMBER or header != current:
        return  # stale, hash-based or another Python's: the child compiles the source
    (code / f"{source.stem}.{tag}{_BYTECODE_SUFFIX}").write_bytes(data)


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
