"""The consistency check: flakewarden's records of each attempt against pytest's own counts."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from helpers.project import PYTEST, Project
from helpers.workflow_commands import parse_commands

from flakewarden.runner.process_results import RecordReader, read_results
from flakewarden.runner.summary_counts import SummaryCounts, recorded_counts

SUMMARY = re.compile(r"^(?:=+ )?(\d+ \w.*) in [\d.]+s(?: \(.*\))?(?: =+)?$", re.MULTILINE)

MIXED = """
import pytest

@pytest.fixture
def broken_setup():
    raise RuntimeError("no setup")

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("no teardown")

def test_pass():
    pass

def test_fail():
    assert 1 == 2

@pytest.mark.skip(reason="later")
def test_skip():
    pass

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert 0

@pytest.mark.xfail(reason="fixed already")
def test_xpass():
    pass

def test_setup_error(broken_setup):
    pass

def test_fail_and_teardown_error(broken_teardown):
    assert 0

def test_subtests(subtests):
    for i in range(3):
        with subtests.test(i=i):
            assert i != 1
"""

# Runs the test named test_hidden through pytest's own protocol but logs its reports to
# every plugin except flakewarden's: pytest counts it, flakewarden never sees it.
HIDING_CONFTEST = """
import pytest
from _pytest.runner import runtestprotocol


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if not item.name.startswith("test_hidden"):
        return None
    manager = item.config.pluginmanager
    hidden = [manager.get_plugin("flakewarden_pytest_plugin")]
    log = manager.subset_hook_caller("pytest_runtest_logreport", remove_plugins=hidden)
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in runtestprotocol(item, log=False, nextitem=nextitem):
        log(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
"""


def summary_counts(stdout: str) -> dict[str, int]:
    line = SUMMARY.findall(stdout)[-1]
    out = {}
    for part in line.split(", "):
        number, _, word = part.partition(" ")
        out[{"errors": "error"}.get(word, word)] = int(number)
    return out


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["-q"],
        ["-qq"],
        ["-v"],
        ["-n", "2"],
        ["--reruns", "1"],
        ["-n", "2", "--reruns", "1", "--continue-on-collection-errors"],
    ],
    ids=["default", "q", "qq", "v", "xdist", "rerunfailures", "xdist-rerunfailures-collect"],
)
def test_records_agree_with_pytest(project: Project, args: list[str]) -> None:
    project.write("tests/test_mixed.py", MIXED)
    project.write(
        "tests/test_module_skip.py",
        "import pytest\n\npytest.skip('not here', allow_module_level=True)\n",
    )
    if "--continue-on-collection-errors" in args:
        project.write("tests/test_broken.py", "raise ImportError('cannot import thing')\n")
    plain = subprocess.run(
        [*PYTEST, *args], cwd=project.root, env=project.env(), capture_output=True, text=True
    )
    result = project.run("--reruns", "0", command=[*PYTEST, *args])
    assert result.returncode == plain.returncode == 1, result.stdout + result.stderr
    attempt = result.report["attempts"][0]
    assert attempt["disagreements"] == []
    if args != ["-qq"]:  # -qq prints no summary line to compare with by eye
        assert attempt["pytest_summary"] == summary_counts(plain.stdout)
    # test_fail, the call before a teardown error, the subtest and its test's body.
    assert attempt["pytest_summary"]["failed"] == 4
    assert "disagree" not in result.stdout + result.stderr
    summary = (result.report_dir / "summary.md").read_text(encoding="utf-8")
    assert "[!WARNING]" not in summary
    # A retried run's teardown error (pytest-rerunfailures' "rerun") is still an error.
    teardown = result.test("tests/test_mixed.py::test_fail_and_teardown_error")["attempts"]
    assert {a["outcome"] for a in teardown} == {"error"}
    assert len(teardown) == (2 if "--reruns" in args else 1)


def test_without_a_terminal_reporter_nothing_is_compared(project: Project) -> None:
    project.write("tests/test_mixed.py", MIXED)
    result = project.run("--reruns", "0", command=[*PYTEST, "-p", "no:terminal"])
    assert result.returncode == 1
    attempt = result.report["attempts"][0]
    assert attempt["pytest_summary"] is None
    assert attempt["disagreements"] == []
    assert "disagree" not in result.stdout + result.stderr


def test_a_report_hidden_from_flakewarden_is_a_loud_disagreement(project: Project) -> None:
    project.write("tests/conftest.py", HIDING_CONFTEST)
    project.write(
        "tests/test_h.py",
        """
        def test_seen():
            pass

        def test_hidden():
            assert False, "pytest saw this fail"
        """,
    )
    plain = subprocess.run(
        PYTEST, cwd=project.root, env=project.env(), capture_output=True, text=True
    )
    assert plain.returncode == 1
    assert "1 failed, 1 passed" in plain.stdout

    result = project.run("--reruns", "0")
    # flakewarden never recorded the failure, but pytest counted it: the run is not green.
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.outcomes == {"tests/test_h.py::test_seen": "passed"}
    warnings = [ln for ln in result.stdout.splitlines() if "disagree" in ln]
    assert warnings == [
        "flakewarden: warning: attempt 1: flakewarden's records disagree with pytest's own "
        "summary (failed: pytest 1, flakewarden 0; pytest failed 1 test(s) that flakewarden "
        "did not: tests/test_h.py::test_hidden (not recorded)); the report may be missing "
        "what pytest saw"
    ]
    attempt = result.report["attempts"][0]
    assert attempt["pytest_summary"] == {"failed": 1, "passed": 1}
    assert attempt["disagreements"] == [
        "failed: pytest 1, flakewarden 0",
        "pytest failed 1 test(s) that flakewarden did not: tests/test_h.py::test_hidden "
        "(not recorded)",
    ]
    summary = (result.report_dir / "summary.md").read_text(encoding="utf-8")
    assert "> [!WARNING]" in summary
    assert "> - Attempt 1: failed: pytest 1, flakewarden 0; pytest failed 1 test(s)" in summary
    assert "tests/test\\_h.py:\\:test\\_hidden (not recorded)" in summary


def test_the_disagreement_is_one_escaped_annotation_on_github(project: Project) -> None:
    project.write("tests/conftest.py", HIDING_CONFTEST)
    project.write(
        "tests/test_h.py",
        """
        import pytest

        @pytest.mark.parametrize("v", ["a\\n::error::forged"])
        def test_hidden(v):
            assert False
        """,
    )
    result = project.run("--reruns", "0", env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 1
    # After the tests' output is unfenced: a real warning annotation, escaped onto one line.
    commands = parse_commands(result.stdout)
    ours = [c for c in commands if c[1].get("title") == "flakewarden: records disagree with pytest"]
    assert len(ours) == 1
    kind, _properties, message = ours[0]
    assert kind == "warning"
    assert message.startswith("attempt 1: flakewarden's records disagree with pytest's own")
    assert "test_hidden[a\\n::error::forged] (not recorded)" in message
    assert not [c for c in commands if c[0] == "error" and c[2] == "forged"]
    # The console line during the run says it too, on one line.
    assert any(
        line.startswith("flakewarden: warning: attempt 1: flakewarden's records disagree")
        for line in result.stdout.splitlines()
    )


def test_the_counts_kept_while_reading_equals_counting_at_the_end(
    project: Project, tmp_path: Path
) -> None:
    """Counted batch by batch as the records arrive, or all at once: the same counts."""
    project.write("tests/test_mixed.py", MIXED)
    result = project.run("--reruns", "0")
    data = (result.report_dir / "attempts" / "1" / "results.jsonl").read_bytes()
    whole = recorded_counts(read_results(result.report_dir / "attempts" / "1" / "results.jsonl"))
    # 8 tests, one of them both failed and an error; its 3 subtests: i=1 alone fails.
    assert sum(whole[0].values()) == 9 and whole[1] == {"passed": 2, "failed": 1}

    growing = tmp_path / "results.jsonl"
    counts = SummaryCounts()
    reader = RecordReader(growing, counts.update)
    batches = 0
    with open(growing, "wb") as stream:
        for start in range(0, len(data), 97):  # cuts inside lines: whole lines are taken
            stream.write(data[start : start + 97])
            stream.flush()
            before = len(reader.results.tests)
            reader.read_available()
            batches += len(reader.results.tests) > before
    results = reader.finish()
    assert batches > 3
    assert counts.counts(results) == whole

    # Records dropped (a timed-out test's) replace the list: counted afresh.
    dropped = results.tests[-1]
    results.tests = results.tests[:-1]
    assert counts.counts(results) == recorded_counts(results) != whole
    results.tests.append(dropped)
    assert counts.counts(results) == whole


def test_a_failure_hidden_in_a_continuation_after_a_crash_is_still_caught(
    project: Project,
) -> None:
    """The crashed process leaves no counts of pytest's; the continuation's own are compared.

    Without that, the run below said only that the hidden test "never ran after the
    crash", though the continuation's pytest ran it and counted it failed.
    """
    project.write("tests/conftest.py", HIDING_CONFTEST)
    project.write(
        "tests/test_c.py",
        """
        import os
        import signal
        from pathlib import Path

        COUNTER = Path(__file__).parent / ".crashed"


        def test_a_crashes_once():
            if not COUNTER.exists():
                COUNTER.write_text("1")
                os.kill(os.getpid(), signal.SIGKILL)


        def test_hidden():
            assert False, "pytest saw this fail"


        def test_z_ok():
            pass
        """,
    )
    result = project.run("--reruns", "1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.outcomes == {
        "tests/test_c.py::test_a_crashes_once": "flaky",
        "tests/test_c.py::test_z_ok": "passed",
    }
    attempt = result.report["attempts"][0]
    assert len(attempt["continuations"]) == 1
    assert attempt["disagreements"] == [
        "continuation 1: failed: pytest 1, flakewarden 0",
        "continuation 1: pytest failed 1 test(s) that flakewarden did not: "
        "tests/test_c.py::test_hidden (not recorded)",
    ]
    warnings = [ln for ln in result.stdout.splitlines() if "disagree" in ln]
    assert len(warnings) == 1 and warnings[0].startswith(
        "flakewarden: warning: attempt 1: flakewarden's records disagree with pytest's own"
    )
    summary = (result.report_dir / "summary.md").read_text(encoding="utf-8")
    assert "> - Attempt 1: continuation 1: failed: pytest 1, flakewarden 0" in summary
