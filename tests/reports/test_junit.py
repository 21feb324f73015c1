"""The merged JUnit report as ElementTree and junitparser read it; the safe streaming reader."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tracemalloc
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable, Optional

import pytest
from helpers.report_builders import run_report
from junit_checks import assert_schema_valid, junitparser_outcomes
from junitparser import xunit2

from flakewarden.errors import ReportError
from flakewarden.model import AttemptOutcome, AttemptResult, Outcome, RunReport, Subtest, TestResult
from flakewarden.reports.junit import split_node_id, write_junit, xml_safe
from flakewarden.reports.junit_read import JUnitCase, JUnitRun, iter_junit_cases

TRACE = (
    "def test_x():\n>       assert 1 == 2\nE       assert 1 == 2\n\n"
    "tests/test_a.py:2: AssertionError"
)


def passed(attempt: int = 1, duration: float = 0.5) -> AttemptResult:
    return AttemptResult(attempt=attempt, outcome=AttemptOutcome.PASSED, duration=duration)


def failed(
    attempt: int = 1,
    *,
    phase: str = "call",
    message: str = "assert 1 == 2",
    longrepr: str = TRACE,
    stdout: str = "",
    stderr: str = "",
    duration: float = 0.5,
) -> AttemptResult:
    outcome = AttemptOutcome.FAILED if phase == "call" else AttemptOutcome.ERROR
    return AttemptResult(
        attempt=attempt,
        outcome=outcome,
        duration=duration,
        phase=phase,
        message=message,
        longrepr=longrepr,
        stdout=stdout,
        stderr=stderr,
    )


def result(
    node_id: str,
    outcome: Outcome,
    *attempts: AttemptResult,
    line: Optional[int] = 7,
) -> TestResult:
    return TestResult(
        id=node_id,
        file=node_id.split("::")[0],
        line=line,
        outcome=outcome,
        attempts=list(attempts),
    )


def report(*tests: TestResult, duration: float = 12.5) -> RunReport:
    return run_report(
        tests,
        rootdir="/project",
        exit_code=1,
        started_at="2024-05-01T10:00:00+00:00",
        finished_at="2024-05-01T10:00:12+00:00",
        duration=duration,
        version="9.8.7",
        reruns=2,
    )


def every_outcome() -> RunReport:
    return report(
        result("tests/test_a.py::test_ok", Outcome.PASSED, passed(duration=0.125)),
        result(
            "tests/test_a.py::TestFlaky::test_flaky",
            Outcome.FLAKY,
            failed(1, message="ValueError: first", stdout="out 1", stderr="err 1"),
            failed(2, phase="setup", message="OSError: port in use", longrepr="setup trace"),
            passed(3, duration=0.75),
        ),
        result(
            "tests/test_a.py::test_broken",
            Outcome.FAILED,
            failed(1, message="KeyError: 'a'", stdout="first out", duration=0.1),
            failed(
                2, message="KeyError: 'b'", longrepr="trace 2", stderr="rerun err", duration=0.2
            ),
            failed(3, message="KeyError: 'c'", longrepr="trace 3", duration=0.3),
        ),
        result(
            "tests/test_a.py::test_fixture",
            Outcome.ERROR,
            failed(1, phase="setup", message="RuntimeError: no db", longrepr="db trace 1"),
            failed(2, phase="teardown", message="RuntimeError: leak", longrepr="leak trace"),
        ),
        result(
            "tests/test_a.py::test_mixed",
            Outcome.FAILED,
            failed(1, phase="setup", message="RuntimeError: setup"),
            failed(2, message="AssertionError: call"),
        ),
        result(
            "tests/test_a.py::test_skip",
            Outcome.SKIPPED,
            AttemptResult(1, AttemptOutcome.SKIPPED, 0.0, message="needs linux"),
        ),
        result(
            "tests/test_a.py::test_quarantined",
            Outcome.QUARANTINED,
            failed(1, message="TimeoutError: slow", longrepr="slow trace 1", stdout="q out"),
            failed(2, message="TimeoutError: slower", longrepr="slow trace 2", duration=2.0),
        ),
    )


def write(tmp_path: Path, run: RunReport) -> Path:
    """Write ``run``'s junit.xml; every file written here is schema-valid and junitparser
    reads one testcase per test from it."""
    path = tmp_path / "report" / "junit.xml"
    write_junit(run, path)
    assert_schema_valid(path)
    assert len(junitparser_outcomes(path)) == len({split_node_id(t.id) for t in run.tests})
    return path


def cases_by_name(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    return {c.get("name", ""): c for c in root.iter("testcase")}


def tags(element: ET.Element) -> list[str]:
    return [child.tag for child in element]


# --- names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node_id", "classname", "name"),
    [
        ("tests/test_a.py::test_f", "tests.test_a", "test_f"),
        ("tests/a/test_b.py::TestX::TestY::test_f", "tests.a.test_b.TestX.TestY", "test_f"),
        ("test_c.py::test_p[a::b-[x]]", "test_c", "test_p[a::b-[x]]"),
        ("tests/test_d.py::TestZ::test_p[1/2 'q' é]", "tests.test_d.TestZ", "test_p[1/2 'q' é]"),
        ("tests/test_e.py", "", "tests.test_e"),
    ],
)
def test_split_node_id_matches_pytest(node_id: str, classname: str, name: str) -> None:
    assert split_node_id(node_id) == (classname, name)


def test_xml_safe_replaces_only_what_xml_cannot_hold() -> None:
    assert xml_safe("tab\tnl\ncr\ré ✓ 𝄞") == "tab\tnl\ncr\ré ✓ 𝄞"
    assert xml_safe("a\x00b\x1bc\x7f\ufffe\ud800") == "a#x00b#x1Bc\x7f#xFFFE#xD800"


# --- writing: what each outcome carries ----------------------------------------------------


def test_each_outcome_has_exactly_its_surefire_children(tmp_path: Path) -> None:
    cases = cases_by_name(write(tmp_path, every_outcome()))

    assert tags(cases["test_ok"]) == []

    flaky = cases["test_flaky"]
    assert tags(flaky) == ["flakyFailure", "flakyError"]
    first, second = flaky
    assert first.attrib == {"message": "ValueError: first", "type": "ValueError"}
    assert [(c.tag, c.text) for c in first] == [
        ("stackTrace", TRACE),
        ("system-out", "out 1"),
        ("system-err", "err 1"),
    ]
    assert second.attrib == {"message": "error in setup: OSError: port in use", "type": "OSError"}
    assert [(c.tag, c.text) for c in second] == [("stackTrace", "setup trace")]

    broken = cases["test_broken"]
    assert tags(broken) == ["failure", "rerunFailure", "rerunFailure", "system-out"]
    assert broken[0].attrib == {"message": "KeyError: 'a'", "type": "KeyError"}
    assert broken[0].text == TRACE
    assert [(c.tag, c.text) for c in broken[1]] == [
        ("stackTrace", "trace 2"),
        ("system-err", "rerun err"),
    ]
    assert broken[2].get("message") == "KeyError: 'c'"
    assert broken[3].text == "first out"  # attempt 1's output, as Surefire places it

    fixture = cases["test_fixture"]
    assert tags(fixture) == ["error", "rerunError"]
    assert fixture[0].get("message") == "error in setup: RuntimeError: no db"
    assert fixture[0].text == "db trace 1"
    assert fixture[1].get("message") == "error in teardown: RuntimeError: leak"

    # Surefire's schema orders a testcase's children: rerunFailure before error.
    assert tags(cases["test_mixed"]) == ["rerunFailure", "error"]

    skip = cases["test_skip"]
    assert tags(skip) == ["skipped"]
    assert skip[0].get("message") == "needs linux"

    quarantined = cases["test_quarantined"]
    assert tags(quarantined) == ["skipped", "system-out"]
    assert quarantined[0].get("message") == "quarantined: TimeoutError: slow"
    detail = quarantined[1].text or ""
    assert "attempt 1: failed in call: TimeoutError: slow\nslow trace 1" in detail
    assert "--- captured stdout ---\nq out" in detail
    assert "attempt 2: failed in call: TimeoutError: slower\nslow trace 2" in detail


def test_testcase_attributes(tmp_path: Path) -> None:
    cases = cases_by_name(write(tmp_path, every_outcome()))
    # Only what both schemas allow on a testcase; the rest is in the suite's properties.
    assert cases["test_flaky"].attrib == {
        "classname": "tests.test_a.TestFlaky",
        "name": "test_flaky",
        "time": "0.750",  # the final attempt, not the sum
    }
    assert cases["test_broken"].get("time") == "0.300"
    assert cases["test_ok"].get("time") == "0.125"
    # Read back, each testcase has its node id, file and line again.
    read = {c.name: c for c in iter_junit_cases(tmp_path / "report" / "junit.xml")}
    flaky = read["test_flaky"]
    assert (flaky.nodeid, flaky.file, flaky.line) == (
        "tests/test_a.py::TestFlaky::test_flaky",
        "tests/test_a.py",
        7,
    )
    # The xunit1 file: pytest's attributes, for consumers that annotate from them.
    write_junit(every_outcome(), tmp_path / "xunit1.xml", xunit1=True)
    xunit1 = {c.get("name"): c for c in ET.parse(tmp_path / "xunit1.xml").iter("testcase")}
    assert xunit1["test_flaky"].attrib == {
        "classname": "tests.test_a.TestFlaky",
        "name": "test_flaky",
        "file": "tests/test_a.py",
        "line": "7",
        "time": "0.750",
        "nodeid": "tests/test_a.py::TestFlaky::test_flaky",
    }
    assert not [
        p
        for p in ET.parse(tmp_path / "xunit1.xml").iter("property")
        if p.get("name") == "flakewarden.testcase"
    ]


def test_missing_line_and_file_are_left_out(tmp_path: Path) -> None:
    test = TestResult("test_x.py::test_y", "", None, Outcome.PASSED, [passed()])
    (case,) = cases_by_name(write(tmp_path, report(test))).values()
    assert "file" not in case.attrib
    assert "line" not in case.attrib


def test_a_failure_without_attempts_is_never_a_pass(tmp_path: Path) -> None:
    run = report(
        result("t.py::test_f", Outcome.FAILED),
        result("t.py::test_e", Outcome.ERROR),
    )
    cases = cases_by_name(write(tmp_path, run))
    assert tags(cases["test_f"]) == ["failure"]
    assert tags(cases["test_e"]) == ["error"]
    assert cases["test_f"].get("time") == "0.000"


def test_totals_and_properties(tmp_path: Path) -> None:
    root = ET.parse(write(tmp_path, every_outcome())).getroot()
    expected = {
        "tests": "7",
        "failures": "1",  # test_broken; test_mixed's first attempt was a setup error
        "errors": "2",  # test_fixture, test_mixed
        "skipped": "2",  # test_skip, test_quarantined
        "time": "12.500",
    }
    (suite,) = root.findall("testsuite")
    assert root.tag == "testsuites"
    assert {k: suite.get(k) for k in expected} == expected
    # junit-10.xsd has no "skipped" on <testsuites>; Surefire's none of "timestamp".
    del expected["skipped"]
    assert root.attrib == {"name": "flakewarden", **expected}
    assert "timestamp" not in suite.attrib
    named = [(p.get("name"), p.get("value")) for p in suite.iter("property")]
    assert dict(named[:5]) == {
        "flakewarden.version": "9.8.7",
        "flakewarden.started_at": "2024-05-01T10:00:00+00:00",
        "flakewarden.runner.reruns": "2",
        "flakewarden.flaky": "1",
        "flakewarden.quarantined": "1",
    }
    # One per testcase, in their order: the node id, file and line no schema has room for.
    located = [json.loads(value or "") for name, value in named[5:]]
    assert {name for name, _ in named[5:]} == {"flakewarden.testcase"}
    assert [t["nodeid"] for t in located] == [t.id for t in every_outcome().tests]
    # The counts agree with the elements actually written.
    cases = list(suite.iter("testcase"))
    assert len(cases) == 7
    assert sum(c.find("failure") is not None for c in cases) == 1
    assert sum(c.find("error") is not None for c in cases) == 2
    assert sum(c.find("skipped") is not None for c in cases) == 2


def test_empty_run(tmp_path: Path) -> None:
    root = ET.parse(write(tmp_path, report(duration=0.0))).getroot()
    assert root.get("tests") == "0"
    assert root.findall("testsuite/testcase") == []


def test_junitparser_reads_the_report(tmp_path: Path) -> None:
    xml = xunit2.JUnitXml.fromfile(str(write(tmp_path, every_outcome())))
    (suite,) = list(xml)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (7, 1, 2, 2)
    cases = {c.name: c for c in suite}

    flaky = cases["test_flaky"]
    assert flaky.is_flaky and not flaky.is_rerun and flaky.is_passed
    (flaky_failure,) = flaky.flaky_failures()
    assert flaky_failure.message == "ValueError: first"
    assert flaky_failure.type == "ValueError"
    assert flaky_failure.stack_trace == TRACE
    assert flaky_failure.system_out == "out 1"
    assert flaky_failure.system_err == "err 1"
    assert [e.message for e in flaky.flaky_errors()] == ["error in setup: OSError: port in use"]

    broken = cases["test_broken"]
    assert broken.is_failure and broken.is_rerun
    assert [r.message for r in broken.rerun_failures()] == ["KeyError: 'b'", "KeyError: 'c'"]
    assert broken.rerun_failures()[0].stack_trace == "trace 2"
    assert broken.system_out == "first out"

    assert cases["test_fixture"].is_error
    assert len(cases["test_fixture"].rerun_errors()) == 1
    assert cases["test_ok"].is_passed and not cases["test_ok"].is_flaky
    assert cases["test_skip"].is_skipped
    assert cases["test_quarantined"].is_skipped
    assert cases["test_quarantined"].classname == "tests.test_a"
    assert cases["test_ok"].time == 0.125


HOSTILE = "<tag attr=\"v\"> & 'q' ]]> <![CDATA[x]]> \x00\x08\x0b\x1b[0m \ud83d é 中文 🙂 \r\n\t"


def test_hostile_text_is_escaped_and_the_file_parses(tmp_path: Path) -> None:
    node_id = f"tests/test_h.py::test_h[{HOSTILE}]"
    attempt = failed(
        1, message=f"ValueError: {HOSTILE}", longrepr=HOSTILE, stdout=HOSTILE, stderr=HOSTILE
    )
    run = report(
        result(node_id, Outcome.FLAKY, attempt, passed(2)),
        result(node_id + "2", Outcome.FAILED, attempt, failed(2, longrepr=HOSTILE)),
        result(node_id + "3", Outcome.QUARANTINED, attempt),
    )
    path = write(tmp_path, run)
    raw = path.read_bytes()
    assert b"\x00" not in raw and b"\x1b" not in raw
    assert b"<![CDATA[" not in raw and b"]]>" not in raw
    raw.decode("utf-8")  # a lone surrogate would not have encoded

    safe = xml_safe(HOSTILE)
    assert "#x00#x08#x0B#x1B[0m #xD83D é 中文 🙂" in safe
    root = ET.parse(path).getroot()
    flaky, fail, quarantined = root.iter("testcase")
    assert flaky.get("name") == f"test_h[{safe}]"
    # The node id, kept as JSON in a property, reads back whole: control characters travel
    # as JSON escapes; only the lone surrogate, which no UTF-8 file can hold, is replaced.
    read = list(iter_junit_cases(path))
    assert read[0].nodeid == node_id.replace("\ud83d", "#xD83D")
    assert flaky[0].get("message") == f"ValueError: {safe}"
    # Text content: XML normalises a bare CR to LF, nothing else changes.
    text_safe = safe.replace("\r\n", "\n")
    assert [c.text for c in flaky[0]] == [text_safe] * 3
    assert fail[0].text == text_safe
    assert quarantined[0].get("message") == f"quarantined: ValueError: {safe}"

    xml = xunit2.JUnitXml.fromfile(str(path))
    (suite,) = list(xml)
    names = [c.name for c in suite]
    assert names == [f"test_h[{safe}]", f"test_h[{safe}]2", f"test_h[{safe}]3"]


# --- reading -------------------------------------------------------------------------------


def test_round_trip_through_the_reader(tmp_path: Path) -> None:
    cases = {c.name: c for c in iter_junit_cases(write(tmp_path, every_outcome()))}
    assert {name: c.outcome for name, c in cases.items()} == {
        "test_ok": Outcome.PASSED,
        "test_flaky": Outcome.FLAKY,
        "test_broken": Outcome.FAILED,
        "test_fixture": Outcome.ERROR,
        "test_mixed": Outcome.ERROR,
        "test_skip": Outcome.SKIPPED,
        "test_quarantined": Outcome.QUARANTINED,
    }
    assert cases["test_flaky"] == JUnitCase(
        classname="tests.test_a.TestFlaky",
        name="test_flaky",
        file="tests/test_a.py",
        line=7,
        time=0.75,
        outcome=Outcome.FLAKY,
        message="ValueError: first",
        text=TRACE,
        nodeid="tests/test_a.py::TestFlaky::test_flaky",
        runs=(
            JUnitRun(Outcome.FAILED, "ValueError: first", TRACE, "out 1", "err 1"),
            JUnitRun(Outcome.ERROR, "error in setup: OSError: port in use", "setup trace"),
            JUnitRun(Outcome.PASSED, "", ""),
        ),
        suite="flakewarden",
    )
    # Every attempt is a run again: the first failure, then each rerun.
    broken = cases["test_broken"].runs
    assert [(r.outcome, r.message) for r in broken] == [
        (Outcome.FAILED, "KeyError: 'a'"),
        (Outcome.FAILED, "KeyError: 'b'"),
        (Outcome.FAILED, "KeyError: 'c'"),
    ]
    assert cases["test_broken"].message == "KeyError: 'a'"
    assert cases["test_broken"].text == TRACE
    assert cases["test_skip"].message == "needs linux"
    assert cases["test_ok"].message == cases["test_ok"].text == ""


def test_round_trip_keeps_hostile_ids_readable(tmp_path: Path) -> None:
    node_id = "tests/test_h.py::test_h[a::b 'q' \"d\" <x> & é]"
    path = write(tmp_path, report(result(node_id, Outcome.PASSED, passed())))
    (case,) = iter_junit_cases(path)
    assert case.nodeid == node_id
    assert (case.classname, case.name) == split_node_id(node_id)


def write_text(tmp_path: Path, text: str, name: str = "junit.xml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def test_reads_a_testsuite_root_nested_suites_and_surefire_reruns(tmp_path: Path) -> None:
    path = write_text(
        tmp_path,
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <testsuite name="outer" tests="5">
          <properties><property name="p" value="v"/></properties>
          <testcase classname="a.B" name="plain" time="1.5"/>
          <testsuite name="inner">
            <testsuite name="innermost">
              <testcase classname="a.C" name="flaky" time="0.2">
                <flakyError message="setup boom" type="E"><stackTrace>st1</stackTrace></flakyError>
                <flakyFailure message="boom" type="AssertionError">
                  <stackTrace>st2</stackTrace>
                </flakyFailure>
              </testcase>
            </testsuite>
            <testcase classname="a.C" name="reruns" time="bad">
              <failure message="first" type="X">trace one</failure>
              <rerunFailure message="second" type="X"><stackTrace>two</stackTrace></rerunFailure>
            </testcase>
          </testsuite>
          <testcase name="only_rerun"><rerunError message="e"/></testcase>
          <testcase name="xfail">
            <skipped type="pytest.xfail" message="known">why</skipped>
          </testcase>
          <system-out>suite output</system-out>
        </testsuite>
        """,
    )
    cases = list(iter_junit_cases(path))
    assert [(c.name, c.outcome, c.message, c.text) for c in cases] == [
        ("plain", Outcome.PASSED, "", ""),
        ("flaky", Outcome.FLAKY, "setup boom", "st1"),  # the first failed attempt
        ("reruns", Outcome.FAILED, "first", "trace one"),
        ("only_rerun", Outcome.ERROR, "e", ""),
        ("xfail", Outcome.SKIPPED, "known", "why"),
    ]
    assert cases[0].time == 1.5 and cases[0].classname == "a.B"
    assert cases[2].time == 0.0  # an unreadable time is not an error
    assert cases[0].file == "" and cases[0].line is None


