"""Read any JUnit XML safely; write the merged report that shows every rerun.

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

``classname`` and ``name`` are derived from the pytest node id as pytest's own
``--junitxml`` does (so history keyed on them carries over); the exact node id is
kept in a ``nodeid`` attribute, the file and 1-based line in ``file`` and ``line``.
``time`` is the duration of the final attempt. Text that XML 1.0 cannot hold
(control characters, lone surrogates) is replaced with ``#xNN``, as pytest does.

Reading streams: cases come out one at a time and each element is dropped once
read, so a 50,000-testcase file never becomes a tree. A document type declaration
that declares entities or names an external DTD is refused before parsing, so
neither entity expansion (billion laughs) nor external entities can happen.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import IO, NamedTuple, Optional
from xml.parsers import expat

from flakewarden.errors import ReportError
from flakewarden.model import AttemptOutcome, AttemptResult, Outcome, RunReport, TestResult
from flakewarden.reports.junit_parts import Part, parts

SUITE_NAME = "flakewarden"
QUARANTINED_PREFIX = "quarantined:"

# XML 1.0 Char production; everything else cannot appear in a document, even escaped.
_ILLEGAL_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_EXCEPTION_NAME = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")
_CHUNK = 1 << 16

_FLAKY_TAGS = ("flakyFailure", "flakyError")


class JUnitCase(NamedTuple):
    """One ``<testcase>`` as read from any JUnit XML file."""

    classname: str
    name: str
    file: str
    line: Optional[int]
    time: float
    outcome: Outcome
    message: str
    text: str
    nodeid: str = ""  # flakewarden's own reports only


# --- writing -------------------------------------------------------------------------------


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
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", ".").replace("\\", "."))
    names[-1] += bracket + params
    if len(names) == 1:
        return "", names[0]
    return ".".join(names[:-1]), names[-1]


def write_junit(report: RunReport, path: Path) -> None:
    """Write ``report`` as one JUnit XML file, atomically (a reader never sees half a file)."""
    cases: list[ET.Element] = []
    counts = {"failure": 0, "error": 0, "skipped": 0}
    for test in report.tests:
        case, final = _testcase(test)
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
    root = ET.Element("testsuites", {"name": SUITE_NAME, **totals})
    suite_attrs = {"name": SUITE_NAME, **totals}
    if report.started_at:
        suite_attrs["timestamp"] = xml_safe(report.started_at)
    suite = ET.SubElement(root, "testsuite", suite_attrs)
    properties = ET.SubElement(suite, "properties")
    summary = report.totals
    for name, value in (
        ("flakewarden.version", report.version),
        ("flakewarden.runner.reruns", str(report.reruns)),
        ("flakewarden.flaky", str(summary.flaky)),
        ("flakewarden.quarantined", str(summary.quarantined)),
    ):
        ET.SubElement(properties, "property", {"name": name, "value": xml_safe(value)})
    suite.extend(cases)
    ET.indent(root)

    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(partial, "wb") as stream:
            ET.ElementTree(root).write(stream, encoding="utf-8", xml_declaration=True)
            stream.write(b"\n")
        os.replace(partial, path)
    except OSError as exc:
        raise ReportError(f"cannot write the JUnit report {path}: {exc.strerror or exc}") from exc


def _testcase(test: TestResult) -> tuple[ET.Element, str]:
    """The ``<testcase>`` for one test, and which total it counts in ("" for none)."""
    classname, name = split_node_id(test.id)
    attrs = {"classname": xml_safe(classname), "name": xml_safe(name)}
    if test.file:
        attrs["file"] = xml_safe(test.file)
    if test.line is not None:
        attrs["line"] = str(test.line)
    final_attempt = test.attempts[-1] if test.attempts else None
    attrs["time"] = f"{final_attempt.duration if final_attempt else 0.0:.3f}"
    attrs["nodeid"] = xml_safe(test.id)
    case = ET.Element("testcase", attrs)
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
        ET.SubElement(case, "skipped", {"message": xml_safe(message), "type": "quarantined"})
        detail = "\n\n".join(_detail(a) for a in failures)
        if detail:
            _text_child(case, "system-out", detail)
        output = None

    if output is not None:
        _output(case, output)
    return case, final


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
    if attempt.longrepr:
        _text_child(element, "stackTrace", attempt.longrepr)
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


# --- reading -------------------------------------------------------------------------------


class _RootReached(Exception):
    """The prolog is over: the document type declaration, if any, has been checked."""


def iter_junit_cases(path: Path) -> Iterator[JUnitCase]:
    """Every ``<testcase>`` in a JUnit XML file, in document order, streamed.

    Accepts a ``<testsuites>`` or ``<testsuite>`` root and suites nested to any depth.
    Surefire's ``<flakyFailure>`` / ``<flakyError>`` without a final failure read as
    ``flaky``; ``<rerunFailure>`` / ``<rerunError>`` as ``failed`` / ``error``.
    Raises :class:`ReportError` (lazily, while iterating) for a missing or malformed file
    or a document type declaration that declares entities or names an external DTD.
    """
    path = Path(path)
    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed by the finally below
    except OSError as exc:
        raise ReportError(f"cannot read JUnit file {path}: {exc.strerror or exc}") from exc
    try:
        _check_prolog(stream, path)
        stream.seek(0)
        yield from _stream_cases(stream, path)
    finally:
        stream.close()


def _check_prolog(stream: IO[bytes], path: Path) -> None:
    """Refuse entity declarations and external DTDs before the real parse sees them."""

    def doctype(name: str, system_id: Optional[str], public_id: Optional[str], _: int) -> None:
        if system_id or public_id:
            raise ReportError(
                f"{path}: refusing a JUnit file whose DOCTYPE names an external DTD "
                f"({system_id or public_id}); JUnit XML needs no DTD"
            )

    def entity(name: str, *_: object) -> None:
        raise ReportError(
            f"{path}: refusing a JUnit file whose DOCTYPE declares the entity {name!r} "
            "(entity expansion is disabled); JUnit XML needs no entities"
        )

    def root(*_: object) -> None:
        raise _RootReached

    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.UnparsedEntityDeclHandler = entity
    parser.StartElementHandler = root
    try:
        while chunk := stream.read(_CHUNK):
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except _RootReached:
        return
    except expat.ExpatError as exc:
        raise ReportError(
            f"{path}: malformed XML at line {exc.lineno}, column {exc.offset + 1}: "
            f"{expat.ErrorString(exc.code)}"
        ) from exc


def _local(tag: str) -> str:
    return tag.rpartition("}")[2] if "}" in tag else tag


def _stream_cases(stream: IO[bytes], path: Path) -> Iterator[JUnitCase]:
    stack: list[ET.Element] = []
    try:
        for event, element in ET.iterparse(stream, events=("start", "end")):
            if event == "start":
                if not stack and _local(element.tag) not in ("testsuites", "testsuite"):
                    raise ReportError(
                        f"{path}: not a JUnit XML file (root element <{element.tag}>, "
                        "expected <testsuites> or <testsuite>)"
                    )
                stack.append(element)
                continue
            stack.pop()
            tag = _local(element.tag)
            if tag == "testcase":
                case = _case(element)
            elif tag == "testsuite":
                case = None
            else:
                continue
            # Drop what has been read, so memory stays flat however long the file is.
            element.clear()
            if stack:
                stack[-1].remove(element)
            if case is not None:
                yield case
    except ET.ParseError as exc:
        line, column = exc.position
        message = str(exc).split(":", 1)[0]
        raise ReportError(
            f"{path}: malformed XML at line {line}, column {column + 1}: {message}"
        ) from exc


_PRIORITY = (
    ("error", Outcome.ERROR),
    ("failure", Outcome.FAILED),
    ("rerunError", Outcome.ERROR),
    ("rerunFailure", Outcome.FAILED),
    ("skipped", Outcome.SKIPPED),
)


def _case(element: ET.Element) -> JUnitCase:
    outcome, message, text = Outcome.PASSED, "", ""
    if len(element):  # most cases passed and have no children: skip the search
        outcome, message, text = _result_of(element)
    attrib = element.attrib
    return JUnitCase(
        attrib.get("classname", ""),
        attrib.get("name", ""),
        attrib.get("file", ""),
        _int(attrib.get("line")),
        _float(attrib.get("time")),
        outcome,
        message,
        text,
        attrib.get("nodeid", ""),
    )


def _result_of(element: ET.Element) -> tuple[Outcome, str, str]:
    """Outcome, message and text from a testcase's result children."""
    children: dict[str, ET.Element] = {}
    first_flaky: Optional[ET.Element] = None
    for child in element:
        tag = _local(child.tag)
        children.setdefault(tag, child)
        if first_flaky is None and tag in _FLAKY_TAGS:
            first_flaky = child
    deciding, outcome = first_flaky, Outcome.FLAKY
    for tag, result in _PRIORITY:
        if tag in children:
            deciding, outcome = children[tag], result
            break
    if deciding is None:
        return Outcome.PASSED, "", ""
    message = deciding.get("message", "")
    trace = next((c for c in deciding if _local(c.tag) == "stackTrace"), None)
    text = (trace.text if trace is not None else deciding.text) or ""
    if outcome is Outcome.SKIPPED and message.startswith(QUARANTINED_PREFIX):
        outcome = Outcome.QUARANTINED
    return outcome, message, text


def _int(value: Optional[str]) -> Optional[int]:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _float(value: Optional[str]) -> float:
    if not value:
        return 0.0
    try:
        return float(value)
    except ValueError:
        try:
            return float(value.replace(",", ""))  # "1,234.5", as some runners write
        except ValueError:
            return 0.0
