"""Each test's ``report.json`` item and JUnit ``<testcase>``, rendered ahead of the report.

Most tests of a run are final once attempt 1 recorded them: they passed or were
skipped, and nothing runs them again. Rendering them while the other tests still run
(on a core pytest does not use) leaves the writers little to do once the last process
exits. An entry is used only for the very ``TestResult`` object it was rendered from,
so a test whose result was folded again (rerun, crashed, recorded twice) is rendered
afresh by the writer, from what it became; the two ways give the same bytes.
"""

from __future__ import annotations

import json

from flakewarden.model import TestResult
from flakewarden.reports.junit import testcase_xml

# One encoder for every item: ``json.dumps`` with options builds a new one per call.
encode = json.JSONEncoder(ensure_ascii=False).encode


def json_item(test: TestResult) -> str:
    """The test's item in ``report.json``'s ``tests`` list."""
    return encode(test.to_json())


class RenderedTests:
    """Rendered tests by id, each beside the ``TestResult`` it was rendered from."""

    def __init__(self) -> None:
        self._by_id: dict[str, tuple[TestResult, str, tuple[str, str]]] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def add(self, test: TestResult) -> None:
        """Render ``test`` now; a later ``add`` of the same id replaces it."""
        self._by_id[test.id] = (test, json_item(test), testcase_xml(test))

    def holds(self, test: TestResult) -> bool:
        """True when ``test`` itself (this very object) was rendered."""
        entry = self._by_id.get(test.id)
        return entry is not None and entry[0] is test

    def json_item(self, test: TestResult) -> str:
        return self._by_id[test.id][1] if self.holds(test) else json_item(test)

    def testcase(self, test: TestResult) -> tuple[str, str]:
        """As ``junit.testcase_xml``: the testcase's lines and the total it counts in."""
        return self._by_id[test.id][2] if self.holds(test) else testcase_xml(test)
