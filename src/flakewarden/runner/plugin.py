"""pytest plugin loaded into the tested interpreter: standard library only.

The orchestrator copies this file into a private directory, puts that directory
on ``PYTHONPATH`` and loads it with ``-p flakewarden_pytest_plugin``, so the
tested environment needs nothing installed. It is driven by environment
variables and does nothing when ``FLAKEWARDEN_RESULTS`` is unset.

- ``FLAKEWARDEN_RESULTS``: JSON-lines file to append records to.
- ``FLAKEWARDEN_SELECT``: JSON file holding a list of node ids; every other
  collected test is deselected. Node ids are matched exactly, so ids holding
  ``::``, brackets, spaces or quotes select as reliably as plain ones.
- ``FLAKEWARDEN_SWITCH_INTERVAL``: a float for ``sys.setswitchinterval``.
- ``FLAKEWARDEN_REPEAT``: repeat each selected test this many times inside the
  process, recording every iteration.
- ``FLAKEWARDEN_ORDER``: JSON file holding a list of node ids; only those run,
  in that order (stress replays a recorded order to find a polluter).
- ``FLAKEWARDEN_SHARD``: ``K/N``, run only shard K of N of the collected tests
  (``shard_of``); ``FLAKEWARDEN_SHARD_DURATIONS``: JSON object of seconds by node id
  that balances the shards.

Records (one JSON object per line, ``kind`` says which):
``config`` (rootdir, invocation args, positional args; ``loaded`` and ``time``: when
pytest imported this module and when it configured), ``collected`` (the node
ids the session is to run, in order), ``start`` (a test is about to run),
``test`` (one per test and iteration, with each phase and its subtests),
``collect_error``, ``pytest_stats`` (what pytest's own terminal summary
counted, for the consistency check) and ``session`` (exit status).

Every record reaches the operating system as it is written (a ``write`` per
record, no ``fsync``: process death does not lose what the kernel holds): a
``start`` record before the test's setup runs, a ``test`` record as soon as the
test finishes. When the process dies, whether by a segfault, SIGKILL or a
suite that swallowed SIGTERM, the test that was running is the one started and
not finished, and every test that finished keeps its record.
"""

from __future__ import annotations

import json
import json.encoder
import os
import sys
import time
from typing import Any, Optional

MAX_TEXT = 20_000  # characters kept of one captured stream or traceback

_plugin: Optional[Recorder] = None
_repeat = 1
_active = False  # this process is the run flakewarden started (or one of its workers)
_collected = False  # the ``collected`` record was written
OWNER_VARIABLE = "FLAKEWARDEN_OWNER_PID"
# One encoder for every record: json.dumps with options builds a new one per call.
_encode = json.JSONEncoder(ensure_ascii=False).encode
_string = json.encoder.encode_basestring  # a JSON string literal, non-ASCII kept
_LOADED = time.time()  # pytest imported us: its own start-up is over by then


