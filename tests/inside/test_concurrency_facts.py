"""The applicability facts: each test record says which threads and event loops ran beside it.

With ``FLAKEWARDEN_CONCURRENCY=1`` every ``test`` record (one per in-process repeat) gains
``"concurrency": {"threads": T, "event_loop": L}``; stress skips a knob that cannot apply
(``switch-interval`` and ``yield`` need threads, ``asyncio`` an event loop). Without the
variable nothing is patched and the records are as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.plugin_runs import run_plugin
from helpers.project import make_project

CONFTEST = """
import threading

import pytest


def pytest_configure(config):
    # A plugin's own thread, running before any test (pytest-rerunfailures starts one
    # wherever pytest-xdist is installed): the same for every test, never counted.
    threading.Thread(target=threading.Event().wait, daemon=True).start()


@pytest.fixture(scope="session")
def server():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    yield thread
    stop.set()
"""

TESTS = """
import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor


def test_plain():
    assert sum(range(10)) == 45


def test_three_threads():
    threads = [threading.Thread(target=sum, args=([1, 2],)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_a_pool():
    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(abs, [-1, -2, -3, -4])) == [1, 2, 3, 4]


def test_with_server(server):
    assert server.is_alive()


def test_after_the_server_started():
    pass


def test_asyncio_run():
    async def main():
        for _ in range(5):
            await asyncio.sleep(0)

    asyncio.run(main())
"""


def _facts(run: Any) -> dict[str, list[dict[str, int]]]:
    found: dict[str, list[dict[str, int]]] = {}
    for test in run.tests:
        found.setdefault(test["id"].split("::")[-1], []).append(test.get("concurrency"))
    return found


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", {"conftest.py": CONFTEST, "test_facts.py": TESTS})


def test_each_test_says_how_many_threads_and_loop_iterations_ran_beside_it(root: Path) -> None:
    run = run_plugin(root, "test_facts.py", extra={"FLAKEWARDEN_CONCURRENCY": "1"})
    assert run.returncode == 0, run.stdout + run.stderr
    facts = _facts(run)
    assert facts["test_plain"] == [{"threads": 0, "event_loop": 0}]
    assert facts["test_three_threads"] == [{"threads": 3, "event_loop": 0}]
    assert facts["test_a_pool"] == [{"threads": 2, "event_loop": 0}]
    # Started in the test's setup, then alive beside every later test.
    assert facts["test_with_server"] == [{"threads": 1, "event_loop": 0}]
    assert facts["test_after_the_server_started"] == [{"threads": 1, "event_loop": 0}]
    (loop,) = facts["test_asyncio_run"]
    assert loop["threads"] == 1
    assert loop["event_loop"] >= 6  # five steps and the last; asyncio.run adds its own


def test_repeats_have_facts_of_their_own(root: Path) -> None:
    extra = {"FLAKEWARDEN_CONCURRENCY": "1", "FLAKEWARDEN_REPEAT": "3"}
    run = run_plugin(
        root, "test_facts.py::test_three_threads", "test_facts.py::test_plain", extra=extra
    )
    facts = _facts(run)
    assert facts["test_three_threads"] == [{"threads": 3, "event_loop": 0}] * 3
    assert facts["test_plain"] == [{"threads": 0, "event_loop": 0}] * 3


def test_an_async_test_of_pytest_asyncio_counts_its_loop(tmp_path: Path) -> None:
    pytest.importorskip("pytest_asyncio")
    test = "import pytest\n\n\n@pytest.mark.asyncio\nasync def test_async():\n    pass\n"
    root = make_project(tmp_path / "proj", {"test_async.py": test})
    run = run_plugin(
        root,
        "test_async.py",
        extra={"FLAKEWARDEN_CONCURRENCY": "1"},
        plugins=("pytest_asyncio.plugin",),
    )
    (facts,) = _facts(run)["test_async"]
    assert facts["threads"] == 0
    assert facts["event_loop"] >= 1


PATCHED = """
import asyncio.base_events
import json
import os
import threading


def test_what_is_patched():
    start = threading.Thread.start
    run_once = asyncio.base_events.BaseEventLoop._run_once
    with open(os.environ["PATCHED_LOG"], "w") as log:
        json.dump({"start": start.__module__, "run_once": run_once.__module__}, log)
"""


def test_nothing_is_patched_without_the_variable(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj", {"test_patched.py": PATCHED})
    log = tmp_path / "patched.json"
    plain = run_plugin(root, "test_patched.py", extra={"PATCHED_LOG": str(log)})
    assert plain.returncode == 0
    assert log.read_text() == '{"start": "threading", "run_once": "asyncio.base_events"}'
    assert "concurrency" not in plain.tests[0]
    extra = {"PATCHED_LOG": str(log), "FLAKEWARDEN_CONCURRENCY": "1"}
    facts = run_plugin(root, "test_patched.py", extra=extra)
    assert facts.returncode == 0
    ours = '{"start": "flakewarden_pytest_plugin.concurrency", '
    assert log.read_text() == ours + '"run_once": "flakewarden_pytest_plugin.event_loop"}'


def test_facts_cross_from_an_xdist_worker(root: Path) -> None:
    pytest.importorskip("xdist")
    extra = {"FLAKEWARDEN_CONCURRENCY": "1"}
    run = run_plugin(root, "-n", "1", "test_facts.py", extra=extra, plugins=("xdist.plugin",))
    assert run.returncode == 0, run.stdout + run.stderr
    facts = _facts(run)
    assert facts["test_three_threads"] == [{"threads": 3, "event_loop": 0}]
    assert facts["test_plain"] == [{"threads": 0, "event_loop": 0}]


TEARDOWN_FAILS = """
import threading

import pytest


@pytest.fixture
def broken():
    yield
    raise RuntimeError("teardown fails")


def test_broken_teardown(broken):
    thread = threading.Thread(target=sum, args=([1],))
    thread.start()
    thread.join()


def test_next():
    pass
"""


def test_a_failing_teardown_still_closes_the_window(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj", {"test_teardown.py": TEARDOWN_FAILS})
    extra = {"FLAKEWARDEN_CONCURRENCY": "1", "FLAKEWARDEN_YIELD": "1:0.001"}
    run = run_plugin(root, "test_teardown.py", extra=extra)
    facts = _facts(run)
    assert facts["test_broken_teardown"] == [{"threads": 1, "event_loop": 0}]
    assert facts["test_next"] == [{"threads": 0, "event_loop": 0}]
    assert run.tests[0]["phases"][2]["outcome"] == "failed"
