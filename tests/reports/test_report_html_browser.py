"""``report.html`` of a real run, opened from ``file://`` in a real headless Chromium.

Asserts on the DOM as drawn: the counts, the flaky test first, the filter and the
outcome chips, the attempts side by side; that the page asked for nothing but its own
file and logged no error; and that a hostile test id, message and output stay text.
Screenshots go to a temporary folder (``FLAKEWARDEN_SCREENSHOTS=DIR`` keeps them there).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.browser import Opened, browser, row_names, shots
from helpers.report_pages import HOSTILE_ID, report_dir, report_of

__all__ = ["browser", "report_dir"]  # the fixtures


@pytest.fixture
def page(browser, report_dir: Path) -> Opened:  # type: ignore[no-untyped-def]
    opened = browser.open(report_dir / "report.html")
    yield opened
    opened.page.close()


def test_counts_and_the_flaky_test_first(page: Opened, report_dir: Path, tmp_path: Path) -> None:
    report = report_of(report_dir)
    shown = row_names(page)
    assert sorted(shown) == sorted(t["id"] for t in report["tests"])
    assert shown[0] == "test_flaky.py::test_flaky"
    assert page.page.text_content("#shown") == f"{len(report['tests'])} tests"
    cards = page.page.eval_on_selector_all(
        ".card",
        "cs => cs.map(c => [c.querySelector('.k').textContent, c.querySelector('.n').textContent])",
    )
    counts = dict(cards)
    for key in ("tests", "passed", "flaky", "failed", "quarantined", "skipped", "error"):
        assert counts[key] == str(report["totals"][key]), key
    assert counts["coverage"] == f"{report['coverage']['percent_display']}%"
    assert page.page.text_content("h1").startswith("flakewarden: failed")
    # The quarantined test is labelled.
    label = page.page.text_content("#rows tr.row-quarantined .badge")
    assert label == "quarantined"
    rendered = page.page.evaluate("document.documentElement.dataset.firstTableRender")
    assert float(rendered) > 0
    page.screenshot(shots(tmp_path) / "report-html.png")


def test_the_filter_and_the_outcome_chips(page: Opened) -> None:
    p = page.page
    p.fill("#filter", "calc")
    page.wait("document.querySelectorAll('#rows tr').length === 4")
    assert all("calc" in test for test in row_names(page))
    p.fill("#filter", "ARITHMETIC")  # failure messages match too, in any case
    page.wait("document.querySelectorAll('#rows tr').length === 1")
    assert row_names(page) == ["test_calc.py::test_broken"]
    p.fill("#filter", "")
    page.wait("document.querySelectorAll('#rows tr').length === 6")
    p.click("#outcomes button[data-kind=passed]")
    p.click("#outcomes button[data-kind=skipped]")
    page.wait("document.querySelectorAll('#rows tr').length === 4")
    outcomes = p.eval_on_selector_all("#rows tr .badge", "bs => bs.map(b => b.textContent)")
    assert "passed" not in outcomes and "skipped" not in outcomes
    assert p.get_attribute("#outcomes button[data-kind=passed]", "aria-pressed") == "false"
    assert p.text_content("#shown") == "4 of 4 shown (6 tests in all)"


def test_sorting_by_a_column(page: Opened, report_dir: Path) -> None:
    p = page.page
    p.click("#columns button:text('Test')")
    shown = row_names(page)
    assert shown == sorted(shown)
    p.click("#columns button:text('Test')")
    assert row_names(page) == sorted(shown, reverse=True)


def test_a_tests_attempts_side_by_side(page: Opened, tmp_path: Path) -> None:
    p = page.page
    p.click("#rows .test-name:text('test_flaky.py::test_flaky')")
    boxes = p.locator("tr.detail .attempt")
    assert boxes.count() == 2
    first, second = boxes.nth(0), boxes.nth(1)
    assert "Attempt 1" in first.locator("h4").text_content() and "failed" in first.text_content()
    assert "flaked" in first.locator("pre").first.text_content()
    assert "passed" in second.locator("h4").text_content()
    # Side by side: the second box starts to the right of the first, on the same line.
    a, b = first.bounding_box(), second.bounding_box()
    assert b["x"] > a["x"] + a["width"] - 1 and abs(b["y"] - a["y"]) < 2
    page.screenshot(shots(tmp_path) / "report-html-attempts.png")


def test_hostile_names_messages_and_output_stay_text(browser, report_dir: Path) -> None:  # type: ignore[no-untyped-def]
    report = report_of(report_dir)
    index = [t["id"] for t in report["tests"]].index(HOSTILE_ID)
    assert index >= 0
    opened = browser.open(report_dir / "report.html")
    p = opened.page
    p.fill("#filter", "<img src=x")  # typed as text: it is a filter, not markup
    opened.wait("document.querySelectorAll('#rows tr').length === 1")
    p.click("#rows .test-name")
    p.wait_for_selector("tr.detail .attempt")
    assert row_names(opened) == [HOSTILE_ID]
    texts = p.eval_on_selector_all("tr.detail pre", "ps => ps.map(p => p.textContent)")
    assert any("<script>alert(3)</script>" in text for text in texts)  # the output, as text
    assert any("</script><img src=y onerror=alert(4)>" in text for text in texts)
    assert p.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert p.evaluate("document.querySelectorAll('script').length") == 2
    handlers = p.evaluate(
        "[...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name))"
        ".filter(n => n.startsWith('on'))"
    )
    assert handlers == []
    assert opened.dialogs == [] and opened.errors == []
    assert opened.requests == [opened.url]
    opened.page.close()


def test_no_request_but_the_page_and_no_console_error(page: Opened) -> None:
    page.page.click("#rows .test-name >> nth=1")
    assert page.requests == [page.url]
    assert page.console_errors == []
    assert page.errors == []
    assert page.dialogs == []


def test_a_link_to_a_test_opens_its_evidence(browser, report_dir: Path) -> None:  # type: ignore[no-untyped-def]
    opened = browser.open(report_dir / "report.html")
    p = opened.page
    # The red-build banner links every test that failed every attempt.
    links = p.eval_on_selector_all("#problems a", "as => as.map(a => a.getAttribute('href'))")
    assert len(links) == 2
    p.click("#problems a >> nth=0")
    p.wait_for_selector("tr.detail .attempt")
    assert p.locator("tr.detail .attempt").count() == 3
    opened.page.close()