def test_reads_namespaced_and_windows_1252_files(tmp_path: Path) -> None:
    path = tmp_path / "ns.xml"
    path.write_bytes(
        b'<?xml version="1.0" encoding="ISO-8859-1"?>\n'
        b'<testsuites xmlns="urn:x"><testsuite><testcase name="caf\xe9">'
        b'<failure message="m"/></testcase></testsuite></testsuites>'
    )
    (case,) = iter_junit_cases(path)
    assert (case.name, case.outcome) == ("café", Outcome.FAILED)


def test_a_doctype_without_entities_is_accepted(tmp_path: Path) -> None:
    path = write_text(
        tmp_path, '<!DOCTYPE testsuites>\n<testsuites><testcase name="a"/></testsuites>'
    )
    assert [c.name for c in iter_junit_cases(path)] == ["a"]


BILLION_LAUGHS = """
<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<testsuites><testsuite>
  <testcase name="&lol9;"><failure message="&lol9;"/></testcase>
</testsuite></testsuites>
"""


def test_billion_laughs_is_refused(tmp_path: Path) -> None:
    path = write_text(tmp_path, BILLION_LAUGHS, "lolz.xml")
    with pytest.raises(ReportError, match=r"lolz\.xml: refusing .* declares the entity 'lol'"):
        list(iter_junit_cases(path))


