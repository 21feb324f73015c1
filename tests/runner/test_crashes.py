"""Tests that kill the interpreter: each is named, ``crashed``, rerun, and nothing else is lost.

Every test here drives real ``flakewarden run`` and real pytest subprocesses that really
die: a segfault, an abort, SIGKILL, ``os._exit``, a hang stopped by ``--attempt-timeout``,
and xdist workers that segfault.
"""

from __future__ import annotations

import json
import os
import signal
import time
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from helpers.project import PYTEST, Project, Result

from flakewarden.reports.junit import split_node_id
from flakewarden.reports.markdown import CELL_LIMIT, escape

CRASH_ONCE = """
import ctypes, os, signal, time
from pathlib import Path

MARK = Path(__file__).parent / ".crashed-{name}"


def crash_once():
    if not MARK.exists():
        MARK.write_text("1")
        {crash}


def test_a_before():
    pass


def test_{name}():
    crash_once()


def test_z_after():
    pass
"""

CRASHES = {
    "segfault": ("ctypes.string_at(0)", "was killed by SIGSEGV (signal 11)"),
    "abort": ("os.abort()", "was killed by SIGABRT (signal 6)"),
    "sigkill": (
        "os.kill(os.getpid(), signal.SIGKILL)",
        "was killed by SIGKILL (signal 9; the out-of-memory killer sends it)",
    ),
    "exit": ("os._exit(0)", "exited with status 0 before pytest's session finished (os._exit?)"),
}


def _attempt_outcomes(result: Result, test_id: str) -> list[tuple[int, str]]:
    return [(a["attempt"], a["outcome"]) for a in result.test(test_id)["attempts"]]


def _junit_case(result: Result, test_id: str) -> ET.Element:
    root = ET.parse(result.report_dir / "junit.xml").getroot()
    named = split_node_id(test_id)
    for case in root.iter("testcase"):
        if (case.get("classname"), case.get("name")) == named:
            return case
    raise AssertionError(f"{test_id} not in junit.xml")


