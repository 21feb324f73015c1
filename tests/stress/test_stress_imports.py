"""Import polluters: a test broken by what another test module does when it is collected.

pytest imports every collected module before any test runs, so a module that
changes shared state at import fails its victim whenever it is collected:
``-k victim`` over the suite and every xdist worker fail it, while the test
alone, its own file, and a replay of the tests that ran before it all pass.
Each project is real: its run is recorded with ``flakewarden run`` (under ``-n 2``,
under ``-k``) and then stressed with the real CLI against that report.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers.project import make_project
from helpers.stress_runs import PYTEST, arm, stress

# The evidence here is what was collected and what ran before the test, never timing:
# these stress runs need no machine to themselves and run in the parallel part.

# The budget bounds the bisection too: the default leaves it room on a loaded machine.
OPTIONS = ("--runs", "20")
VICTIM = "tests/test_a.py::test_victim"
FLAKEWARDEN_RUN = [
    *(sys.executable, "-m", "flakewarden", "run"),
    *("--reruns", "1", "--no-quarantine-from-github"),
]

# tests/test_b.py imports tests/helpers_b.py, which selects a module-level setting at
# import; tests/test_a.py::test_victim relies on the default.
IMPORT_FILES = {
    "tests/__init__.py": "",
    "tests/settings.py": """
        MODE = "prod"
        """,
    "tests/helpers_b.py": """
        from tests import settings

        settings.MODE = "debug"  # chosen at import: every test collected with this sees it
        """,
    "tests/test_a.py": """
        from tests import settings


        def test_title():
            assert "a".upper() == "A"


        def test_victim():
            assert settings.MODE == "prod"
        """,
    "tests/test_b.py": """
        from tests import helpers_b


        def test_b_one():
            assert helpers_b.__name__ == "tests.helpers_b"


        def test_b_two():
            assert 1 + 1 == 2
        """,
    "tests/test_c.py": """
        def test_c():
            assert "c" * 2 == "cc"
        """,
    "tests/test_d.py": """
        def test_d():
            assert len("d") == 1
        """,
}

# The control: the same victim, polluted by what a test in another module does when it runs.
EXECUTED_FILES = {
    **IMPORT_FILES,
    "tests/helpers_b.py": """
        from tests import settings


        def select_debug():
            settings.MODE = "debug"
        """,
    "tests/test_b.py": """
        from tests import helpers_b


        def test_b_one():
            helpers_b.select_debug()  # never restored: pollutes every later test
        """,
}


def record(project: Path, *pytest_args: str, collection: bool = True) -> Path:
    """``flakewarden run`` with ``pytest_args`` (one rerun); its ``report.json``.

    ``collection``: whether the run holds evidence that the victim depends on collection
    (it failed before any test of the polluter's module ran), so its summary says so.
    """
    report_dir = project / "recorded"
    done = subprocess.run(
        [
            *FLAKEWARDEN_RUN,
            "--no-quarantine-from-github",
            "--report-dir",
            str(report_dir),
            "--",
            *PYTEST,
            *pytest_args,
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr  # flaky: failed, then passed
    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    victim = next(t for t in report["tests"] if t["id"] == VICTIM)
    assert victim["outcome"] == "flaky"
    # It failed where tests/test_b.py was collected and passed in a rerun of its own file:
    # the run's summary points at collection before anyone stresses it.
    summary = (report_dir / "summary.md").read_text(encoding="utf-8")
    if collection:
        assert victim["collection_hint"] is True
        assert (
            "before any test of tests/test\\_b.py, tests/test\\_c.py, tests/test\\_d.py ran in "
            "its process (only their import had)"
        ) in summary
        assert "may depend on what collecting other modules does" in summary
    else:  # the polluter's test ran first: its running, not its import, is as likely
        assert "collection_hint" not in victim
        assert "collecting other modules" not in summary
    return report_dir / "report.json"


def _by_hand(project: Path, command: str) -> int:
    return subprocess.run(command, shell=True, cwd=project, capture_output=True).returncode


def _names_the_import_polluter(project: Path, data: dict[str, Any]) -> None:
    assert data["verdict"] == "order-dependent", data["reason"]
    assert data["polluter"] == "tests/test_b.py"
    assert data["quarantine_allowed"] is True
    assert "collected" in data["reason"] and "import" in data["reason"]
    order = data["order"]
    assert order["kind"] == "import" and order["modules"] == ["tests/test_b.py"]
    assert arm(data, "isolation", "baseline")["failures"] == 0
    confirm = arm(data, "order", "module-collected")
    assert (confirm["runs"], confirm["failures"]) == (5, 5)
    assert not any(row["phase"] == "timing" for row in data["arms"])
    # The pair reproduces by hand, without flakewarden: collected it fails, not it passes.
    assert _by_hand(project, order["reproduce"]["collected"]) == 1
    assert _by_hand(project, order["reproduce"]["not_collected"]) == 0
    markdown = (project / "flakewarden-stress" / "verdict.md").read_text(encoding="utf-8")
    assert "tests/test_b.py" in markdown and order["reproduce"]["collected"] in markdown


def test_the_project_fails_the_victim_only_when_the_module_is_collected(tmp_path: Path) -> None:
    project = make_project(tmp_path / "imports", IMPORT_FILES)
    selected = [*PYTEST, "-q", "-k", "test_victim", "tests/"]
    assert subprocess.run(selected, cwd=project, capture_output=True).returncode == 1
    alone = [*PYTEST, "-q", VICTIM]
    assert subprocess.run(alone, cwd=project, capture_output=True).returncode == 0
    own_file = [*PYTEST, "-q", "tests/test_a.py"]
    assert subprocess.run(own_file, cwd=project, capture_output=True).returncode == 0


def test_a_run_under_xdist_names_the_module_whose_import_pollutes(tmp_path: Path) -> None:
    project = make_project(tmp_path / "xdist", IMPORT_FILES)
    report = record(project, "-n", "2", "tests/")
    result, data = stress(project, VICTIM, "--order-from", str(report), *OPTIONS)
    assert result.returncode == 0, result.stderr
    _names_the_import_polluter(project, data)


def test_a_run_under_k_names_the_module_whose_import_pollutes(tmp_path: Path) -> None:
    # Under -k only the victim ran: there is no predecessor, and the collection is the suspect.
    project = make_project(tmp_path / "keyword", IMPORT_FILES)
    report = record(project, "-k", "test_victim", "tests/")
    result, data = stress(project, VICTIM, "--order-from", str(report), *OPTIONS)
    assert result.returncode == 0, result.stderr
    _names_the_import_polluter(project, data)
    assert data["order"]["predecessors"] == 0
    collection = arm(data, "order", "recorded-collection")
    assert collection["failures"] == collection["runs"] == 3
    # The three other modules were bisected down to the one; its pair was confirmed.
    assert data["order"]["collection"]["modules"] == 3
    assert data["order"]["module_bisection"]


def test_a_polluter_that_pollutes_when_it_runs_is_named_as_the_test(tmp_path: Path) -> None:
    project = make_project(tmp_path / "executed", EXECUTED_FILES)
    # The polluter runs first: nothing in the run points at collection.
    report = record(project, "tests/test_b.py", "tests/test_a.py", collection=False)
    result, data = stress(project, VICTIM, "--order-from", str(report), *OPTIONS)
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "order-dependent", data["reason"]
    assert data["polluter"] == "tests/test_b.py::test_b_one"
    assert data["order"]["kind"] == "victim"
    # Its module was collected without running it, and the victim passed: not the import.
    assert data["order"]["collected_only"]["failures"] == 0
    assert arm(data, "order", "after-polluter")["failures"] == 5


def test_a_recorded_failure_no_phase_reproduces_is_said_to_be_evidence(tmp_path: Path) -> None:
    # It failed in the recorded run while a lock file existed (an outside condition); the
    # file is gone when it is stressed, so nothing brings the failure back.
    project = make_project(
        tmp_path / "outside",
        {
            "tests/__init__.py": "",
            "tests/test_sync.py": """
                from pathlib import Path


                def test_sync():
                    assert not (Path(__file__).parent / "maintenance.lock").exists()
                """,
        },
    )
    lock = project / "tests" / "maintenance.lock"
    lock.write_text("", encoding="utf-8")
    report_dir = project / "recorded"
    done = subprocess.run(
        [*FLAKEWARDEN_RUN, "--report-dir", str(report_dir), "--", *PYTEST, "tests/"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    lock.unlink()
    test_id = "tests/test_sync.py::test_sync"
    result, data = stress(
        project, test_id, "--order-from", str(report_dir / "report.json"), "--runs", "10"
    )
    assert result.returncode == 0, result.stderr
    assert data["verdict"] == "not-reproducible", data["reason"]
    reason = data["reason"]
    assert "failed in its recorded run" in reason and "no phase reproduced it" in reason
    assert "Stress varied" in reason and "the collection" in reason
    assert "it did not vary" in reason and "other processes" in reason
    # The bound statement stays: too few runs bound nothing, and quarantine is refused.
    assert "absence of evidence" in reason and data["quarantine_allowed"] is False
    assert arm(data, "order", "recorded-collection")["failures"] == 0
