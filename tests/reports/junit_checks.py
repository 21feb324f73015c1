"""Checks every written ``junit.xml`` must pass: both schemas, and junitparser's reading."""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET
from pathlib import Path

import xmlschema
from junitparser import Error, Failure, JUnitXml, Skipped

SCHEMAS = Path(__file__).resolve().parent.parent / "data" / "junit-schemas"


@functools.cache
def schema(name: str) -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SCHEMAS / name))


def assert_schema_valid(path: Path) -> None:
    """Valid as a whole against Jenkins's junit-10.xsd; each <testsuite>, taken as a
    document, against Surefire's surefire-test-report.xsd (its only root)."""
    schema("junit-10.xsd").validate(str(path))
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    assert suites, f"{path} has no <testsuite>"
    for suite in suites:
        schema("surefire-test-report.xsd").validate(ET.tostring(suite, encoding="unicode"))


def junitparser_outcomes(path: Path) -> dict[str, str]:
    """Each testcase's final result as junitparser reads it: passed, failure, error, skipped."""
    outcomes: dict[str, str] = {}
    xml = JUnitXml.fromfile(str(path))
    suites = [xml] if xml._tag == "testsuite" else list(xml)
    for suite in suites:
        for case in suite:
            kinds = {type(r) for r in case.result}
            if Error in kinds:
                kind = "error"
            elif Failure in kinds:
                kind = "failure"
            elif Skipped in kinds:
                kind = "skipped"
            else:
                kind = "passed"
            outcomes[f"{case.classname}::{case.name}"] = kind
    return outcomes
