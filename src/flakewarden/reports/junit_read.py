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
from flakewarden.reports.junit import QUARANTINED_PREFIX

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
