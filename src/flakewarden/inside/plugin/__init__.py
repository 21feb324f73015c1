"""pytest plugin loaded into the tested interpreter: standard library only.

The orchestrator copies this package into a private directory, puts that directory
on ``PYTHONPATH`` and loads it with ``-p flakewarden_pytest_plugin``, so the
tested environment needs nothing installed. Its parts: ``recorder`` (the records),
``selection`` (which tests run), ``evidence`` (a failure's exceptions, in-test
retries), ``stats`` (pytest's own counts), ``knobs`` (stress's ``yield`` and ``asyncio``
knobs, ``yields`` and ``event_loop``, and the applicability facts, ``concurrency``); this
module holds the hooks. It is driven by environment variables and records nothing when
``FLAKEWARDEN_RESULTS`` is unset; the knobs apply without it, in the pytest process that
claimed the run (``_active``), so that a stress seed replays by hand.

- ``FLAKEWARDEN_RESULTS``: JSON-lines file to append records to.
- ``FLAKEWARDEN_SELECT``: JSON file holding a list of node ids; every other
  collected test is deselected. Node ids are matched exactly, so ids holding
  ``::``, brackets, spaces or quotes select as reliably as plain ones.
- ``FLAKEWARDEN_SWITCH_INTERVAL``: a float for ``sys.setswitchinterval``.
- ``FLAKEWARDEN_YIELD``: ``<seed>:<probability>`` (``yield`` knob, ``yields``): from each
  test's setup to its teardown's end, every opcode of the project's code (under the rootdir;
  not site-packages, the standard library, pytest, pluggy or this plugin) is preceded, with
  that probability, by a pause of the running thread (a sleep of 0.1 to 1 ms while another
  thread is alive), drawn from a ``random.Random`` of each thread's own seeded
  ``"<seed>:<n>"`` (``n``: the thread's number in start order). ``sys.monitoring`` on 3.12+,
  trace functions before. Off between tests.
- ``FLAKEWARDEN_ASYNCIO``: ``<seed>`` or ``<seed>:<jitter_ms>`` (``asyncio`` knob,
  ``event_loop``; jitter 1 ms by default): every asyncio ``BaseEventLoop`` created runs the
  callbacks ready in an iteration in a seeded order (what one callback scheduled keeps its
  order) and delays each ``call_at`` deadline by a seeded ``[0, jitter)``. uvloop is left alone.
- ``FLAKEWARDEN_RANDOM_SEED``: a whole number (``seeds``): the process's ``random``,
  numpy's global state, the generators of Faker, factory_boy and model_bakery, and every
  generator made without a seed draw from it, and each ``test`` record holds it (``seed``).
  Nothing where pytest-randomly reseeds.
- ``FLAKEWARDEN_LINES``: ``1`` adds ``lines`` to each ``test`` record (``lines``): how often
  each line of the project's code ran during the test's window, by file (relative to the
  rootdir) and line, for localisation.
- ``FLAKEWARDEN_CONCURRENCY``: ``1`` adds ``concurrency`` to each ``test`` record (below);
  nothing is patched without it.
- ``FLAKEWARDEN_REPEAT``: repeat each selected test this many times inside the
  process, recording every iteration.
- ``FLAKEWARDEN_ORDER``: JSON file holding a list of node ids; only those run,
  in that order (stress replays a recorded order to find a polluter).
- ``FLAKEWARDEN_SHARD``: ``K/N``, run only shard K of N of the collected tests
  (``shard_of``); ``FLAKEWARDEN_SHARD_DURATIONS``: JSON object of seconds by node id
  that balances the shards.
- ``FLAKEWARDEN_BLAME``: a JSON plan; each test runs in a coverage context of its own,
  and what it spawned or read is noted (``blame``).
- ``FLAKEWARDEN_RECORD_FIXTURES``: ``1`` adds ``fixtures`` to the ``collected``
  record, each node id's ``item.fixturenames`` (burn-in maps a changed fixture to the
  tests that use it), and ``locations``, each node id's ``item.location`` as
  ``[file, line]`` (file relative to the rootdir, line counted from 0 or null: burn-in
  maps a test to its definition and annotates that line). Not under xdist: its
  controller holds ids, not items.
- ``FLAKEWARDEN_MODULES_UNDER``: a folder (the pull request's checkout, when the base
  check runs the tests on a worktree of the merge base): a ``modules`` record lists the
  files of the modules loaded from under it, once collection is done and
  again when the session ends. Under xdist only the controller's modules are seen.

Records (one JSON object per line, ``kind`` says which):
``config`` (rootdir, invocation args, positional args; ``loaded`` and ``time``: when
pytest imported this module and when it configured), ``collected`` (the node
ids the session is to run, in order, and ``files``: the test modules collected, whether
or not any of their tests was selected, since importing them is part of every run),
``start`` (a test is about to run),
``test`` (one per test and iteration, with each phase and its subtests; with
``FLAKEWARDEN_CONCURRENCY=1``, ``"concurrency": {"threads": T, "event_loop": L}``: T the
Python threads that ran beside the test's thread during its phases, those already
running before the first test excepted, L the iterations asyncio's event loops ran),
``collect_error``, ``modules`` (the files loaded from under
``FLAKEWARDEN_MODULES_UNDER``), ``pytest_stats`` (what pytest's own terminal summary
counted, for the consistency check) and ``session`` (exit status).

Every record reaches the operating system as it is written (a ``write`` per
record, no ``fsync``: process death does not lose what the kernel holds): a
``start`` record before the test's setup runs, a ``test`` record as soon as the
test finishes. When the process dies, whether by a segfault, SIGKILL or a
suite that swallowed SIGTERM, the test that was running is the one started and
not finished, and every test that finished keeps its record.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, Optional

from . import blame, evidence, modules
from .evidence import record_retry
from .recorder import RAISED_ATTRIBUTE, RETRIES_ATTRIBUTE, Recorder, clip
from .selection import select, shard_of
from .stats import terminal_counts
from .variables import KNOBS

try:  # pytest is running us; a bare interpreter (the 3.9 load check) has none
    import pytest

    _hookwrapper: Callable[[Callable[..., Any]], Callable[..., Any]] = pytest.hookimpl(
        hookwrapper=True
    )
except ImportError:  # pragma: no cover

    def _hookwrapper(function: Any) -> Any:
        return function


__all__ = ["Recorder", "record_retry", "shard_of"]

if os.environ.get("FLAKEWARDEN_RANDOM_SEED", "").strip():  # before any conftest is loaded
    from . import seeds as _seeds

    _seeds.early()

_plugin: Optional[Recorder] = None
_repeat = 1
_active = False  # this process is the run flakewarden started (or one of its workers)
_collected = False  # the ``collected`` record was written
_files: dict[str, None] = {}  # the test modules collected (their node ids), in order
OWNER_VARIABLE = "FLAKEWARDEN_OWNER_PID"
_LOADED = time.time()  # pytest imported us: its own start-up is over by then


def _is_worker(config: Any) -> bool:
    return hasattr(config, "workerinput")


class _XdistController:
    """On the xdist controller: the workers collect, so their collection is the session's."""

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        _record_collected(list(ids))


