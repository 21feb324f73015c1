"""Write the merged JUnit report that shows every rerun.

Writing follows Maven Surefire's rerun format, which Jenkins, GitLab and most JUnit
reporters already read:

- ``passed``: a plain ``<testcase>``.
- ``flaky`` (failed, then passed): one ``<flakyFailure>`` (the call failed) or
  ``<flakyError>`` (setup or teardown failed) per failed attempt, each holding a
  ``<stackTrace>`` and that attempt's ``<system-out>`` / ``<system-err>``.
- ``failed`` / ``error``: ``<failure>`` (or ``<error>`` for a setup or teardown
  failure) for the first failed attempt, whose captured output becomes the testcase's
  ``<system-out>`` / ``<system-err>``, then ``<rerunFailure>`` / ``<rerunError>`` for
  each later attempt.
- ``skipped``: ``<skipped message=...>``.
- subtests: as pytest's own ``--junitxml`` writes them, an attempt with failed
  subtests gives one element per failed subtest (its message named by pytest's
  description, ``[msg] (i=1): ...``), then one for the test's own failure when
  its call or teardown failed too ("contains 1 failed subtest", a teardown
  error); each of those elements takes the tag the attempt's place calls for
  (``<failure>``, ``<rerunFailure>``, ``<flakyFailure>``, ...). pytest writes a
  teardown error as a second ``<testcase>``; here it stays in the test's one
  testcase.
- ``quarantined``: JUnit has no such state, and a quarantined failure must neither
  turn the build red (``<failure>``) nor read as a pass (a bare testcase). It is
  written as a skipped testcase whose message starts with ``quarantined:`` and the
  first failure's message, with every failed attempt's detail in ``<system-out>``,
  so every consumer lists it as skipped and shows why. Reading the file back gives
  the outcome ``quarantined``.

The file validates against Jenkins's ``junit-10.xsd`` as a whole and, each
``<testsuite>`` taken as a document, against Surefire's ``surefire-test-report.xsd``:
a testcase holds only ``classname``, ``name`` and ``time`` and its children come in
Surefire's order (``failure``, ``rerunFailure``, ``flakyFailure``, ``skipped``,
``error``, ``rerunError``, ``flakyError``, ``system-out``, ``system-err``), every
rerun element has a ``stackTrace``. ``classname`` and ``name`` are derived from the
pytest node id as pytest's own ``--junitxml`` does (so history keyed on them carries
over); the exact node id, file and 1-based line of each testcase are kept in the
suite's ``<properties>``, one ``flakewarden.testcase`` property per testcase in the
same order (JSON: ``nodeid``, ``file``, ``line``). ``write_junit(..., xunit1=True)``
writes them as pytest's ``xunit1`` family does instead, as ``file``, ``line`` and
``nodeid`` attributes of each testcase, for consumers that annotate from them (that
file is not schema-valid: no schema has those attributes). ``time`` is the duration
of the final attempt. Text that XML 1.0 cannot hold
(control characters, lone surrogates) is replaced with ``#xNN``, as pytest does.

Reading any JUnit XML file, this one included, is in ``junit_read``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable, Optional

from flakewarden.errors import ReportError
from flakewarden.model import AttemptOutcome, AttemptResult, Outcome, RunReport, TestResult
from flakewarden.reports.junit_parts import Part, parts

SUITE_NAME = "flakewarden"
QUARANTINED_PREFIX = "quarantined:"

# XML 1.0 Char production; everything else cannot appear in a document, even escaped.
_ILLEGAL_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_PY_SUFFIX = re.compile(r"\.py$")
_EXCEPTION_NAME = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")


def xml_safe(text: str) -> str:
    """Replace characters XML 1.0 cannot hold with ``#xNN`` so the file always parses."""
    if _ILLEGAL_XML.search(text) is None:
        return text
    return _ILLEGAL_XML.sub(lambda m: f"#x{ord(m.group()):02X}", text)