def _records(result: Result, where: str) -> list[dict[str, Any]]:
    text = (result.report_dir / where / "results.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("kind", sorted(CRASHES))
def test_a_crash_is_named_the_rest_continue_and_the_crashed_test_is_rerun(
    project: Project, kind: str
) -> None:
    crash, how = CRASHES[kind]
    project.write("tests/test_c.py", CRASH_ONCE.format(name=kind, crash=crash))
    crashed = f"tests/test_c.py::test_{kind}"
    result = project.run()

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes == {
        "tests/test_c.py::test_a_before": "passed",
        crashed: "flaky",
        "tests/test_c.py::test_z_after": "passed",
    }
    # The test after the crash ran in a continuation: still attempt 1, not a rerun.
    assert _attempt_outcomes(result, "tests/test_c.py::test_z_after") == [(1, "passed")]
    assert _attempt_outcomes(result, crashed) == [(1, "crashed"), (2, "passed")]
    first = result.test(crashed)["attempts"][0]
    assert first["message"] == f"crashed: the test process {how}"
    assert "attempts/1/output.log" in first["longrepr"]

    attempts = result.report["attempts"]
    assert [a["number"] for a in attempts] == [1, 2]
    assert how in attempts[0]["crash"]
    [continuation] = attempts[0]["continuations"]
    assert continuation["selected"] == 1 and continuation["crash"] == ""
    assert continuation["directory"] == "attempts/1/continuation-1"
    ran = [r["id"] for r in _records(result, continuation["directory"]) if r["kind"] == "test"]
    assert ran == ["tests/test_c.py::test_z_after"]
    assert attempts[1]["selected"] == [crashed]

    # Every report names the crashed test.
    assert f"{crashed} crashed: the test process {how}" in result.stdout
    assert f"FLAKY-TEST-DETECTED: {crashed}" in result.stdout
    summary = (result.report_dir / "summary.md").read_text(encoding="utf-8")
    assert escape(crashed, CELL_LIMIT) in summary
    assert escape(f"crashed: the test process {how}", CELL_LIMIT) in summary
    flaky = _junit_case(result, crashed).find("flakyFailure")
    assert flaky is not None
    assert flaky.get("message") == f"crashed: the test process {how}"


def test_the_fault_handler_traceback_is_kept(project: Project) -> None:
    project.write("tests/test_c.py", CRASH_ONCE.format(name="segv", crash="ctypes.string_at(0)"))
    result = project.run()
    longrepr = result.test("tests/test_c.py::test_segv")["attempts"][0]["longrepr"]
    assert "Fatal Python error: Segmentation fault" in longrepr
    assert 'test_c.py", line 10 in crash_once' in longrepr
    assert 'test_c.py", line 18 in test_segv' in longrepr


def test_a_test_that_crashes_every_attempt_fails_with_the_crash(project: Project) -> None:
    project.write("tests/test_a.py", "def test_a():\n    pass\n")
    project.write("tests/test_b.py", "import os\n\ndef test_b():\n    os._exit(0)\n")
    project.write("tests/test_c.py", "def test_c():\n    pass\n")
    result = project.run()

    assert result.returncode == 1, result.stdout + result.stderr
    assert result.outcomes == {
        "tests/test_a.py::test_a": "passed",
        "tests/test_b.py::test_b": "failed",
        "tests/test_c.py::test_c": "passed",
    }
    message = f"crashed: the test process {CRASHES['exit'][1]}"
    attempts = result.test("tests/test_b.py::test_b")["attempts"]
    assert [(a["outcome"], a["message"]) for a in attempts] == [("crashed", message)] * 3
    case = _junit_case(result, "tests/test_b.py::test_b")
    assert [child.tag for child in case if child.tag != "system-out"] == [
        "failure",
        "rerunFailure",
        "rerunFailure",
    ]
    assert case[0].get("message") == message
    root = ET.parse(result.report_dir / "junit.xml").getroot()
    assert root.get("failures") == "1" and root.get("tests") == "3"
    # A rerun that crashes has nothing left to continue: one process per attempt.
    assert [len(a["continuations"]) for a in result.report["attempts"]] == [1, 0, 0]


def test_a_crash_in_a_rerun_continues_the_rerun(project: Project) -> None:
    """Two failed tests rerun together; the first crashes: the second still runs in attempt 2."""
    project.write(
        "tests/test_r.py",
        """
        import ctypes
        from pathlib import Path

        HERE = Path(__file__).parent

        def runs(name):
            mark = HERE / f".runs-{name}"
            n = int(mark.read_text()) + 1 if mark.exists() else 1
            mark.write_text(str(n))
            return n

        def test_p1():
            n = runs("p1")
            if n == 2:
                ctypes.string_at(0)
            assert n > 2

        def test_p2():
            assert runs("p2") > 1
        """,
    )
    result = project.run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert _attempt_outcomes(result, "tests/test_r.py::test_p1") == [
        (1, "failed"),
        (2, "crashed"),
        (3, "passed"),
    ]
    assert _attempt_outcomes(result, "tests/test_r.py::test_p2") == [(1, "failed"), (2, "passed")]
    second = result.report["attempts"][1]
    assert [c["selected"] for c in second["continuations"]] == [1]
    assert result.report["attempts"][2]["selected"] == ["tests/test_r.py::test_p1"]
    assert second["crash"] == "was killed by SIGSEGV (signal 11)"
    assert result.report["problems"] == []  # handled: nothing stands between it and green


def test_crashes_beyond_max_failures_are_a_real_break(project: Project) -> None:
    project.write("tests/test_a.py", "def test_a():\n    pass\n")
    project.write(
        "tests/test_b.py",
        "import os\n\n" + "".join(f"def test_{i}():\n    os._exit(1)\n\n" for i in range(4)),
    )
    project.write("tests/test_c.py", "def test_c():\n    pass\n")
    result = project.run("--max-failures", "2")

    assert result.returncode == 1, result.stdout + result.stderr
    assert result.outcomes == {
        "tests/test_a.py::test_a": "passed",
        "tests/test_b.py::test_0": "failed",
        "tests/test_b.py::test_1": "failed",
        "tests/test_b.py::test_2": "failed",
    }
    report = result.report
    assert report["cutoff"] is True
    assert len(report["attempts"]) == 1  # no reruns
    assert len(report["attempts"][0]["continuations"]) == 2
    # test_0 to test_2 crashed; test_3 and test_c were never started: the only problem.
    assert report["problems"] == [
        "attempt 1: 3 tests crashed, more than --max-failures 2: that is a real break; "
        "2 tests never ran"
    ]


@pytest.mark.parametrize("where", ["option", "config"])
def test_a_hang_is_stopped_by_the_attempt_timeout(project: Project, where: str) -> None:
    child_pid = project.root / "grandchild.pid"
    project.write(
        "tests/test_h.py",
        f"""
        import subprocess, time
        from pathlib import Path

        MARK = Path(__file__).parent / ".hung"

        def test_a():
            pass

        def test_hang():
            if not MARK.exists():
                MARK.write_text("1")
                sleeper = subprocess.Popen(["sleep", "300"])
                Path({str(child_pid)!r}).write_text(str(sleeper.pid))
                time.sleep(300)

        def test_z():
            pass
        """,
    )
    if where == "config":
        project.write(".github/flakewarden.yml", "attempt_timeout: 10\n")
        args: tuple[str, ...] = ()
    else:
        args = ("--attempt-timeout", "10")
    started = time.monotonic()
    result = project.run(*args)
    elapsed = time.monotonic() - started

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes == {
        "tests/test_h.py::test_a": "passed",
        "tests/test_h.py::test_hang": "flaky",
        "tests/test_h.py::test_z": "passed",
    }
    first = result.test("tests/test_h.py::test_hang")["attempts"][0]
    assert first["outcome"] == "crashed"
    assert first["message"] == "crashed: timed out after 10 s (--attempt-timeout) and was stopped"
    assert _attempt_outcomes(result, "tests/test_h.py::test_z") == [(1, "passed")]
    assert elapsed < 200  # not the 300 s the test wanted
    # The whole process group went, the test's own child included.
    grandchild = int(child_pid.read_text())
    with pytest.raises(ProcessLookupError):
        for _ in range(100):
            os.kill(grandchild, 0)
            time.sleep(0.05)


def test_a_timeout_is_a_crash_even_when_the_suite_turns_sigterm_into_an_interrupt(
    project: Project,
) -> None:
    """pytest then ends its session as interrupted; the hang is still the test's, not the run's."""
    project.write(
        "conftest.py",
        """
        import signal

        def pytest_configure(config):
            signal.signal(signal.SIGTERM, signal.default_int_handler)
        """,
    )
    project.write(
        "tests/test_h.py",
        """
        import time
        from pathlib import Path

        MARK = Path(__file__).parent / ".hung"

        def test_hang():
            if not MARK.exists():
                MARK.write_text("1")
                time.sleep(300)

        def test_z():
            pass
        """,
    )
    result = project.run("--attempt-timeout", "10")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes == {
        "tests/test_h.py::test_hang": "flaky",
        "tests/test_h.py::test_z": "passed",
    }
    assert _attempt_outcomes(result, "tests/test_h.py::test_hang") == [
        (1, "crashed"),
        (2, "passed"),
    ]
    assert _attempt_outcomes(result, "tests/test_h.py::test_z") == [(1, "passed")]
    assert result.report["interrupted"] is False


@pytest.mark.parametrize("value", ["0", "-1", "inf", "nan", "soon"])
def test_attempt_timeout_must_be_a_positive_number(project: Project, value: str) -> None:
    project.write("tests/test_a.py", "def test_a():\n    pass\n")
    result = project.run("--attempt-timeout", value)
    assert result.returncode == 4
    assert "argument --attempt-timeout: expected" in result.stderr.splitlines()[-1]
    assert not (project.root / "report").exists()


@pytest.mark.parametrize("value", ["0", "-1", "864001", "'10'", "true"])
def test_attempt_timeout_in_the_config_file_is_checked(project: Project, value: str) -> None:
    project.write("tests/test_a.py", "def test_a():\n    pass\n")
    project.write(".github/flakewarden.yml", f"attempt_timeout: {value}\n")
    result = project.run()
    assert result.returncode == 4
    [line] = result.stderr.strip().splitlines()
    assert "flakewarden.yml: attempt_timeout: " in line
    assert "unknown key" not in line


def test_a_crash_outside_any_test_is_an_internal_error(project: Project) -> None:
    """Nothing to blame: the session never finished, but every test keeps its record."""
    project.write(
        "conftest.py",
        "import os\n\ndef pytest_sessionfinish(session):\n    os._exit(3)\n",
    )
    project.write("tests/test_a.py", "def test_a():\n    pass\n")
    result = project.run()
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.outcomes == {"tests/test_a.py::test_a": "passed"}
    assert result.report["problems"] == [
        "attempt 1: the test process exited with status 3 before pytest's session finished "
        "(os._exit?) while no test was running (a conftest, a plugin, exit?); "
        "see attempts/1/output.log"
    ]


XDIST_SEGV = """
import ctypes
from pathlib import Path

MARK = Path(__file__).parent / ".segv"


def test_a():
    pass


def test_segv():
    if {always} or not MARK.exists():
        MARK.write_text("1")
        ctypes.string_at(0)


def test_z():
    pass
"""


def test_xdist_worker_crash_is_crashed_and_rerun(project: Project) -> None:
    project.write("tests/test_c.py", XDIST_SEGV.format(always=False))
    result = project.run(command=[*PYTEST, "-n", "2"])

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes == {
        "tests/test_c.py::test_a": "passed",
        "tests/test_c.py::test_segv": "flaky",
        "tests/test_c.py::test_z": "passed",
    }
    first = result.test("tests/test_c.py::test_segv")["attempts"][0]
    assert first["outcome"] == "crashed"
    assert first["message"].startswith("worker 'gw")
    assert first["message"].endswith("crashed while running 'tests/test_c.py::test_segv'")
    # The other worker's progress dots may land inside faulthandler's first line.
    assert "Fatal Python error: " in first["longrepr"]
    assert 'tests/test_c.py", line 14 in test_segv' in first["longrepr"]
    assert not any("never ran" in p for p in result.report["problems"])
    assert result.report["problems"] == []
    assert "attempt 1: tests/test_c.py::test_segv crashed: worker 'gw" in result.stdout
    rerun = result.report["attempts"][1]
    assert rerun["selected"] == ["tests/test_c.py::test_segv"]
    assert rerun["command"][rerun["command"].index("-n") + 1] == "2"


def test_xdist_worker_crashing_every_attempt_fails(project: Project) -> None:
    project.write("tests/test_c.py", XDIST_SEGV.format(always=True))
    result = project.run("--reruns", "1", command=[*PYTEST, "-n", "2"])
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.outcomes == {
        "tests/test_c.py::test_a": "passed",
        "tests/test_c.py::test_segv": "failed",
        "tests/test_c.py::test_z": "passed",
    }
    assert [a["outcome"] for a in result.test("tests/test_c.py::test_segv")["attempts"]] == [
        "crashed",
        "crashed",
    ]
    failure = _junit_case(result, "tests/test_c.py::test_segv").find("failure")
    assert failure is not None and "crashed while running" in failure.get("message", "")
    assert result.report["totals"]["tests"] == 3


def test_records_survive_a_suite_that_ignores_sigterm(project: Project) -> None:
    """The suite swallows SIGTERM, so it is killed after the grace period: passes are kept."""
    started = project.root / "hang.started"
    project.write("tests/test_a.py", "".join(f"def test_{i}():\n    pass\n\n" for i in range(5)))
    project.write(
        "tests/test_b.py",
        f"""
        import signal, time
        from pathlib import Path

        def test_ignores_sigterm():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            Path({str(started)!r}).write_text("1")
            time.sleep(300)
        """,
    )
    report_dir = project.root / "report"
    runner = project.start()
    deadline = time.monotonic() + 120
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), "the hanging test never started"
    runner.send_signal(signal.SIGTERM)
    out, err = runner.communicate(timeout=120)

    assert runner.returncode == 2, out + err
    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    assert {t["id"]: t["outcome"] for t in report["tests"]} == {
        f"tests/test_a.py::test_{i}": "passed" for i in range(5)
    }
    assert any(
        "interrupted by SIGTERM while tests/test_b.py::test_ignores_sigterm ran" in p
        for p in report["problems"]
    )
