"""Read any JUnit XML file safely and in constant memory: ours, pytest's, or another runner's.

Separate from the writer because it takes foreign, possibly hostile files: it streams
cases one at a time, dropping each element once read, so a 50,000-testcase file never
becomes a tree, and it refuses a document type declaration that declares entities or
names an external DTD before parsing, so neither entity expansion (billion laughs) nor
external entities can happen.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import IO, NamedTuple, Optional
from xml.parsers import expat

from flakewarden.errors import ReportError
from flakewarden.model import Outcome
from flakewarden.outside_json import parse_json
from flakewarden.reports.junit import QUARANTINED_PREFIX, TESTCASE_PROPERTY

_CHUNK = 1 << 16

_FLAKY_TAGS = ("flakyFailure", "flakyError")


class JUnitRun(NamedTuple):
    """One run of a testcase the file shows: a rerun element, or the testcase's own result."""

    outcome: Outcome  # passed, failed, error or skipped
    message: str
    text: str
    stdout: str = ""
    stderr: str = ""


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
    # Every run the testcase shows, in order: Surefire's flaky and rerun elements, then
    # its final result.
    runs: tuple[JUnitRun, ...] = ()
    suite: str = ""  # the name of the <testsuite> it is in


class _RootReached(Exception):
    """The prolog is over: the document type declaration, if any, has been checked."""


def iter_junit_cases(path: Path, problems: Optional[list[str]] = None) -> Iterator[JUnitCase]:
    """Every ``<testcase>`` in a JUnit XML file, in document order, streamed.

    Accepts a ``<testsuites>`` or ``<testsuite>`` root and suites nested to any depth.
    Surefire's ``<flakyFailure>`` / ``<flakyError>`` without a final failure read as
    ``flaky``; ``<rerunFailure>`` / ``<rerunError>`` as ``failed`` / ``error``. A
    testcase with no result child whose ``status`` is ``disabled`` or ``skipped`` (as
    some runners write) is skipped. A testcase with no name is named by its position,
    ``(unnamed testcase N)``; that, and a file with no testcase at all, is added to
    ``problems`` when given. Raises :class:`ReportError` (lazily, while iterating) for a
    missing or malformed file, a root that is not JUnit's (another element, or a root in
    a namespace holding no testcase: another format that names its root ``testsuites``),
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
        yield from _stream_cases(stream, path, problems if problems is not None else [])
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


def _stream_cases(stream: IO[bytes], path: Path, problems: list[str]) -> Iterator[JUnitCase]:
    stack: list[ET.Element] = []
    located: list[tuple[str, str, Optional[int]]] = []  # our own files' testcase properties
    count = 0
    namespace = ""
    try:
        for event, element in ET.iterparse(stream, events=("start", "end")):
            if event == "start":
                if not stack:
                    namespace = _check_root(element.tag, path)
                stack.append(element)
                continue
            stack.pop()
            tag = _local(element.tag)
            if tag == "testcase":
                count += 1
                case = _case(element, located[count - 1] if count <= len(located) else None)
                suite = next((e for e in reversed(stack) if _local(e.tag) == "testsuite"), None)
                if suite is not None:
                    case = case._replace(suite=suite.get("name", ""))
                if not case.name:
                    case = case._replace(name=f"(unnamed testcase {count})")
                    problems.append(
                        f"{path}: testcase {count} has no name; it is named by its position"
                    )
            elif tag == "property" and element.get("name") == TESTCASE_PROPERTY:
                located.append(_located(element.get("value", "")))
                continue
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
    if not count and namespace:
        raise ReportError(
            f"{path}: not a JUnit XML file: its root is in the namespace {namespace!r} and "
            "holds no <testcase> (another format's, such as the Check framework's)"
        )
    if not count:
        problems.append(f"{path}: no testcase in this file")


def _check_root(tag: str, path: Path) -> str:
    """A JUnit root is ``<testsuites>`` or ``<testsuite>``; its namespace, if any."""
    if _local(tag) not in ("testsuites", "testsuite"):
        raise ReportError(
            f"{path}: not a JUnit XML file (root element <{_local(tag)}>, "
            "expected <testsuites> or <testsuite>)"
        )
    return tag[1:].partition("}")[0] if tag.startswith("{") else ""


def _located(value: str) -> tuple[str, str, Optional[int]]:
    """A ``flakewarden.testcase`` property: node id, file and line (empty when unreadable)."""

    try:
        data = parse_json(value, "flakewarden.testcase")
    except ValueError:
        return "", "", None
    if not isinstance(data, dict):
        return "", "", None
    line = data.get("line")
    return (
        str(data.get("nodeid") or ""),
        str(data.get("file") or ""),
        line if isinstance(line, int) and not isinstance(line, bool) else None,
    )


_PRIORITY = (
    ("error", Outcome.ERROR),
    ("failure", Outcome.FAILED),
    ("rerunError", Outcome.ERROR),
    ("rerunFailure", Outcome.FAILED),
    ("skipped", Outcome.SKIPPED),
)


_SKIPPED_STATUS = ("disabled", "skipped")


def _case(element: ET.Element, located: Optional[tuple[str, str, Optional[int]]]) -> JUnitCase:
    outcome, message, text = Outcome.PASSED, "", ""
    runs: tuple[JUnitRun, ...] = ()
    attrib = element.attrib
    if len(element):  # most cases passed and have no children: skip the search
        outcome, message, text = _result_of(element)
        runs = _runs(element, outcome, message, text)
    elif attrib.get("status", "").lower() in _SKIPPED_STATUS:
        outcome, message = Outcome.SKIPPED, attrib["status"]
    nodeid, file, line = located or (attrib.get("nodeid", ""), attrib.get("file", ""), None)
    return JUnitCase(
        attrib.get("classname", ""),
        attrib.get("name", ""),
        file,
        line if located else _int(attrib.get("line")),
        _float(attrib.get("time")),
        outcome,
        message,
        text,
        nodeid,
        runs or (JUnitRun(outcome, message, text),),
    )


_RERUNS = {
    "flakyFailure": Outcome.FAILED,
    "flakyError": Outcome.ERROR,
    "rerunFailure": Outcome.FAILED,
    "rerunError": Outcome.ERROR,
}


def _runs(element: ET.Element, outcome: Outcome, message: str, text: str) -> tuple[JUnitRun, ...]:
    """The runs a testcase shows: its first result, then each rerun element in order."""
    reruns = []
    stdout = stderr = ""
    for child in element:
        tag = _local(child.tag)
        if tag in _RERUNS:
            reruns.append(
                JUnitRun(
                    _RERUNS[tag],
                    child.get("message", ""),
                    _child_text(child, "stackTrace") or (child.text or "").strip(),
                    _child_text(child, "system-out"),
                    _child_text(child, "system-err"),
                )
            )
        elif tag == "system-out":
            stdout = child.text or ""
        elif tag == "system-err":
            stderr = child.text or ""
    if not reruns:
        return (JUnitRun(outcome, message, text, stdout, stderr),)
    if outcome is Outcome.FLAKY:  # the flaky elements, then the pass they led to
        return (*reruns, JUnitRun(Outcome.PASSED, "", "", stdout, stderr))
    final = JUnitRun(outcome, message, text, stdout, stderr)
    return (final, *reruns)  # the first failure, then Surefire's reruns of it


def _child_text(element: ET.Element, tag: str) -> str:
    child = next((c for c in element if _local(c.tag) == tag), None)
    return (child.text or "") if child is not None else ""


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