def split_node_id(node_id: str) -> tuple[str, str]:
    """``(classname, name)`` for a pytest node id, exactly as pytest's ``--junitxml`` does.

    ``tests/a/test_x.py::TestA::test_f[p::q]`` gives ``tests.a.test_x.TestA`` and
    ``test_f[p::q]``: parameters may hold ``::``, so only the part before ``[`` is split.
    """
    path, bracket, params = node_id.partition("[")
    names = path.split("::")
    names[0] = _PY_SUFFIX.sub("", names[0].replace("/", ".").replace("\\", "."))
    names[-1] += bracket + params
    if len(names) == 1:
        return "", names[0]
    return ".".join(names[:-1]), names[-1]


def write_junit(
    report: RunReport,
    path: Path,
    testcase: Optional[Callable[[TestResult], tuple[str, str]]] = None,
    *,
    xunit1: bool = False,
) -> None:
    """Write ``report`` as one JUnit XML file, atomically (a reader never sees half a file).

    ``testcase`` gives each test's ``<testcase>`` as ``testcase_xml`` does (one made
    earlier, see ``rendered``); by default each is made here. ``xunit1``: pytest's
    ``file``/``line``/``nodeid`` attributes on each testcase, no per-test properties.
    """
    cases: list[str] = []
    counts = {"failure": 0, "error": 0, "skipped": 0}
    make = testcase or testcase_xml
    if xunit1:
        make = functools.partial(testcase_xml, xunit1=True)
    for test in report.tests:
        case, final = make(test)
        cases.append(case)
        if final:
            counts[final] += 1
    totals = {
        "tests": str(len(report.tests)),
        "failures": str(counts["failure"]),
        "errors": str(counts["error"]),
        "skipped": str(counts["skipped"]),
        "time": f"{report.duration:.3f}",
    }
    # <testsuites> has no "skipped" in junit-10.xsd; <testsuite> must have it in Surefire's.
    outer = {key: value for key, value in totals.items() if key != "skipped"}
    root = ET.Element("testsuites", {"name": SUITE_NAME, **outer})
    suite = ET.SubElement(root, "testsuite", {"name": SUITE_NAME, **totals})
    properties = ET.SubElement(suite, "properties")
    summary = report.totals
    for name, value in (
        ("flakewarden.version", report.version),
        ("flakewarden.started_at", report.started_at),
        ("flakewarden.runner.reruns", str(report.reruns)),
        ("flakewarden.flaky", str(summary.flaky)),
        ("flakewarden.quarantined", str(summary.quarantined)),
    ):
        ET.SubElement(properties, "property", {"name": name, "value": xml_safe(value)})
    # The document around the testcases (and their properties), serialised by ElementTree
    # with stand-ins where they go; each is serialised on its own (see testcase_xml).
    ET.SubElement(properties, _PROPERTIES)
    ET.SubElement(suite, _CASES)
    ET.indent(root)
    frame = ET.tostring(root, encoding="unicode")
    head, rest = frame.split(f"{_INDENT * 3}<{_PROPERTIES} />\n", 1)
    middle, tail = rest.split(f"{_INDENT * 2}<{_CASES} />\n", 1)
    located = [] if xunit1 else [testcase_property(test) for test in report.tests]
    document = "".join(
        ("<?xml version='1.0' encoding='utf-8'?>\n", head, *located, middle, *cases, tail, "\n")
    )

    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(partial, "wb") as stream:
            stream.write(document.encode("utf-8", "xmlcharrefreplace"))
        os.replace(partial, path)
    except OSError as exc:
        raise ReportError(f"cannot write the JUnit report {path}: {exc.strerror or exc}") from exc


