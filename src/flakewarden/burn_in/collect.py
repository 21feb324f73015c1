"""Collecting the suite once, with the plugin recording each item's fixtures and location.

Burn-in maps a change to tests by what pytest itself collected (node ids, files, lines,
fixtures), never by guessing from file names, so it runs the user's own command with
``--collect-only`` added through ``PYTEST_ADDOPTS``: any way of starting pytest works,
and pytest-xdist stands aside when only collecting.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from flakewarden.changes import CollectedItem
from flakewarden.errors import UsageError
from flakewarden.model import first_line
from flakewarden.outside_json import read_tail
from flakewarden.runner.process import plugin_dir, plugin_env, resolve_executable, run_child
from flakewarden.runner.process_results import read_results
from flakewarden.stress.knobs import KNOB_VARIABLES

COLLECT_ONLY = "--collect-only -q"
BAD_USAGE = 4  # pytest's exit code for a command line it rejects


@dataclass(frozen=True)
class Collection:
    """What one ``--collect-only`` session collected, and how long it took."""

    items: tuple[CollectedItem, ...]
    rootdir: Path
    seconds: float
    errors: tuple[tuple[str, str], ...]  # (where, text) of each collection error
    log: Path

    def item(self, node_id: str) -> Optional[CollectedItem]:
        return next((i for i in self.items if i.node_id == node_id), None)


def _tail(log: Path, limit: int = 4000) -> str:
    return read_tail(log, 4 * limit)[-limit:].strip()


def collect(command: list[str], cwd: Path, directory: Path) -> Collection:
    """Collect with ``command`` from ``cwd``; its records and output go in ``directory``.

    ``UsageError`` when the command does not start pytest with the plugin, or pytest
    rejects it: no selection can be made then.
    """
    resolve_executable(command, cwd)
    directory.mkdir(parents=True, exist_ok=True)
    results_file, log = directory / "results.jsonl", directory / "output.log"
    results_file.unlink(missing_ok=True)
    started = time.monotonic()
    with plugin_dir() as plugin:
        env = plugin_env(plugin, results_file, extra={"FLAKEWARDEN_RECORD_FIXTURES": "1"})
        env["PYTEST_ADDOPTS"] = f"{env['PYTEST_ADDOPTS']} {COLLECT_ONLY}"
        for variable in KNOB_VARIABLES:  # collecting runs no test: no knob applies
            env.pop(variable, None)
        child = run_child(command, cwd=cwd, env=env, log=log)
    seconds = time.monotonic() - started
    results = read_results(results_file)
    if results.config is None:
        tail = _tail(log)
        rejected = "pytest rejected the command" if child.exit_code == BAD_USAGE else ""
        raise UsageError(
            (rejected or f"the test command never started pytest (exit code {child.exit_code})")
            + f": {first_line(tail) or 'no output'} (collecting the suite; its output is in {log})"
        )
    rootdir = Path(str(results.config.get("rootdir") or cwd))
    ids = results.collected or []
    fixtures = results.collected_fixtures or {}
    locations = results.collected_locations or {}
    items = []
    for node_id in ids:
        file, line = locations.get(node_id, (node_id.split("::", 1)[0], None))
        names = fixtures.get(node_id)
        items.append(CollectedItem(node_id, file, line, None if names is None else tuple(names)))
    return Collection(tuple(items), rootdir, seconds, tuple(results.collect_errors), log)


def file_order(
    collection: Collection, test_id: str, directory: Path, number: int
) -> Optional[Path]:
    """A recorded run order for the engine's order phase: the test's file's other tests, in
    collection order, then the test. None when the file holds no other test.

    A test that passes alone but fails after another test of its file depends on that
    test's leftovers; replaying the file's tests before it lets the engine name the one.
    """
    from flakewarden import __version__
    from flakewarden.model.run import RunReport
    from flakewarden.reports.report_json import report_json, write_text_atomic

    item = collection.item(test_id)
    if item is None:
        return None
    others = [i.node_id for i in collection.items if i.path == item.path and i.node_id != test_id]
    if not others:
        return None
    report = RunReport(
        command=[],
        rootdir=str(collection.rootdir),
        tests=[],
        attempts=[],
        order=[*others, test_id],
        exit_code=0,
        started_at="",
        finished_at="",
        duration=0.0,
        version=__version__,
    )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{number:03d}.json"
    write_text_atomic(path, report_json(report.to_json()))
    return path.resolve()
