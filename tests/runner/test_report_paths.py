"""Less common ways pytest reports a test: each one read as pytest itself read it.

Every case runs the same project twice, once under plain pytest and once under
``flakewarden run --reruns 0``, and checks that flakewarden's outcome, exit code
and (through the consistency check) counts agree with what pytest reported. The
rule behind all of them: nothing pytest reported as failed or errored is ever
counted as passed, and no test pytest ran goes missing.
"""

from __future__ import annotations

import re
import subprocess
from typing import Any

# The plugins these tests drive are test dependencies: missing, they fail the import here
# rather than skip the tests.
import pytest_rerunfailures  # noqa: F401
import pytest_timeout  # noqa: F401
from helpers.project import FLAKY_TEMPLATE, PYTEST, Project, Result

SUMMARY = re.compile(r"^=+ (.*) in [\d.]+s(?: \(.*\))? =+$", re.MULTILINE)


def plain(project: Project, *args: str) -> tuple[int, str]:
    """pytest alone: its exit code and its summary line's counts (``3 failed, 1 passed``)."""
    done = subprocess.run(
        [*PYTEST, *args], cwd=project.root, env=project.env(), capture_output=True, text=True
    )
    found = SUMMARY.findall(done.stdout)
    return done.returncode, found[-1] if found else ""


def counts(line: str) -> dict[str, int]:
    """``2 failed, 1 error, 1 passed`` as ``{"failed": 2, "error": 1, "passed": 1}``."""
    out = {}
    for part in line.split(", "):
        number, _, word = part.partition(" ")
        word = {"errors": "error", "warnings": "warnings"}.get(word, word)
        if number.isdigit():
            out[word] = int(number)
    out.pop("warnings", None)
    return out


def first_attempt(result: Result, test_id: str) -> dict[str, Any]:
    attempt = result.test(test_id)["attempts"][0]
    assert isinstance(attempt, dict)
    return attempt


def agrees(result: Result, line: str) -> None:
    """flakewarden's copy of pytest's counts is pytest's line, and its records add up to it."""
    attempt = result.report["attempts"][0]
    assert attempt["disagreements"] == [], attempt["disagreements"]
    assert attempt["pytest_summary"] == counts(line)
    assert "disagree" not in result.stderr


def test_pytest_exit_ends_the_run_as_pytest_did(project: Project) -> None:
    project.write(
        "tests/test_x.py",
        """
        import pytest

        def test_before():
            pass

        def test_exit():
            pytest.exit("stop right here")

        def test_after():
            pass
        """,
    )
    code, line = plain(project)
    assert (code, line) == (2, "1 passed")
    result = project.run("--reruns", "0")
    assert result.returncode == code, result.stdout + result.stderr
    # The test that stopped the session ran: it is reported, and never as a pass.
    assert result.outcomes == {
        "tests/test_x.py::test_before": "passed",
        "tests/test_x.py::test_exit": "error",
    }
    attempt = first_attempt(result, "tests/test_x.py::test_exit")
    assert "stop right here" in attempt["message"]
    assert result.report["interrupted"] is False  # pytest's session did, not flakewarden's run
    agrees(result, line)


def test_keyboard_interrupt_inside_a_test(project: Project) -> None:
    project.write(
        "tests/test_k.py",
        """
        def test_before():
            pass

        def test_interrupts():
            raise KeyboardInterrupt

        def test_after():
            pass
        """,
    )
    code, line = plain(project)
    assert (code, line) == (2, "1 passed")
    result = project.run("--reruns", "0")
    assert result.returncode == code
    assert result.outcomes == {
        "tests/test_k.py::test_before": "passed",
        "tests/test_k.py::test_interrupts": "error",
    }
    assert (
        "KeyboardInterrupt" in first_attempt(result, "tests/test_k.py::test_interrupts")["message"]
    )
    agrees(result, line)


TIMEOUT = """
import time
import pytest

@pytest.mark.timeout(0.5, method="{method}")
def test_slow():
    time.sleep(30)

def test_fast():
    pass
"""


def test_pytest_timeout_signal_method_is_a_failure(project: Project) -> None:
    project.write("tests/test_t.py", TIMEOUT.format(method="signal"))
    code, line = plain(project)
    assert (code, line) == (1, "1 failed, 1 passed")
    result = project.run("--reruns", "0")
    assert result.returncode == code
    assert result.outcomes == {
        "tests/test_t.py::test_slow": "failed",
        "tests/test_t.py::test_fast": "passed",
    }
    message = first_attempt(result, "tests/test_t.py::test_slow")["message"]
    assert message == "Failed: Timeout (>0.5s) from pytest-timeout."
    agrees(result, line)


