"""The ``yield`` knob: pauses at random opcodes of the project's code interleave one line.

A lost update inside one statement (``self.count += 1``: load, add, store) from four
threads is the race ``sys.setswitchinterval`` cannot reach on a GIL build from 3.11 on
(the eval loop switches threads only at calls and backward jumps). Every run here is a
real pytest process loading the injected plugin, as stress starts them.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from helpers.plugin_runs import SWITCHES_ONLY_BETWEEN_LINES, run_many, run_plugin
from helpers.project import make_project

from flakewarden.inside.plugin import places, yields

PROBABILITY = "0.001"  # the default recommended to the engine (KNOBS-DOC.md)

COUNTER = """
import threading


class Counter:
    def __init__(self):
        self.count = 0

    def bump(self):
        self.count += 1


def hammer(threads=4, each=2000):
    counter = Counter()

    def work():
        for _ in range(each):
            counter.bump()

    started = [threading.Thread(target=work) for _ in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    return counter.count
"""

LOST_UPDATE = """
from counter import hammer


def test_lost_update():
    assert hammer() == 8000
"""


def _project(tmp_path: Path, **files: str) -> Path:
    return make_project(tmp_path / "proj", {"counter.py": COUNTER, **files})


def test_yield_interleaves_a_lost_update_inside_one_line(tmp_path: Path) -> None:
    # Measured: 20 of 20 runs at 0.01 and at 0.001, 19 of 20 at 0.0001 (3.11, 3.13).
    root = _project(tmp_path, **{"test_counter.py": LOST_UPDATE})
    extras = [{"FLAKEWARDEN_YIELD": f"{seed}:{PROBABILITY}"} for seed in (1, 2, 3, 4)]
    runs = run_many(root, "test_counter.py", extras=extras)
    assert all(len(run.tests) == 1 for run in runs), [run.stdout for run in runs]
    assert sum(run.failed for run in runs) >= 1
    lost = [run for run in runs if run.failed]
    assert "assert " in lost[0].tests[0]["phases"][1]["longrepr"]
    assert "== 8000" in lost[0].tests[0]["phases"][1]["longrepr"]


@pytest.mark.skipif(
    not SWITCHES_ONLY_BETWEEN_LINES,
    reason="3.9/3.10 switch threads inside a line; a free-threaded build runs them at once",
)
def test_switch_interval_alone_does_not_interleave_it(tmp_path: Path) -> None:
    # Measured: 0 failures in 200 processes (3.11), the same test as above.
    root = _project(tmp_path, **{"test_counter.py": LOST_UPDATE})
    extra = {"FLAKEWARDEN_SWITCH_INTERVAL": "1e-05", "FLAKEWARDEN_REPEAT": "25"}
    runs = run_many(root, "test_counter.py", extras=[extra, extra])
    assert [len(run.tests) for run in runs] == [25, 25]
    assert [run.failed for run in runs] == [0, 0]


RANDOM_DRAWS = """
import random

from counter import hammer


def test_draws():
    random.seed(1234)
    state = random.getstate()
    count = hammer(threads=2, each=3000)
    assert random.getstate() == state
    expected = random.Random(1234)
    assert [random.random() for _ in range(3)] == [expected.random() for _ in range(3)]
    print("COUNT", count)
"""


def test_the_tests_own_random_draws_are_unchanged(tmp_path: Path) -> None:
    root = _project(tmp_path, **{"test_draws.py": RANDOM_DRAWS})
    extras = [{"FLAKEWARDEN_YIELD": f"{seed}:{PROBABILITY}"} for seed in (5, 6)]
    runs = run_many(root, "-s", "test_draws.py", extras=extras)
    assert [run.returncode for run in runs] == [0, 0], runs[0].stdout
    counts = [int(n) for run in runs for n in re.findall(r"COUNT (\d+)", run.stdout)]
    assert len(counts) == 2
    assert min(counts) < 6000  # the knob paused the threads meanwhile


STATE_CONFTEST = """
import json
import os
import re
import sys
import threading

import pytest

LOG = os.environ["KNOB_LOG"]


def state(where, codes=()):
    monitoring = getattr(sys, "monitoring", None)
    tools = {}
    for tool in range(6) if monitoring else ():
        name = monitoring.get_tool(tool)
        if name:
            tools[name] = [monitoring.get_events(tool)]
            tools[name] += [monitoring.get_local_events(tool, code) for code in codes]
    gettrace = getattr(threading, "gettrace", None)
    hook = gettrace() if gettrace else threading._trace_hook
    found = {"where": where, "trace": sys.gettrace() is not None, "threads": hook is not None}
    with open(LOG, "a") as log:
        log.write(json.dumps({**found, "tools": tools}) + "\\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    yield
    import counter

    state("after " + item.name, [item.function.__code__, counter.Counter.bump.__code__])
"""

STATE_TESTS = """
import conftest
from counter import hammer


def test_one():
    conftest.state("in test_one")
    hammer(threads=2, each=100)


def test_two():
    conftest.state("in test_two")
"""


def test_the_knob_is_on_in_a_test_and_off_between_tests(tmp_path: Path) -> None:
    root = _project(tmp_path, **{"conftest.py": STATE_CONFTEST, "test_state.py": STATE_TESTS})
    log = tmp_path / "state.jsonl"
    run = run_plugin(
        root, "test_state.py", extra={"FLAKEWARDEN_YIELD": "1:0.01", "KNOB_LOG": str(log)}
    )
    assert run.returncode == 0, run.stdout + run.stderr
    states = {s["where"]: s for s in map(json.loads, log.read_text().splitlines())}
    assert list(states) == ["in test_one", "after test_one", "in test_two", "after test_two"]
    if hasattr(sys, "monitoring"):
        assert "(sys.monitoring)" in run.stdout
        assert states["in test_one"]["tools"][yields.TOOL_NAME][0] != 0
        # Off between tests: no global events, nor the local ones of the project's code.
        assert states["after test_one"]["tools"][yields.TOOL_NAME] == [0, 0, 0]
        assert states["after test_two"]["tools"][yields.TOOL_NAME] == [0, 0, 0]
    else:
        assert "(sys.settrace)" in run.stdout
        assert states["in test_one"]["trace"] and states["in test_one"]["threads"]
    for after in ("after test_one", "after test_two"):
        assert not states[after]["trace"] and not states[after]["threads"]


def test_a_seed_replays_by_hand_without_a_results_file(tmp_path: Path) -> None:
    # The reproduce command: PYTHONPATH=<plugin dir> FLAKEWARDEN_YIELD=... python -m
    # pytest -p flakewarden_pytest_plugin <test id>, with no results file.
    root = _project(tmp_path, **{"test_counter.py": LOST_UPDATE})
    extra = {"FLAKEWARDEN_YIELD": f"7:{PROBABILITY}"}
    run = run_plugin(root, "test_counter.py::test_lost_update", extra=extra, record=False)
    assert f"flakewarden: yield seed 7, probability {PROBABILITY} (sys." in run.stdout
    assert run.returncode == 1, run.stdout
    assert "== 8000" in run.stdout


def test_a_malformed_value_is_ignored_and_said(tmp_path: Path) -> None:
    root = _project(tmp_path, **{"test_counter.py": "def test_plain():\n    pass\n"})
    run = run_plugin(root, "test_counter.py", extra={"FLAKEWARDEN_YIELD": "0.01"})
    assert run.returncode == 0
    assert "FLAKEWARDEN_YIELD='0.01' is not <seed>:<probability>: ignored" in run.stderr
    assert "flakewarden: yield" not in run.stdout


BUSY_CONFTEST = """
import sys

monitoring = getattr(sys, "monitoring", None)
for tool in (3, 4) if monitoring else ():
    monitoring.use_tool_id(tool, "someone else")


def tracer(frame, event, arg):
    return None


sys.settrace(tracer)  # as coverage.py's tracer or a debugger would be
"""


def test_a_trace_function_already_set_keeps_the_knob_off_and_says_so(tmp_path: Path) -> None:
    # Both free tool ids taken: the trace-function fallback, which leaves a tracer alone.
    root = _project(
        tmp_path, **{"conftest.py": BUSY_CONFTEST, "test_counter.py": "def test_x():\n    pass\n"}
    )
    run = run_plugin(root, "test_counter.py", extra={"FLAKEWARDEN_YIELD": "1:0.5"})
    assert run.returncode == 0, run.stdout
    assert "probability 0.5 (sys.settrace)" in run.stdout
    assert "FLAKEWARDEN_YIELD not applied: a trace function" in run.stdout


EARLY_THREADS = """
import threading

from counter import Counter

go = threading.Event()
counter = Counter()


def work():
    go.wait()
    for _ in range(3000):
        counter.bump()


# Started at import, before any test: a server a session fixture started looks the same.
workers = [threading.Thread(target=work, daemon=True) for _ in range(3)]
for worker in workers:
    worker.start()


def test_early_threads():
    go.set()
    for worker in workers:
        worker.join()
    assert counter.count == 9000
"""


@pytest.mark.skipif(not hasattr(sys, "monitoring"), reason="before 3.12 nothing reaches them")
def test_threads_running_before_the_test_pause_too(tmp_path: Path) -> None:
    root = _project(tmp_path, **{"test_early.py": EARLY_THREADS})
    extras = [{"FLAKEWARDEN_YIELD": f"{seed}:{PROBABILITY}"} for seed in (1, 2, 3)]
    runs = run_many(root, "test_early.py", extras=extras)
    assert all(len(run.tests) == 1 for run in runs)
    assert sum(run.failed for run in runs) >= 1


def test_only_the_projects_files_are_its_code(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    plugin = tmp_path / "plugin"
    places_of = places.Places(str(root), str(plugin))
    assert places_of(str(root / "src" / "app.py"))
    assert places_of(str(root / "tests" / "test_app.py"))
    venv = root / ".venv" / "lib" / "python3.12" / "site-packages" / "lib.py"
    assert not places_of(str(venv))
    assert not places_of(str(root / "debian" / "dist-packages" / "lib.py"))
    assert not places_of(os.__file__)  # the standard library
    assert not places_of(pytest.__file__)
    assert not places_of(str(plugin / "flakewarden_pytest_plugin.py"))
    assert not places_of("<flakewarden_pytest_plugin/yields.py>")
    assert not places_of("<string>")
    assert not places_of(str(tmp_path / "elsewhere.py"))
    (tmp_path / "link").symlink_to(root)
    assert places_of(str(tmp_path / "link" / "src" / "app.py"))  # the same file, by a link


def test_values_parse_as_documented() -> None:
    assert yields.parse("1234:0.002") == (1234, 0.002)
    assert yields.parse(" 7:1 ") == (7, 1.0)
    for bad in ("", "7", "7:", "x:0.1", "7:0", "7:1.5", "7:nan", "0.01"):
        assert yields.parse(bad) is None, bad