def test_external_entity_is_refused_and_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET", encoding="utf-8")
    path = write_text(
        tmp_path,
        f"""
        <?xml version="1.0"?>
        <!DOCTYPE testsuites [<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>
        <testsuites><testsuite><testcase name="&xxe;"/></testsuite></testsuites>
        """,
        "xxe.xml",
    )
    with pytest.raises(ReportError, match=r"xxe\.xml: refusing .* entity 'xxe'") as caught:
        list(iter_junit_cases(path))
    assert "TOP-SECRET" not in str(caught.value)


@pytest.mark.parametrize(
    "doctype",
    [
        '<!DOCTYPE testsuites SYSTEM "http://127.0.0.1:9/evil.dtd">',
        '<!DOCTYPE testsuites PUBLIC "-//X//Y" "http://127.0.0.1:9/evil.dtd">',
        '<!DOCTYPE testsuites [<!ENTITY % p SYSTEM "http://127.0.0.1:9/p.dtd"> %p;]>',
        '<!DOCTYPE testsuites [<!ENTITY u SYSTEM "http://127.0.0.1:9/u" NDATA png>]>',
    ],
)
def test_external_dtds_and_parameter_entities_are_refused(tmp_path: Path, doctype: str) -> None:
    path = write_text(tmp_path, f'{doctype}\n<testsuites><testcase name="a"/></testsuites>')
    with pytest.raises(ReportError, match=r"junit\.xml: refusing a JUnit file whose DOCTYPE"):
        list(iter_junit_cases(path))


