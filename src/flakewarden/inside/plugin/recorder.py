"""The records: one JSON line per test and phase report, written as each arrives."""

from __future__ import annotations

import json
import json.encoder
import os
import time
from typing import Any, Optional

MAX_TEXT = 20_000  # characters kept of one captured stream or traceback
# One encoder for every record: json.dumps with options builds a new one per call.
_encode = json.JSONEncoder(ensure_ascii=False).encode
_string = json.encoder.encode_basestring  # a JSON string literal, non-ASCII kept
# What ``evidence`` attaches to a report, so that it also crosses from an xdist worker.
RAISED_ATTRIBUTE = "flakewarden_raised"
RETRIES_ATTRIBUTE = "flakewarden_retries"
# The applicability facts of a test's phases (``knobs``), on its teardown's report.
CONCURRENCY_ATTRIBUTE = "flakewarden_concurrency"
SEED_ATTRIBUTE = "flakewarden_seed"  # the run's random seed (``seeds``)
LINES_ATTRIBUTE = "flakewarden_lines"  # the run's line counts (``lines``)
STATE_ATTRIBUTE = "flakewarden_state"  # what the run changed in shared state (``state``)


def clip(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    half = MAX_TEXT // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut by flakewarden ...]\n{text[-half:]}"


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
        self.concurrency: dict[str, Any] = {}
        self.seeds: dict[str, int] = {}
        self.lines: dict[str, Any] = {}
        self.state: dict[str, Any] = {}

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
        file, line = where(location)
        self.emit(
            f'{{"kind": "start", "id": {_string(nodeid)}, "file": {_string(file)}, '
            f'"line": {"null" if line is None else line}, "time": {time.time()!r}}}'
        )

    def add_report(self, report: Any) -> None:
        if is_subtest(report):
            self.subtests.setdefault(report.nodeid, []).append(_subtest(report))
            return
        phase: dict[str, Any] = {
            "when": report.when,
            "outcome": report.outcome,
            "duration": float(getattr(report, "duration", 0.0) or 0.0),
        }
        # pytest-rerunfailures' "rerun" is a failed run it retried in-process: keep its failure.
        if report.failed or report.outcome == "rerun":
            phase["longrepr"] = clip(report.longreprtext)
        elif report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            phase["longrepr"] = clip(str(report.longrepr[2]))
        if report.when == "call":
            # A plugin may still change this outcome (pytest's subtests make a passed
            # call "failed" when a subtest failed); ``finish`` reads it again.
            self.reports[report.nodeid] = report
        if hasattr(report, "wasxfail"):
            phase["wasxfail"] = True
        lines = getattr(report, LINES_ATTRIBUTE, None)
        if isinstance(lines, dict):
            self.lines[report.nodeid] = lines
        state = getattr(report, STATE_ATTRIBUTE, None)
        if isinstance(state, list):
            self.state[report.nodeid] = state
        seed = getattr(report, SEED_ATTRIBUTE, None)
        if isinstance(seed, int):
            self.seeds[report.nodeid] = seed
        facts = getattr(report, CONCURRENCY_ATTRIBUTE, None)
        if isinstance(facts, dict):
            self.concurrency[report.nodeid] = facts
        _evidence(phase, report)
        self.pending.setdefault(report.nodeid, []).append(phase)
        if report.failed or report.outcome == "rerun":
            self.captured[report.nodeid] = (
                clip(getattr(report, "capstdout", "") or ""),
                clip(getattr(report, "capstderr", "") or ""),
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
        concurrency = self.concurrency.pop(nodeid, None)
        seed = self.seeds.pop(nodeid, None)
        lines = self.lines.pop(nodeid, None)
        state = self.state.pop(nodeid, None)
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
                **({"concurrency": concurrency} if concurrency is not None else {}),
                **({"seed": seed} if seed is not None else {}),
                **({"lines": lines} if lines is not None else {}),
                **({"state": state} if state is not None else {}),
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


def is_subtest(report: Any) -> bool:
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
        "description": clip(description),
        "outcome": report.outcome,
        "duration": float(getattr(report, "duration", 0.0) or 0.0),
    }
    if report.failed:
        record["longrepr"] = clip(report.longreprtext)
        stdout = getattr(report, "capstdout", "") or ""
        stderr = getattr(report, "capstderr", "") or ""
        if stdout:
            record["stdout"] = clip(stdout)
        if stderr:
            record["stderr"] = clip(stderr)
    elif report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        record["longrepr"] = clip(str(report.longrepr[2]))
    if hasattr(report, "wasxfail"):
        record["wasxfail"] = True
    _evidence(record, report)
    return record


def _evidence(record: dict[str, Any], report: Any) -> None:
    """What ``evidence`` attached to the report: the failure's exceptions, in-test retries."""
    raised = getattr(report, RAISED_ATTRIBUTE, None)
    if raised and (report.failed or report.outcome == "rerun"):
        record["raised"] = raised
    retries = getattr(report, RETRIES_ATTRIBUTE, None)
    if retries:
        record["retries"] = retries


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
                phase["longrepr"] = clip(report.longreprtext)
        return


def where(location: Any) -> tuple[str, Optional[int]]:
    """pytest's ``(file, 0-based line, name)`` as a file and a 1-based line."""
    if not location:
        return "", None
    line = location[1]
    return str(location[0]), None if line is None else int(line) + 1