def _record_collected(ids: list[str], items: Optional[list[Any]] = None) -> None:
    global _collected
    if _plugin is not None and not _collected:
        _collected = True
        record: dict[str, Any] = {"kind": "collected", "ids": ids, "time": time.time()}
        if _files:
            record["files"] = list(_files)
        if items is not None and os.environ.get("FLAKEWARDEN_RECORD_FIXTURES") == "1":
            record["fixtures"] = {
                item.nodeid: [str(n) for n in getattr(item, "fixturenames", ())] for item in items
            }
            record["locations"] = {item.nodeid: _location(item) for item in items}
        _plugin.write(record)


def _location(item: Any) -> Optional[list[Any]]:
    """``[file, line]`` of ``item.location``; None when pytest cannot tell (a broken item)."""
    try:
        file, line = item.location[0], item.location[1]
    except Exception:
        return None
    return [str(file), line if isinstance(line, int) else None]


def _claim(config: Any) -> bool:
    """True in the pytest process flakewarden started, and in its own xdist workers.

    The environment reaches every descendant, including a pytest that a test
    runs in a subprocess; that nested session must neither record into our
    file nor apply our selection. The first pytest to load the plugin claims the
    run with its pid; its xdist workers are its children; any other pytest
    that finds a claim is nested, and the plugin stays inert there.
    """
    owner = os.environ.get(OWNER_VARIABLE)
    if _is_worker(config):
        return owner == str(os.getppid())
    if owner:
        return False
    os.environ[OWNER_VARIABLE] = str(os.getpid())
    return True