def test_malformed_xml_names_the_file_and_line(tmp_path: Path) -> None:
    path = write_text(
        tmp_path,
        """
        <testsuites>
          <testsuite>
            <testcase name="a">
          </testsuite>
        </testsuites>
        """,
        "broken.xml",
    )
    with pytest.raises(ReportError, match=r"broken\.xml: malformed XML at line 4, column \d+"):
        list(iter_junit_cases(path))


def test_an_undeclared_entity_is_malformed_not_expanded(tmp_path: Path) -> None:
    path = write_text(tmp_path, '<testsuites><testcase name="&nope;"/></testsuites>')
    with pytest.raises(ReportError, match=r"malformed XML at line 1, column \d+: undefined entity"):
        list(iter_junit_cases(path))


def test_truncated_empty_missing_and_foreign_files(tmp_path: Path) -> None:
    truncated = write_text(tmp_path, '<testsuites><testsuite><testcase name="a"/>', "cut.xml")
    with pytest.raises(ReportError, match=r"cut\.xml: malformed XML at line 1"):
        list(iter_junit_cases(truncated))
    empty = write_text(tmp_path, "", "empty.xml")
    with pytest.raises(ReportError, match=r"empty\.xml: malformed XML at line 1"):
        list(iter_junit_cases(empty))
    with pytest.raises(ReportError, match=r"cannot read JUnit file .*missing\.xml"):
        list(iter_junit_cases(tmp_path / "missing.xml"))
    foreign = write_text(tmp_path, "<html><testcase name='a'/></html>", "page.xml")
    with pytest.raises(ReportError, match=r"page\.xml: not a JUnit XML file \(root element <html>"):
        list(iter_junit_cases(foreign))