def _clip(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    half = MAX_TEXT // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut by flakewarden ...]\n{text[-half:]}"


def _is_worker(config: Any) -> bool:
    return hasattr(config, "workerinput")


class Recorder:
    """Collects each test's phase reports and appends one JSON line per test."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: Optional[int] = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        self.pending: dict[str, list[dict[str, Any]]] = {}
        self.captured: dict[str, tuple[str, str]] = {}
        self.worker: dict[str, str] = {}
        self.index = 0
        self.iteration: dict[str, int] = {}
        self.subtests: dict[str, list[dict[str, Any]]] = {}
        self.reports: dict[str, Any] = {}  # the call report, read again when the test ends
        self.interrupted = ""  # why the session stopped (pytest.exit, KeyboardInterrupt)
        self.locations: dict[str, Any] = {}

    def write(self, record: dict[str, Any]) -> None:
        self.emit(_encode(record))

    def emit(self, line: str) -> None:
        """One ``write`` to the OS per record, unbuffered: it outlives the process at once."""
        if self.fd is None:
            return
        data = (line + "\n").encode("utf-8", "backslashreplace")
        while data:
            data = data[os.write(self.fd, data) :]

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def start(self, nodeid: str, location: Any) -> None:
        """Record that a test starts, before its setup runs (built by hand: once per test)."""
        file, line = _where(location)
        self.emit(
            f'{{"kind": "start", "id": {_string(nodeid)}, "file": {_string(file)}, '
            f'"line": {"null" if line is None else line}, "time": {time.time()!r}}}'
        )

    def add_report(self, report: Any) -> None:
        if _is_subtest(report):
            self.subtests.setdefault(report.nodeid, []).append(_subtest(report))
            return
        phase: dict[str, Any] = {
            "when": report.when,
            "outcome": report.outcome,
            "duration": float(getattr(report, "duration", 0.0) or 0.0),
        }
        # pytest-rerunfailures' "rerun" is a failed run it retried in-process: keep its failure.
        if report.failed or report.outcome == "rerun":
            phase["longrepr"] = _clip(report.longreprtext)
        elif report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            phase["longrepr"] = _clip(str(report.longrepr[2]))
        if report.when == "call":
            # A plugin may still change this outcome (pytest's subtests make a passed
            # call "failed" when a subtest failed); ``finish`` reads it again.
            self.reports[report.nodeid] = report
        if hasattr(report, "wasxfail"):
            phase["wasxfail"] = True
        self.pending.setdefault(report.nodeid, []).append(phase)
        if report.failed or report.outcome == "rerun":
            self.captured[report.nodeid] = (
                _clip(getattr(report, "capstdout", "") or ""),
                _clip(getattr(report, "capstderr", "") or ""),
            )
        node = getattr(report, "node", None)
        gateway = getattr(node, "gateway", None)
        if gateway is not None:
            self.worker[report.nodeid] = str(getattr(gateway, "id", ""))

    def finish(self, nodeid: str, location: Any, unfinished: bool = False) -> None:
        phases = self.pending.pop(nodeid, [])
        subtests = self.subtests.pop(nodeid, [])
        self.locations.pop(nodeid, None)
        _settle(phases, self.reports.pop(nodeid, None))
        if not phases and not subtests:
            return
        file, line = "", None
        if location:
            file = str(location[0])
            if location[1] is not None:
                line = int(location[1]) + 1
        iteration = self.iteration.get(nodeid, 0)
        self.iteration[nodeid] = iteration + 1
        stdout, stderr = self.captured.pop(nodeid, ("", ""))
        self.write(
            {
                "kind": "test",
                "id": nodeid,
                "file": file,
                "line": line,
                "phases": phases,
                "index": self.index,
                "iteration": iteration,
                "worker": self.worker.pop(nodeid, ""),
                "stdout": stdout,
                "stderr": stderr,
                "time": time.time(),
                **({"subtests": subtests} if subtests else {}),
                **({"unfinished": self.interrupted or "the session ended"} if unfinished else {}),
            }
        )
        self.index += 1

    def finish_all(self) -> None:
        """Write the tests the session left unfinished (``pytest.exit``, an interrupt).

        Such a test never reaches ``pytest_runtest_logfinish``; without this it would
        vanish from the report although it ran.
        """
        for nodeid in list(self.pending) + [n for n in self.subtests if n not in self.pending]:
            self.finish(nodeid, self.locations.get(nodeid), unfinished=True)


def _is_subtest(report: Any) -> bool:
    """A subtest's report: pytest 9's ``SubtestReport`` or pytest-subtests' ``SubTestReport``."""
    context = getattr(report, "context", None)
    return context is not None and hasattr(context, "kwargs")


def _subtest(report: Any) -> dict[str, Any]:
    describe = getattr(report, "_sub_test_description", None)
    description = ""
    if callable(describe):
        try:
            description = str(describe())
        except Exception:  # a plugin's own formatting must never cost the record
            description = ""
    if not description:
        context = report.context
        kwargs = getattr(context, "kwargs", None) or {}
        parts = [f"[{context.msg}]"] if getattr(context, "msg", None) is not None else []
        if kwargs:
            parts.append("(" + ", ".join(f"{k}={v}" for k, v in kwargs.items()) + ")")
        description = " ".join(parts) or "(<subtest>)"
    record: dict[str, Any] = {
        "description": _clip(description),
        "outcome": report.outcome,
        "duration": float(getattr(report, "duration", 0.0) or 0.0),
    }
    if report.failed:
        record["longrepr"] = _clip(report.longreprtext)
        stdout = getattr(report, "capstdout", "") or ""
        stderr = getattr(report, "capstderr", "") or ""
        if stdout:
            record["stdout"] = _clip(stdout)
        if stderr:
            record["stderr"] = _clip(stderr)
    elif report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        record["longrepr"] = _clip(str(report.longrepr[2]))
    if hasattr(report, "wasxfail"):
        record["wasxfail"] = True
    return record


def _settle(phases: list[dict[str, Any]], report: Any) -> None:
    """Take the call's final outcome: a later hook may have changed it after we saw it."""
    if report is None:
        return
    for phase in reversed(phases):
        if phase["when"] != report.when:
            continue
        if report.outcome != phase["outcome"] and phase["outcome"] != "rerun":
            phase["outcome"] = report.outcome
            if report.failed:
                phase["longrepr"] = _clip(report.longreprtext)
        return


def _where(location: Any) -> tuple[str, Optional[int]]:
    """pytest's ``(file, 0-based line, name)`` as a file and a 1-based line."""
    if not location:
        return "", None
    line = location[1]
    return str(location[0]), None if line is None else int(line) + 1


class _XdistController:
    """On the xdist controller: the workers collect, so their collection is the session's."""

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        _record_collected(list(ids))


def _record_collected(ids: list[str]) -> None:
    global _collected
    if _plugin is not None and not _collected:
        _collected = True
        _plugin.write({"kind": "collected", "ids": ids, "time": time.time()})


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
    if not _active:
        return
    _repeat = int(os.environ.get("FLAKEWARDEN_REPEAT", "1") or "1")
    interval = os.environ.get("FLAKEWARDEN_SWITCH_INTERVAL")
    if interval:
        sys.setswitchinterval(float(interval))
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


def _stress_order(config: Any, items: list[Any]) -> None:
    """``FLAKEWARDEN_ORDER``: keep exactly these ids and run them in this order."""
    order_file = os.environ.get("FLAKEWARDEN_ORDER")
    if not order_file:
        return
    with open(order_file, encoding="utf-8") as stream:
        position = {nodeid: index for index, nodeid in enumerate(json.load(stream))}
    drop = [item for item in items if item.nodeid not in position]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = sorted(
        (item for item in items if item.nodeid in position), key=lambda i: position[i.nodeid]
    )


def shard_of(ids: list[str], count: int, durations: dict[str, float]) -> dict[str, int]:
    """The shard (0-based) of each id: the same whatever order the ids come in.

    With durations, longest first onto the least loaded shard (ties: the lower shard),
    a test without one counted at the median of those known; without any, by a stable
    hash of the id, so each shard gets about as many tests.
    """
    known = sorted(d for d in (durations.get(i) for i in ids) if d is not None)
    if not known:
        import hashlib

        return {
            i: int(hashlib.sha256(i.encode("utf-8", "surrogatepass")).hexdigest()[:15], 16) % count
            for i in ids
        }
    middle = known[len(known) // 2]
    loads = [0.0] * count
    shards = {}
    for negative, test in sorted((-durations.get(i, middle), i) for i in set(ids)):
        shard = min(range(count), key=lambda k: (loads[k], k))
        loads[shard] += -negative
        shards[test] = shard
    return shards


def _shard(config: Any, items: list[Any]) -> None:
    """``FLAKEWARDEN_SHARD``: keep only this shard's tests (attempt 1; reruns select)."""
    spec = os.environ.get("FLAKEWARDEN_SHARD")
    if not spec:
        return
    index, count = (int(part) for part in spec.split("/"))
    durations: dict[str, float] = {}
    path = os.environ.get("FLAKEWARDEN_SHARD_DURATIONS")
    if path:
        with open(path, encoding="utf-8") as stream:
            durations = json.load(stream)
    shards = shard_of([item.nodeid for item in items], count, durations)
    drop = [item for item in items if shards[item.nodeid] != index - 1]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = [item for item in items if shards[item.nodeid] == index - 1]


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    if not _active:
        return
    _stress_order(config, items)
    _shard(config, items)
    select_file = os.environ.get("FLAKEWARDEN_SELECT")
    if not select_file:
        return
    with open(select_file, encoding="utf-8") as stream:
        wanted = set(json.load(stream))
    keep = [item for item in items if item.nodeid in wanted]
    drop = [item for item in items if item.nodeid not in wanted]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


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
        _record_collected([item.nodeid for item in session.items])


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
            _plugin.interrupted = _clip(str(excinfo.exconly()))
        except Exception:
            _plugin.interrupted = "interrupted"


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    if _plugin is not None:
        _plugin.finish(nodeid, location)


def pytest_collectreport(report: Any) -> None:
    if _plugin is not None and report.failed:
        _plugin.write(
            {
                "kind": "collect_error",
                "id": report.nodeid,
                "longrepr": _clip(report.longreprtext),
            }
        )


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    if _plugin is None:
        return
    _plugin.finish_all()
    stats = _pytest_stats(session.config)
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


MAX_IDS = 1000  # node ids pytest counted as failed or error, kept for the consistency check


def _pytest_stats(config: Any) -> Optional[dict[str, Any]]:
    """What pytest's terminal summary line counts, read from the terminal reporter itself.

    Read from its ``stats`` rather than scraped from the output, which ``-q``/``-qq``
    reshape; ``-p no:terminal`` leaves no reporter and no record (nothing to compare).
    ``summary`` is the line itself; ``tests`` its test reports per category (what
    the plugin's records must add up to), ``collect`` its collection reports;
    ``subtests`` counts subtest reports per outcome, including the passed ones the
    line hides at default verbosity. ``failed_ids``: what pytest counted as failed
    or error, which must never be a pass in the records.
    """
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", None)
    if not isinstance(stats, dict):
        return None
    counts: dict[str, dict[str, int]] = {"summary": {}, "tests": {}, "collect": {}, "subtests": {}}

    def bump(group: str, key: str) -> None:
        counts[group][key] = counts[group].get(key, 0) + 1

    failed_ids: dict[str, None] = {}
    for category, reports in stats.items():
        if category == "warnings" or not isinstance(reports, list):
            continue
        for report in reports:
            shown = category != "" and getattr(report, "count_towards_summary", True)
            if shown:
                bump("summary", category)
            failed = category in ("failed", "error") or getattr(report, "failed", False)
            is_test = getattr(report, "when", "collect") != "collect"  # xdist's crash: "???"
            if failed and is_test and len(failed_ids) < MAX_IDS:
                failed_ids.setdefault(str(report.nodeid), None)
            if _is_subtest(report):
                bump("subtests", "xfailed" if hasattr(report, "wasxfail") else report.outcome)
            elif shown:
                bump("tests" if is_test else "collect", category)
    return {
        "kind": "pytest_stats",
        "source": "terminalreporter",
        **counts,
        "failed_ids": list(failed_ids),
    }


def pytest_unconfigure(config: Any) -> None:
    global _plugin, _collected
    if _plugin is not None:
        _plugin.close()
        _plugin = None
    _collected = False