def pytest_configure(config: Any) -> None:
    global _plugin, _repeat, _active
    _active = _claim(config)
    evidence.listen(_active)
    if not _active:
        return
    if blame.start(active=True):
        config.pluginmanager.register(_Blame(), "flakewarden-blame")
    _repeat = int(os.environ.get("FLAKEWARDEN_REPEAT", "1") or "1")
    interval = os.environ.get("FLAKEWARDEN_SWITCH_INTERVAL")
    if interval:
        sys.setswitchinterval(float(interval))
    if any(os.environ.get(name) for name in KNOBS):
        from . import knobs  # compiled only when asked for: other runs pay nothing

        knobs.configure(config, os.path.dirname(os.path.abspath(__file__)))
    seeds = sys.modules.get(f"{__name__}.seeds")  # imported (and seeded) as we were
    if seeds is not None:
        seeds.configure(config)
    path = os.environ.get("FLAKEWARDEN_RESULTS")
    if not path or _is_worker(config):
        return
    _plugin = Recorder(path)
    if hasattr(config.hook, "pytest_xdist_node_collection_finished"):
        config.pluginmanager.register(_XdistController(), "flakewarden-xdist-controller")
    option = config.option
    _plugin.write(
        {
            "kind": "config",
            "rootdir": str(config.rootpath),
            "invocation_dir": str(config.invocation_params.dir),
            "args": [str(a) for a in config.invocation_params.args],
            "file_or_dir": [str(a) for a in (getattr(option, "file_or_dir", None) or [])],
            "python": sys.version.split()[0],
            "executable": sys.executable,
            "pytest": _pytest_version(),
            "xdist": bool(getattr(option, "numprocesses", None)),
            "randomly_seed": getattr(option, "randomly_seed", None),
            # How conftests are imported: what the reruns' fork server may load beforehand.
            "imports": [str(getattr(option, n, "")) for n in ("importmode", "assertmode")],
            "conftests": None if option.noconftest else str(config.known_args_namespace.confcutdir),
            "pid": os.getpid(),
            # When pytest imported us and configured its plugins: the start-up split.
            "loaded": _LOADED,
            "time": time.time(),
        }
    )


def _pytest_version() -> str:
    try:
        import pytest

        return str(pytest.__version__)
    except Exception:  # pragma: no cover - pytest is running us
        return ""


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    if _active:
        select(config, items)


@_hookwrapper
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    """Attach the failure's exceptions and the phase's in-test retries to its report."""
    outcome = yield
    if not _active or outcome.excinfo is not None:
        return
    report = outcome.get_result()
    retries = evidence.take_retries()
    if retries:
        setattr(report, RETRIES_ATTRIBUTE, retries)
    excinfo = call.excinfo
    if excinfo is not None and report.failed:
        setattr(report, RAISED_ATTRIBUTE, evidence.raised(excinfo.value))


class _Blame:
    """Each test's whole protocol (setup, call, teardown) in a coverage context of its own.

    Registered only where blame measures: this hook runs in the process that runs the
    test, never on an xdist controller (which only hears of its workers' tests).
    """

    @_hookwrapper
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
        blame.test_starts(item.nodeid, getattr(item, "module", None), getattr(item, "path", None))
        try:
            yield
        finally:
            blame.test_ends(item.nodeid)