def test_a_write_failure_is_a_report_error(tmp_path: Path) -> None:
    target = tmp_path / "junit.xml"
    target.mkdir()
    with pytest.raises(ReportError, match=r"cannot write the JUnit report .*junit\.xml"):
        write_junit(report(), target)


def test_reading_streams_instead_of_building_a_tree(tmp_path: Path) -> None:
    cases = "".join(
        f'<testcase classname="m.C" name="test_{i}" time="0.001">'
        f'<failure message="boom {i}">{"x" * 200}</failure></testcase>'
        for i in range(10_000)
    )
    path = write_text(tmp_path, f"<testsuites><testsuite>{cases}</testsuite></testsuites>")

    def peak(read: Callable[[], None]) -> int:
        tracemalloc.start()
        try:
            read()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    def stream() -> None:
        assert sum(1 for _ in iter_junit_cases(path)) == 10_000

    def tree() -> None:
        assert len(ET.parse(path).getroot().findall("testsuite/testcase")) == 10_000

    # Memory, not time: the streaming peak stays a small fraction of the full tree's.
    assert peak(stream) * 5 < peak(tree)


# --- a file written by real pytest -----------------------------------------------------------


def test_reads_what_real_pytest_writes(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_mix.py").write_text(
        textwrap.dedent(
            """
            import sys
            import pytest

            def test_pass():
                print("hello \\x1b[31m")

            def test_fail():
                assert 1 == 2, "<&> ]]> é"

            @pytest.mark.skip(reason="not today")
            def test_skip():
                pass

            @pytest.fixture
            def broken():
                raise RuntimeError("no db")

            def test_setup_error(broken):
                pass

            class TestGroup:
                @pytest.mark.parametrize("v", ["a::b", "x y", "é"])
                def test_param(self, v):
                    assert v
            """
        ),
        encoding="utf-8",
    )
    junit = tmp_path / "pytest-junit.xml"
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}", "-q"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr
    cases = {(c.classname, c.name): c for c in iter_junit_cases(junit)}
    assert {key: c.outcome for key, c in cases.items()} == {
        ("tests.test_mix", "test_pass"): Outcome.PASSED,
        ("tests.test_mix", "test_fail"): Outcome.FAILED,
        ("tests.test_mix", "test_skip"): Outcome.SKIPPED,
        ("tests.test_mix", "test_setup_error"): Outcome.ERROR,
        ("tests.test_mix.TestGroup", "test_param[a::b]"): Outcome.PASSED,
        ("tests.test_mix.TestGroup", "test_param[x y]"): Outcome.PASSED,
        ("tests.test_mix.TestGroup", "test_param[\\xe9]"): Outcome.PASSED,
    }
    failure = cases[("tests.test_mix", "test_fail")]
    assert failure.message.startswith("AssertionError: <&> ]]> é")
    assert "assert 1 == 2" in failure.text
    assert cases[("tests.test_mix", "test_skip")].message == "not today"
    # Our names agree with pytest's for the same node ids.
    assert split_node_id("tests/test_mix.py::TestGroup::test_param[x y]") == (
        "tests.test_mix.TestGroup",
        "test_param[x y]",
    )