_CASES = "flakewarden-testcases"  # the stand-ins; never in a written file
_PROPERTIES = "flakewarden-properties"
_INDENT = "  "
#: The property, one per testcase in their order, that keeps its node id, file and line.
TESTCASE_PROPERTY = "flakewarden.testcase"
#: A testcase's children in the order Surefire's schema requires (junit-10.xsd takes any).
CHILD_ORDER = {
    tag: index
    for index, tag in enumerate(
        (
            "failure",
            "rerunFailure",
            "flakyFailure",
            "skipped",
            "error",
            "rerunError",
            "flakyError",
            "system-out",
            "system-err",
        )
    )
}


def testcase_property(test: TestResult) -> str:
    """The ``<property>`` line that keeps ``test``'s node id, file and line."""
    value = json.dumps(
        {"nodeid": test.id, "file": test.file, "line": test.line}, ensure_ascii=False
    )
    return (
        f'{_INDENT * 3}<property name="{TESTCASE_PROPERTY}" '
        f'value="{escape_attribute(xml_safe(value))}" />\n'
    )


def testcase_xml(test: TestResult, xunit1: bool = False) -> tuple[str, str]:
    """One indented ``<testcase>`` line (or lines), and which total it counts in.

    A passed test with no captured output, most of any suite, is a lone element: it is
    formatted here, escaped as ElementTree escapes attributes, instead of built as an
    element and serialised (that took most of the time of writing a big suite's file).
    Everything else goes through ElementTree.
    """
    final_attempt = test.attempts[-1] if test.attempts else None
    if (
        test.outcome is Outcome.PASSED
        and final_attempt is not None
        and not final_attempt.stdout
        and not final_attempt.stderr
    ):
        pairs = _attrs(test, xunit1)
        attrs = " ".join(f'{key}="{escape_attribute(value)}"' for key, value in pairs)
        return f"{_INDENT * 2}<testcase {attrs} />\n", ""
    case, final = _testcase(test, xunit1)
    ET.indent(case, space=_INDENT, level=2)
    return f"{_INDENT * 2}{ET.tostring(case, encoding='unicode')}\n", final


def escape_attribute(text: str) -> str:
    """An attribute value as ElementTree writes it (``&<>"``, CR, LF and tab escaped)."""
    for char, entity in _ATTRIBUTE_ESCAPES:  # "&" first: the others bring their own
        if char in text:
            text = text.replace(char, entity)
    return text


_ATTRIBUTE_ESCAPES = (
    ("&", "&amp;"),
    ("<", "&lt;"),
    (">", "&gt;"),
    ('"', "&quot;"),
    ("\r", "&#13;"),
    ("\n", "&#10;"),
    ("\t", "&#09;"),
)


def _attrs(test: TestResult, xunit1: bool = False) -> list[tuple[str, str]]:
    """The ``<testcase>`` attributes, in the order they are written."""
    classname, name = split_node_id(test.id)
    attrs = [("classname", xml_safe(classname)), ("name", xml_safe(name))]
    if xunit1 and test.file:
        attrs.append(("file", xml_safe(test.file)))
    if xunit1 and test.line is not None:
        attrs.append(("line", str(test.line)))
    final_attempt = test.attempts[-1] if test.attempts else None
    attrs.append(("time", f"{final_attempt.duration if final_attempt else 0.0:.3f}"))
    if xunit1:
        attrs.append(("nodeid", xml_safe(test.id)))
    return attrs


def _testcase(test: TestResult, xunit1: bool = False) -> tuple[ET.Element, str]:
    """The ``<testcase>`` for one test, and which total it counts in ("" for none)."""
    case = ET.Element("testcase", dict(_attrs(test, xunit1)))
    final = _children(case, test)
    _in_schema_order(case)
    return case, final


def _in_schema_order(case: ET.Element) -> None:
    """Children in Surefire's order, one ``<error>`` at most (its text joined)."""
    children = sorted(case, key=lambda child: CHILD_ORDER.get(child.tag, len(CHILD_ORDER)))
    errors = [child for child in children if child.tag == "error"]
    for extra in errors[1:]:
        errors[0].text = "\n\n".join(t for t in (errors[0].text, extra.text) if t) or None
        children.remove(extra)
    case[:] = children