def pytest_runtest_protocol(item: Any, nextitem: Any) -> Optional[bool]:
    repeat = _repeat
    if repeat <= 1:
        return None
    from _pytest.runner import runtestprotocol

    ihook = item.ihook
    for iteration in range(repeat):
        ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        last = iteration == repeat - 1
        # As with pytest-repeat: the item itself runs next, so pytest keeps the class,
        # module and session fixtures it needs again (a pool, a server started once);
        # ``pytest_runtest_teardown`` below still ends its function-scoped ones.
        runtestprotocol(item, log=True, nextitem=nextitem if last else item)
        ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


class _Parents:
    """Stands for a next item that shares every collector of ``item`` but not ``item``."""

    def __init__(self, item: Any) -> None:
        self.chain: list[Any] = list(item.listchain()[:-1])

    def listchain(self) -> list[Any]:
        return self.chain


def pytest_runtest_teardown(item: Any, nextitem: Any) -> None:
    """Between in-process repeats, end the test's own (function-scoped) fixtures.

    pytest tears down only what the next item does not share; when the next
    item is this one again, that is nothing, and its function-scoped fixtures
    would carry over into the next repeat. Everything wider stays set up.
    """
    if _active and nextitem is item:
        item.session._setupstate.teardown_exact(_Parents(item))


def pytest_collection_finish(session: Any) -> None:
    if _plugin is not None and not _is_worker(session.config):
        _record_collected([item.nodeid for item in session.items], session.items)
        _record_modules()


def _record_modules() -> None:
    found = modules.record()
    if found is not None and _plugin is not None:
        _plugin.write(found)


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    if _plugin is not None:
        _plugin.start(nodeid, location)


def pytest_runtest_logreport(report: Any) -> None:
    if _plugin is not None:
        _plugin.add_report(report)
        _plugin.locations.setdefault(report.nodeid, getattr(report, "location", None))
        if report.when == "???":
            # xdist's report of a test whose worker died: no logfinish will follow.
            _plugin.finish(report.nodeid, report.location)


def pytest_keyboard_interrupt(excinfo: Any) -> None:
    """``pytest.exit()`` and ``KeyboardInterrupt`` both end the session here."""
    if _plugin is not None:
        try:
            _plugin.interrupted = clip(str(excinfo.exconly()))
        except Exception:
            _plugin.interrupted = "interrupted"


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    if _plugin is not None:
        _plugin.finish(nodeid, location)


def pytest_collectreport(report: Any) -> None:
    if _plugin is None:
        return
    nodeid = str(report.nodeid)
    if nodeid.endswith(".py") and "::" not in nodeid:  # a module, not a directory or class
        _files.setdefault(nodeid, None)
    if report.failed:
        _plugin.write(
            {
                "kind": "collect_error",
                "id": report.nodeid,
                "longrepr": clip(report.longreprtext),
            }
        )


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    blame.finish()  # here, not at unconfigure: an xdist worker never gets that far
    if _plugin is None:
        return
    _plugin.finish_all()
    _record_modules()
    stats = terminal_counts(session.config)
    if stats is not None:
        _plugin.write(stats)
    _plugin.write(
        {
            "kind": "session",
            "exitstatus": int(exitstatus),
            "testscollected": int(getattr(session, "testscollected", 0) or 0),
            "testsfailed": int(getattr(session, "testsfailed", 0) or 0),
            "time": time.time(),
        }
    )


def pytest_unconfigure(config: Any) -> None:
    global _plugin, _collected
    evidence.listen(False)
    _files.clear()
    blame.finish()
    knobs = sys.modules.get(f"{__name__}.knobs")
    if knobs is not None:
        knobs.unconfigure()
    seeds = sys.modules.get(f"{__name__}.seeds")
    if seeds is not None:
        seeds.unconfigure()
    if _plugin is not None:
        _plugin.close()
        _plugin = None
    _collected = False