# --- subtests ----------------------------------------------------------------------------------


def _sub(description: str, outcome: str, text: str = "") -> Subtest:
    return Subtest(description=description, outcome=outcome, duration=0.01, longrepr=text)


def _subtest_attempt(number: int, *subs: Subtest, own: str = "") -> AttemptResult:
    failing = [s for s in subs if s.failed]
    texts = [f"SUBFAILED {s.description}\n{s.longrepr}" for s in failing]
    phases = [("call", own)] if own else []
    return AttemptResult(
        attempt=number,
        outcome=AttemptOutcome.FAILED if failing or own else AttemptOutcome.PASSED,
        duration=0.1,
        phase="call" if failing or own else "",
        message=f"subtest {failing[0].description} failed" if failing else "",
        longrepr="\n\n".join([*texts, *([own] if own else [])]),
        subtests=list(subs),
        phase_failures=phases,
    )


def test_each_failed_subtest_is_its_own_element_under_every_tag(tmp_path: Path) -> None:
    bad = _sub("(i=1)", "failed", "E   ValueError: one")
    worse = _sub("[msg] (i=2)", "failed", "E   assert 2 != 2")
    rep = report(
        result(
            "t.py::test_flaky",
            Outcome.FLAKY,
            _subtest_attempt(1, _sub("(i=0)", "passed"), bad),
            _subtest_attempt(2, _sub("(i=0)", "passed"), _sub("(i=1)", "passed")),
        ),
        result(
            "t.py::test_failed",
            Outcome.FAILED,
            _subtest_attempt(1, bad, worse, own="contains 2 failed subtests"),
            _subtest_attempt(2, bad),
        ),
    )
    path = tmp_path / "junit.xml"
    write_junit(rep, path)
    cases = {c.get("name"): c for c in ET.parse(path).getroot().iter("testcase")}
    flaky = cases["test_flaky"]
    assert [(c.tag, c.get("message"), c.get("type")) for c in flaky] == [
        ("flakyFailure", "(i=1): ValueError: one", "ValueError")
    ]
    assert flaky.find("flakyFailure/stackTrace").text == "E   ValueError: one"
    failed = cases["test_failed"]
    assert [(c.tag, c.get("message")) for c in failed] == [
        ("failure", "(i=1): ValueError: one"),
        ("failure", "[msg] (i=2): assert 2 != 2"),
        ("failure", "contains 2 failed subtests"),
        ("rerunFailure", "(i=1): ValueError: one"),
    ]
    assert failed[0].text == "E   ValueError: one"
    root = ET.parse(path).getroot()
    assert root.get("failures") == "1"  # one failed test, however many elements