def _children(case: ET.Element, test: TestResult) -> str:
    """Add the result elements of ``test`` to ``case``; the total it counts in."""
    final_attempt = test.attempts[-1] if test.attempts else None
    failures = test.failures
    output: Optional[AttemptResult] = final_attempt
    final = ""

    if test.outcome in (Outcome.FAILED, Outcome.ERROR):
        first = failures[0] if failures else None
        if first is None:  # no attempt recorded the failure: still never read as a pass
            final = "error" if test.outcome is Outcome.ERROR else "failure"
            ET.SubElement(case, final, {"message": str(test.outcome), "type": final})
        else:
            final = "error" if first.outcome is AttemptOutcome.ERROR else "failure"
            for part in parts(first):
                _result(case, part.tag("", "failure"), part, interim=False)
            for later in failures[1:]:
                for part in parts(later):
                    _result(case, part.tag("rerun", "Failure"), part, interim=True)
        output = first
    elif test.outcome is Outcome.FLAKY:
        for failed in failures:
            for part in parts(failed):
                _result(case, part.tag("flaky", "Failure"), part, interim=True)
    elif test.outcome is Outcome.SKIPPED:
        final = "skipped"
        message = (final_attempt.message if final_attempt else "") or "skipped"
        ET.SubElement(case, "skipped", {"message": xml_safe(message)})
    elif test.outcome is Outcome.QUARANTINED:
        final = "skipped"
        first = failures[0] if failures else None
        reason = _message(first) if first else "no failure in this run"
        message = f"{QUARANTINED_PREFIX} {reason}"
        ET.SubElement(case, "skipped", {"message": xml_safe(message)})
        detail = "\n\n".join(_detail(a) for a in failures)
        if detail:
            _text_child(case, "system-out", detail)
        output = None

    if output is not None:
        _output(case, output)
    return final


def _message(attempt: Part | AttemptResult) -> str:
    message = attempt.message or f"{attempt.phase or 'call'} failed"
    if attempt.outcome is AttemptOutcome.ERROR and attempt.phase:
        return f"error in {attempt.phase}: {message}"
    return message


def _type(attempt: Part | AttemptResult) -> str:
    """The exception name when the message starts with one, as Surefire's ``type`` wants."""
    text = (attempt.reason if isinstance(attempt, Part) else "") or attempt.message
    match = _EXCEPTION_NAME.match(text)
    if match:
        return match.group(1)
    if text.startswith("assert"):
        return "AssertionError"
    return "error" if attempt.outcome is AttemptOutcome.ERROR else "failure"


def _result(case: ET.Element, tag: str, attempt: Part | AttemptResult, *, interim: bool) -> None:
    attrs = {"message": xml_safe(_message(attempt)), "type": xml_safe(_type(attempt))}
    element = ET.SubElement(case, tag, attrs)
    if not interim:
        element.text = xml_safe(attempt.longrepr) or None
        return
    _text_child(element, "stackTrace", attempt.longrepr)  # Surefire's schema requires one
    _output(element, attempt)


def _output(parent: ET.Element, attempt: Part | AttemptResult) -> None:
    if attempt.stdout:
        _text_child(parent, "system-out", attempt.stdout)
    if attempt.stderr:
        _text_child(parent, "system-err", attempt.stderr)


def _text_child(parent: ET.Element, tag: str, text: str) -> None:
    ET.SubElement(parent, tag).text = xml_safe(text)


def _detail(attempt: AttemptResult) -> str:
    where = f" in {attempt.phase}" if attempt.phase else ""
    parts = [f"attempt {attempt.attempt}: {attempt.outcome}{where}: {attempt.message}"]
    if attempt.longrepr:
        parts.append(attempt.longrepr)
    if attempt.stdout:
        parts.append(f"--- captured stdout ---\n{attempt.stdout}")
    if attempt.stderr:
        parts.append(f"--- captured stderr ---\n{attempt.stderr}")
    return "\n".join(parts)
