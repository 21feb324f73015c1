"""Subtests end to end: pytest 9's ``subtests`` fixture, ``TestCase.subTest``, pytest-subtests.

A failing subtest must fail its test's attempt (a ``TestCase`` method's call is
reported as passed even then), be listed with its outcome and message in every
report, make the test ``flaky`` when it passes on a rerun, and appear in JUnit
with the shape pytest's own ``--junitxml`` gives it.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from helpers.project import FLAKY_TEMPLATE, PYTEST, Project

from flakewarden.reports.annotations import plan_annotations
from flakewarden.reports.junit import CHILD_ORDER, split_node_id
from flakewarden.reports.report_json import read_report

ROOT = Path(__file__).resolve().parents[2]

UNITTEST_FAILING = """
import unittest


class T(unittest.TestCase):
    def test_sub(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertNotEqual(i, 1, "one is bad")
"""

FIXTURE_FAILING = """
def test_fixture(subtests):
    for i in range(3):
        with subtests.test(msg="custom", i=i):
            assert i != 2, "two is bad"
"""

UNITTEST_FLAKY = (
    FLAKY_TEMPLATE.format(name="u")
    + """
import unittest


class T(unittest.TestCase):
    def test_sub(self):
        first = bump() == 1
        for i in range(3):
            with self.subTest(i=i):
                self.assertFalse(first and i == 1, "lost the race")
"""
)

FIXTURE_FLAKY = (
    FLAKY_TEMPLATE.format(name="f")
    + """

def test_fixture(subtests):
    first = bump() == 1
    for name in ("alpha", "beta"):
        with subtests.test(msg=name):
            assert not (first and name == "beta"), "beta flaked"
"""
)


def subtests_of(attempt: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s["description"], s["outcome"]) for s in attempt.get("subtests", [])]


def test_failing_unittest_subtest_fails_the_test_and_the_run(project: Project) -> None:
    """The new user's report: pytest said SUBFAILED and exit 1; flakewarden said passed, 0."""
    project.write("tests/test_s.py", UNITTEST_FAILING)
    plain = subprocess.run(
        [*PYTEST, "tests"], cwd=project.root, env=project.env(), capture_output=True, text=True
    )
    assert plain.returncode == 1
    assert "SUBFAILED(i=1) tests/test_s.py::T::test_sub" in plain.stdout

    result = project.run("--reruns", "1")
    assert result.returncode == 1, result.stdout + result.stderr
    test = result.test("tests/test_s.py::T::test_sub")
    assert test["outcome"] == "failed"
    assert [a["outcome"] for a in test["attempts"]] == ["failed", "failed"]
    first = test["attempts"][0]
    assert first["phase"] == "call"
    assert first["message"] == "subtest (i=1) failed: AssertionError: 1 == 1 : one is bad"
    assert subtests_of(first) == [("(i=0)", "passed"), ("(i=1)", "failed"), ("(i=2)", "passed")]
    failed_sub = first["subtests"][1]
    assert failed_sub["message"] == "AssertionError: 1 == 1 : one is bad"
    assert "self.assertNotEqual(i, 1" in failed_sub["longrepr"]
    assert "SUBFAILED (i=1)" in first["longrepr"]
    assert result.report["totals"]["failed"] == 1


def test_failing_fixture_subtest_names_the_subtest(project: Project) -> None:
    project.write("tests/test_f.py", FIXTURE_FAILING)
    result = project.run("--reruns", "0")
    assert result.returncode == 1
    first = result.test("tests/test_f.py::test_fixture")["attempts"][0]
    assert first["outcome"] == "failed"
    # The subtest, not pytest's "contains 1 failed subtest", is what a reader sees first.
    assert first["message"] == "subtest [custom] (i=2) failed: AssertionError: two is bad"
    assert "contains 1 failed subtest" in first["longrepr"]
    assert subtests_of(first)[-1] == ("[custom] (i=2)", "failed")


@pytest.mark.parametrize(
    ("source", "test_id", "description"),
    [
        (UNITTEST_FLAKY, "tests/test_u.py::T::test_sub", "(i=1)"),
        (FIXTURE_FLAKY, "tests/test_f.py::test_fixture", "[beta]"),
    ],
    ids=["unittest", "fixture"],
)
def test_subtest_that_fails_then_passes_is_flaky_and_named(
    project: Project, source: str, test_id: str, description: str
) -> None:
    project.write(f"tests/{test_id.split('::')[0].split('/')[1]}", source)
    result = project.run()
    assert result.returncode == 0, result.stdout + result.stderr
    test = result.test(test_id)
    assert test["outcome"] == "flaky"
    failed, passed = test["attempts"]
    assert (failed["outcome"], passed["outcome"]) == ("failed", "passed")
    assert (description, "failed") in subtests_of(failed)
    assert (description, "passed") in subtests_of(passed)
    assert f"subtest {description} failed" in failed["message"]

    summary = (result.report_dir / "summary.md").read_text(encoding="utf-8")
    escaped = description.replace("[", "\\[").replace("]", "\\]")
    assert f"| {escaped} | failed, passed |" in summary

    report = read_report(result.report_dir)
    (annotation,) = plan_annotations(report).annotations
    assert annotation.title == f"Flaky test: {test_id}"
    assert f"subtest {description} failed" in annotation.message
    assert f"{description} failed, passed" in annotation.message

    junit = ET.parse(result.report_dir / "junit.xml").getroot()
    named = split_node_id(test_id)
    (case,) = [c for c in junit.iter("testcase") if (c.get("classname"), c.get("name")) == named]
    flaky = case.findall("flakyFailure")
    assert [f.get("message", "").split(":")[0] for f in flaky][:1] == [description]
    assert case.find("failure") is None and case.find("error") is None


def _result_tags(junit: Path) -> dict[tuple[str, str], list[str]]:
    """Per (classname, name): the result elements pytest or flakewarden wrote, in order."""
    shapes: dict[tuple[str, str], list[str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        tags = shapes.setdefault(key, [])
        # pytest writes a teardown error as a second testcase of the same name.
        tags.extend(child.tag for child in case if child.tag not in ("system-out", "system-err"))
    return shapes


def test_junit_has_the_shape_pytest_junitxml_gives_subtests(project: Project) -> None:
    project.write("tests/test_s.py", UNITTEST_FAILING)
    project.write("tests/test_f.py", FIXTURE_FAILING)
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
    own = project.root / "pytest-junit.xml"
    subprocess.run(
        [*PYTEST, f"--junitxml={own}", "tests"],
        cwd=project.root,
        env=project.env(),
        capture_output=True,
        check=False,
    )
    theirs = _result_tags(own)
    assert theirs[("tests.test_f", "test_fixture")] == ["failure", "failure"]

    once = project.run("--reruns", "0")
    assert once.returncode == 1
    assert _result_tags(once.report_dir / "junit.xml") == theirs

    # Reruns add their own elements in the same shape, each where Surefire's schema puts
    # its kind (rerunFailure before error; a stable sort keeps each kind's own order).
    twice = project.run("--reruns", "1", report_dir="report2")
    ours = _result_tags(twice.report_dir / "junit.xml")
    for key, tags in theirs.items():
        rerun = [{"failure": "rerunFailure", "error": "rerunError"}[t] for t in tags]
        assert ours[key] == sorted(tags + rerun, key=CHILD_ORDER.__getitem__), key
    messages = [
        f.get("message") for f in ET.parse(twice.report_dir / "junit.xml").getroot().iter("failure")
    ]
    assert "(i=1): AssertionError: 1 == 1 : one is bad" in messages
    assert "[custom] (i=2): AssertionError: two is bad" in messages


def test_subtests_that_all_pass_are_listed_and_the_test_passes(project: Project) -> None:
    project.write(
        "tests/test_ok.py",
        """
        def test_ok(subtests):
            for i in range(2):
                with subtests.test(i=i):
                    pass
        """,
    )
    result = project.run()
    assert result.returncode == 0
    (attempt,) = result.test("tests/test_ok.py::test_ok")["attempts"]
    assert attempt["outcome"] == "passed"
    assert subtests_of(attempt) == [("(i=0)", "passed"), ("(i=1)", "passed")]
    assert result.report["attempts"][0]["disagreements"] == []


def test_failing_subtest_under_xdist_fails_the_test(project: Project) -> None:
    project.write("tests/test_s.py", UNITTEST_FAILING)
    project.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    result = project.run("--reruns", "0", command=[*PYTEST, "-n", "2"])
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.outcomes == {
        "tests/test_s.py::T::test_sub": "failed",
        "tests/test_ok.py::test_ok": "passed",
    }
    first = result.test("tests/test_s.py::T::test_sub")["attempts"][0]
    failing = [d for d, outcome in subtests_of(first) if outcome == "failed"]
    assert len(failing) == 1
    # Through xdist pytest itself names it (i='1'): the description is pytest's own.
    assert f"SUBFAILED{failing[0]} tests/test_s.py::T::test_sub" in result.stdout


# --- pytest-subtests on an older pytest ------------------------------------------------------

OLD_PYTEST = ("pytest==8.3.5", "pytest-subtests==0.15.0")


@pytest.fixture(scope="module")
def old_pytest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with pytest 8.3 and the pytest-subtests plugin.

    A download that fails fails the tests that need it, as everywhere in this suite: a
    skip would turn a broken registry into a green run that tested nothing.
    """
    sys.path.insert(0, str(ROOT / "benchmarks" / "realworld"))
    try:
        import sdist  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    try:
        return Path(sdist.make_venv(tmp_path_factory.mktemp("old") / "venv", list(OLD_PYTEST)))
    except sdist.FetchError as exc:
        pytest.fail(f"cannot install {' '.join(OLD_PYTEST)}: {exc}")


def test_pytest_subtests_plugin_on_pytest_8(project: Project, old_pytest: Path) -> None:
    project.write("tests/test_s.py", UNITTEST_FAILING)
    project.write("tests/test_f.py", FIXTURE_FLAKY)
    command = [str(old_pytest), "-m", "pytest"]
    plain = subprocess.run(
        [*command, "tests"], cwd=project.root, env=project.env(), capture_output=True, text=True
    )
    assert "pytest-8.3.5" in plain.stdout and "subtests-0.15.0" in plain.stdout
    assert "SUBFAIL" in plain.stdout
    (project.root / "tests" / ".counter-f").unlink()

    result = project.run(command=command)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.outcomes == {
        "tests/test_s.py::T::test_sub": "failed",
        "tests/test_f.py::test_fixture": "flaky",
    }
    unittest_first = result.test("tests/test_s.py::T::test_sub")["attempts"][0]
    assert ("(i=1)", "failed") in subtests_of(unittest_first)
    flaky = result.test("tests/test_f.py::test_fixture")["attempts"]
    assert ("[beta]", "failed") in subtests_of(flaky[0])
    assert ("[beta]", "passed") in subtests_of(flaky[1])
    # pytest-subtests counts subtests in its own summary categories; they agree with ours.
    first = result.report["attempts"][0]
    assert first["pytest_summary"]["subtests passed"] == 3
    assert first["disagreements"] == []