def test_a_call_failure_and_a_teardown_error_are_two_elements(tmp_path: Path) -> None:
    both = AttemptResult(
        attempt=1,
        outcome=AttemptOutcome.ERROR,
        duration=0.1,
        phase="call",
        message="assert 0",
        longrepr="E   assert 0\n\nE   RuntimeError: no teardown",
        phase_failures=[("call", "E   assert 0"), ("teardown", "E   RuntimeError: no teardown")],
    )
    path = tmp_path / "junit.xml"
    write_junit(report(result("t.py::test_x", Outcome.ERROR, both)), path)
    (case,) = ET.parse(path).getroot().iter("testcase")
    assert [(c.tag, c.get("message")) for c in case] == [
        ("failure", "assert 0"),
        ("error", "error in teardown: RuntimeError: no teardown"),
    ]


def test_subtests_survive_report_json_and_give_the_same_junit(tmp_path: Path) -> None:
    bad = _sub("(i=1)", "failed", "E   ValueError: one")
    bad.stdout = "printed by the subtest"
    rep = report(
        result(
            "t.py::test_failed",
            Outcome.FAILED,
            _subtest_attempt(1, _sub("(i=0)", "passed"), bad, own="contains 1 failed subtest"),
        ),
        result(
            "t.py::test_single",
            Outcome.FAILED,
            _subtest_attempt(1, bad),
        ),
    )
    rep.tests[1].attempts[0].phase_failures = []  # one failed phase: kept only in the text
    back = RunReport.from_json(json.loads(json.dumps(rep.to_json())))
    assert back.tests[0].attempts[0].subtests == rep.tests[0].attempts[0].subtests
    assert back.tests[0].attempts[0].subtests[1].stdout == "printed by the subtest"
    first, second = tmp_path / "a.xml", tmp_path / "b.xml"
    write_junit(rep, first)
    write_junit(back, second)
    assert first.read_bytes() == second.read_bytes()


