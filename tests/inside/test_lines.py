"""``FLAKEWARDEN_LINES`` and ``FLAKEWARDEN_YIELD_LINES``: lines counted, pauses placed.

Real pytest processes with the injected plugin, as stress starts them: each run's record
holds how often each line of the project's code ran, in every thread, alone or beside the
yield knob (one trace function serves both before 3.12); the yield knob's pauses limited
to one line interleave a lost update at that line and nowhere else.
"""

from __future__ import annotations

from pathlib import Path

from helpers.plugin_runs import run_many, run_plugin
from helpers.project import make_project

FILES = {
    "ledger.py": """
        import threading


        class Ledger:
            def __init__(self):
                self.total = 0
                self._lock = threading.Lock()

            def add(self, cents):
                with self._lock:
                    pass
                self.total += cents
        """,
    "test_ledger.py": """
        import threading

        from ledger import Ledger


        def test_every_payment_is_counted():
            ledger = Ledger()
            barrier = threading.Barrier(4)

            def pay():
                barrier.wait()
                for _ in range(500):
                    ledger.add(5)

            threads = [threading.Thread(target=pay) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert ledger.total == 10000
        """,
}


def test_each_run_counts_the_lines_of_the_project_in_every_thread(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", FILES)
    plain, paused = run_many(
        project,
        "-p",
        "no:randomly",
        extras=[
            {"FLAKEWARDEN_LINES": "1", "FLAKEWARDEN_REPEAT": "2"},
            {"FLAKEWARDEN_LINES": "1", "FLAKEWARDEN_YIELD": "7:0.0001"},
        ],
    )
    for run in (plain, paused):
        for record in run.tests:
            lines = record["lines"]
            assert set(lines) == {"ledger.py", "test_ledger.py"}  # not pytest, not the stdlib
            # ``self.total += cents``, 500 times in each of the 4 threads
            assert lines["ledger.py"]["12"] == 2000
            assert lines["test_ledger.py"]["13"] == 2000  # ledger.add(5), in the threads
    assert len(plain.tests) == 2  # each in-process repeat counts its own
    assert plain.tests[0]["lines"] == plain.tests[1]["lines"]


def test_pauses_limited_to_the_racy_line_interleave_it_and_elsewhere_do_not(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "p", FILES)
    at = [
        {"FLAKEWARDEN_YIELD": f"{seed}:0.05", "FLAKEWARDEN_YIELD_LINES": "ledger.py:12"}
        for seed in range(4)
    ]
    elsewhere = [
        {"FLAKEWARDEN_YIELD": f"{seed}:0.05", "FLAKEWARDEN_YIELD_LINES": "ledger.py:10"}
        for seed in range(4)
    ]
    runs = run_many(project, "-p", "no:randomly", extras=[*at, *elsewhere])
    assert [r.failed for r in runs[:4]] == [1, 1, 1, 1]
    assert [r.failed for r in runs[4:]] == [0, 0, 0, 0]


def test_without_the_variable_nothing_is_counted(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", FILES)
    run = run_plugin(project, "-p", "no:randomly")
    assert "lines" not in run.tests[0]
