"""The dashboard built by the real command, opened from ``file://`` in headless Chromium.

Asserts on the DOM: the flakiest test first, the counts, the filter and state chips, a
test's panel (its run strip, trend and failure groups), the group that one cause makes
over three tests; nothing but the page requested, no console error, the hostile test id
and message kept as text. Screenshots go to a temporary folder
(``FLAKEWARDEN_SCREENSHOTS=DIR`` keeps them there).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_builders import FLAKY, HOSTILE_ID, RUNS, SHARED, build_history
from helpers.browser import Opened, browser, row_names, shots
from helpers.hermetic import clean_env
from helpers.project import PYTHON

__all__ = ["browser"]  # the fixture


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dashboard-page")
    db = build_history(root)
    done = subprocess.run(
        [PYTHON, "-m", "flakewarden", "dashboard", "--db", str(db), "--out", "site"],
        cwd=root,
        env=clean_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return root / "site" / "index.html"


@pytest.fixture
def page(browser, site: Path) -> Iterator[Opened]:  # type: ignore[no-untyped-def]
    opened = browser.open(site)
    yield opened
    opened.page.close()


def test_the_flakiest_test_first_and_the_chart(page: Opened, tmp_path: Path) -> None:
    p = page.page
    shown = row_names(page)
    assert shown[0] == FLAKY
    assert HOSTILE_ID in shown
    assert p.text_content("#shown") == f"{len(shown)} tests"
    weeks = p.locator("#chart svg g.week").count()
    assert weeks == 3  # 40 runs twelve hours apart
    assert p.locator("#rows tr").first.locator(".strip > *").count() == 30
    assert page.requests == [page.url]
    assert page.console_errors == [] and page.errors == []
    page.screenshot(shots(tmp_path) / "dashboard.png")


def test_the_filter_and_the_state_chips(page: Opened) -> None:
    p = page.page
    p.fill("#filter", "test_api")
    page.wait("document.querySelectorAll('#rows tr').length === 2")
    assert sorted(row_names(page)) == sorted(t for t in SHARED if "test_api" in t)
    p.fill("#filter", "")
    p.click("#states button[data-kind=flaky]")
    page.wait("!document.querySelector('#rows .badge.o-flaky')")
    kinds = p.eval_on_selector_all("#rows tr .badge", "bs => bs.map(b => b.textContent)")
    assert kinds and "flaky" not in kinds


def test_a_tests_panel(page: Opened, tmp_path: Path) -> None:
    p = page.page
    p.click(f"#rows .test-name:text-is('{FLAKY}')")
    panel = p.locator("tr.detail .panel")
    assert panel.locator(".strip.big > *").count() == RUNS
    links = panel.locator(".strip.big a")
    assert links.first.get_attribute("href").startswith("https://github.com/octo-org/octo-repo/")
    assert "PoolExhausted" in panel.locator("ul.notes a").first.text_content()
    assert "shared with 2 other tests" in panel.text_content()
    page.screenshot(shots(tmp_path) / "dashboard-panel.png")


def test_the_group_of_one_cause_lists_every_test_it_hits(page: Opened) -> None:
    p = page.page
    group = p.locator("#group-0")
    assert group.get_attribute("open") is not None  # the widest group is open
    assert "3 tests" in group.locator("summary").first.text_content()
    listed = group.locator("ul.notes li a").all_text_contents()
    assert sorted(listed) == sorted(SHARED)
    group.locator("ul.notes li a").first.click()
    p.wait_for_selector("tr.detail .panel")


def test_the_hostile_id_and_message_stay_text(browser, site: Path) -> None:  # type: ignore[no-untyped-def]
    opened = browser.open(site)
    p = opened.page
    p.fill("#filter", "<img src=x")
    opened.wait("document.querySelectorAll('#rows tr').length === 1")
    assert row_names(opened) == [HOSTILE_ID]
    p.click("#rows .test-name")
    p.wait_for_selector("tr.detail .panel")
    assert p.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert p.evaluate("document.querySelectorAll('script').length") == 2
    handlers = p.evaluate(
        "[...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name))"
        ".filter(n => n.startsWith('on'))"
    )
    assert handlers == []
    groups = p.locator(".group summary .sig").all_text_contents()
    assert any("</script><img src=y onerror=alert(N)>" in g for g in groups)
    assert opened.dialogs == [] and opened.errors == []
    assert opened.requests == [opened.url]
    opened.page.close()


def test_a_verdicts_suspect_lines_are_shown_beside_it_as_text(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = build_history(tmp_path)
    verdict = {
        "test_id": FLAKY,
        "verdict": "race",
        "quarantine_allowed": False,
        "reason": "pauses at ledger.py:13 alone failed it",
        "runs": 400,
        "failures": 37,
        "where": {
            "suspects": [
                {"file": "ledger.py", "line": 13, "text": "self.total += cents"},
                {"file": "<img src=x onerror=alert(1)>.py", "line": 2, "text": "<b>x</b>"},
            ]
        },
    }
    (tmp_path / "verdict.json").write_text(json.dumps(verdict), encoding="utf-8")
    command = [PYTHON, "-m", "flakewarden", "dashboard", "--db", str(db), "--out", "site"]
    done = subprocess.run(
        [*command, "--verdicts", str(tmp_path / "verdict.json")],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    opened = browser.open(tmp_path / "site" / "index.html")
    p = opened.page
    p.click(f"#rows .test-name:text-is('{FLAKY}')")
    panel = p.locator("tr.detail .panel")
    lines = panel.locator("ul.notes ul.notes li").all_text_contents()
    assert lines == [
        "where: ledger.py:13 self.total += cents",
        "where: <img src=x onerror=alert(1)>.py:2 <b>x</b>",
    ]
    assert p.evaluate("document.querySelectorAll('img').length") == 0
    assert panel.locator("ul.notes ul.notes li b").count() == 0  # the text's tag stays text
    assert opened.console_errors == [] and opened.errors == []
    opened.page.close()