def _whole_tree(run: RunReport) -> bytes:
    """The file as ElementTree writes the whole tree at once: what the writer must equal."""
    from flakewarden.reports import junit

    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite")
    for test in run.tests:
        suite.append(junit._testcase(test)[0])
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8")


def test_the_fast_testcases_are_what_elementtree_writes(tmp_path: Path) -> None:
    """Passed testcases are formatted by hand; every byte must be ElementTree's."""
    from flakewarden.reports.junit import escape_attribute

    hostile = "a&b<c>d\"e'f\rg\nh\ti\x01j\ud800k\u2028l€"
    assert ET.tostring(ET.Element("x", {"a": hostile}), encoding="unicode") == (
        f'<x a="{escape_attribute(hostile)}" />'
    )
    run = every_outcome()
    run.tests += [
        result(f"tests/{hostile}.py::test_{i}[{hostile}]", Outcome.PASSED, passed(duration=i / 7))
        for i in range(3)
    ]
    run.tests.append(result("tests/test_b.py::test_no_line", Outcome.PASSED, passed(), line=None))
    run.tests.append(
        result("tests/test_b.py::test_output", Outcome.PASSED, failed(stdout="x"), passed())
    )
    run.tests[-1].attempts[-1].stdout = "printed <&> \x02"
    written = write(tmp_path, run).read_bytes()
    suite = written.split(b"</properties>\n", 1)[1].rsplit(b"  </testsuite>", 1)[0]
    expected = _whole_tree(run).split(b"<testsuite>\n", 1)[1].rsplit(b"  </testsuite>", 1)[0]
    assert suite == expected
    assert written.endswith(b"  </testsuite>\n</testsuites>\n")
    ET.fromstring(written)  # and the whole file parses