def test_pytest_timeout_thread_method_is_a_crash_named_and_continued(project: Project) -> None:
    """The thread method ends the process with ``os._exit`` mid-test: a crash of that test.

    pytest never finishes its session, so it prints no summary line; flakewarden names
    the test that was running, runs the one it had not reached in a fresh process, and
    fails the run.
    """
    project.write("tests/test_t.py", TIMEOUT.format(method="thread"))
    code, line = plain(project)
    assert code == 1 and line == ""  # no summary line: the process was ended mid-test
    result = project.run("--reruns", "0")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.outcomes == {
        "tests/test_t.py::test_slow": "failed",
        "tests/test_t.py::test_fast": "passed",
    }
    attempt = first_attempt(result, "tests/test_t.py::test_slow")
    assert attempt["outcome"] == "crashed"
    assert "exit" in attempt["message"] and "Timeout" in attempt["longrepr"]


def test_pytest_fail_without_traceback(project: Project) -> None:
    project.write(
        "tests/test_f.py",
        """
        import pytest

        def test_fails():
            pytest.fail("the reason, alone", pytrace=False)
        """,
    )
    code, line = plain(project)
    assert (code, line) == (1, "1 failed")
    result = project.run("--reruns", "0")
    assert result.returncode == code
    attempt = first_attempt(result, "tests/test_f.py::test_fails")
    assert (attempt["outcome"], attempt["phase"]) == ("failed", "call")
    assert attempt["message"] == "the reason, alone"
    agrees(result, line)


def test_failing_doctest_item(project: Project) -> None:
    project.write(
        "pkg/calc.py",
        '''
        def add(a, b):
            """
            >>> add(1, 1)
            3
            """
            return a + b
        ''',
    )
    code, line = plain(project, "--doctest-modules", "pkg")
    assert (code, line) == (1, "1 failed")
    result = project.run("--reruns", "1", command=[*PYTEST, "--doctest-modules", "pkg"])
    assert result.returncode == code
    test = result.test("pkg/calc.py::calc.add")
    assert test["outcome"] == "failed"
    assert [a["outcome"] for a in test["attempts"]] == ["failed", "failed"]  # rerun by node id
    assert test["attempts"][0]["message"] == "doctest add(1, 1): expected 3, got 2"
    agrees(result, line)


def test_teardown_error_after_a_subtest_failure(project: Project) -> None:
    project.write(
        "tests/test_td.py",
        """
        import pytest

        @pytest.fixture
        def broken():
            yield
            raise RuntimeError("teardown broke")

        def test_td(subtests, broken):
            with subtests.test("one"):
                assert False, "sub one"
        """,
    )
    code, line = plain(project)
    assert (code, line) == (1, "2 failed, 1 error")
    result = project.run("--reruns", "0")
    assert result.returncode == code
    test = result.test("tests/test_td.py::test_td")
    assert test["outcome"] == "error"  # a teardown error: as pytest's ERROR line says
    attempt = test["attempts"][0]
    assert [(s["description"], s["outcome"]) for s in attempt["subtests"]] == [("[one]", "failed")]
    assert "teardown broke" in attempt["longrepr"] and "sub one" in attempt["longrepr"]
    agrees(result, line)


def test_in_process_rerun_by_pytest_rerunfailures_is_a_failed_attempt(project: Project) -> None:
    project.write(
        "tests/test_r.py",
        FLAKY_TEMPLATE.format(name="r")
        + """

def test_flips():
    assert bump() > 1, "first run fails"
""",
    )
    code, line = plain(project, "--reruns", "1")
    assert (code, line) == (0, "1 passed, 1 rerun")
    (project.root / "tests" / ".counter-r").unlink()
    result = project.run("--reruns", "0", command=[*PYTEST, "--reruns", "1"])
    assert result.returncode == code
    test = result.test("tests/test_r.py::test_flips")
    # The failed run pytest-rerunfailures retried is a failed attempt, not a setup error.
    assert [(a["attempt"], a["outcome"]) for a in test["attempts"]] == [
        (1, "failed"),
        (1, "passed"),
    ]
    failed = test["attempts"][0]
    assert failed["phase"] == "call"
    assert "first run fails" in failed["message"]
    assert test["outcome"] == "flaky"
    agrees(result, line)
