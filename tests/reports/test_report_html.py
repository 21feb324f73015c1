"""``report.html``: written by every command that writes a report, self-contained, inert data.

The markup is checked here without a browser (the page's blocks, its policy, the data
read back exactly); ``test_report_html_browser.py`` opens the same pages in Chromium.
"""

from __future__ import annotations

import base64
import hashlib
import html.parser
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers.project import ISOLATED_INI, PYTHON, Project, flaky_module, make_project
from helpers.report_builders import result, run_report
from helpers.report_pages import HOSTILE, HOSTILE_ID, HOSTILE_MESSAGE, report_dir, report_of

from flakewarden.model import AttemptOutcome, AttemptResult, Outcome, TestResult
from flakewarden.reports.html.clip import Budget, clip
from flakewarden.reports.html.coverage_files import ranges, read_file_coverage
from flakewarden.reports.html.page import script_json
from flakewarden.reports.html.report_data import DETAIL_BUDGET, report_data
from flakewarden.reports.html.report_page import render_report_html

__all__ = ["report_dir"]  # the fixture, shared with the browser tests
DATA = Path(__file__).resolve().parents[1] / "data"


class Blocks(html.parser.HTMLParser):
    """Every element's tag and attributes, and the text of each script and style."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[tuple[dict[str, str], str]] = []
        self.styles: list[str] = []
        self._open: tuple[str, dict[str, str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        self.tags.append((tag, found))
        if tag in ("script", "style"):
            self._open = (tag, found)
            self._text: list[str] = []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._open is not None and tag == self._open[0]:
            text = "".join(self._text)
            if tag == "script":
                self.scripts.append((self._open[1], text))
            else:
                self.styles.append(text)
            self._open = None


def blocks(page: str) -> Blocks:
    parser = Blocks()
    parser.feed(page)
    parser.close()
    return parser


def sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def policy(parsed: Blocks) -> str:
    [meta] = [a for t, a in parsed.tags if t == "meta" and a.get("http-equiv")]
    assert meta["http-equiv"] == "Content-Security-Policy"
    return meta["content"]


def hostile_report() -> Any:
    text = f"{HOSTILE} {HOSTILE_MESSAGE} \u2029 </SCRIPT > <!-- <script>"
    attempts = [
        AttemptResult(
            1,
            AttemptOutcome.FAILED,
            0.1,
            phase="call",
            message=text,
            longrepr=f"E   AssertionError: {text}",
            stdout=text,
            stderr=text,
        ),
        AttemptResult(2, AttemptOutcome.PASSED, 0.1, stdout=text),
    ]
    tests = [
        TestResult(HOSTILE_ID, "test_hostile.py", 3, Outcome.FLAKY, attempts),
        result("tests/test_a.py::test_ok", Outcome.PASSED, failures=0, runs=1),
    ]
    return run_report(tests, command=["pytest", HOSTILE], problems=[HOSTILE])


def test_hostile_text_stays_inside_the_data_block_and_reads_back_exactly() -> None:
    report = hostile_report()
    page = render_report_html(report)
    parsed = blocks(page)
    assert [t for t, _ in parsed.tags if t in ("img", "iframe", "object", "embed")] == []
    assert len(parsed.scripts) == 2
    (data_attrs, data_text), (code_attrs, code) = parsed.scripts
    assert data_attrs == {"type": "application/json", "id": "fw-data"}
    assert code_attrs == {}
    # Not one raw "<", ">" or "&" of the data: nothing in it can close the block.
    assert not re.search(r"[<>&\u2028\u2029]", data_text)
    assert json.loads(data_text) == json.loads(json.dumps(report_data(report)))
    assert HOSTILE not in page and "<img" not in page and "<script>alert" not in page
    # No handler attribute anywhere, and no element loads anything.
    for tag, attrs in parsed.tags:
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        assert "src" not in attrs and "href" not in attrs, (tag, attrs)
    assert "innerHTML" not in code and "insertAdjacentHTML" not in code
    assert "document.write" not in code and "eval(" not in code


def test_the_policy_allows_exactly_the_pages_own_script_and_style() -> None:
    parsed = blocks(render_report_html(hostile_report()))
    csp = policy(parsed)
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == sha(parsed.scripts[1][1])
    [style] = parsed.styles
    assert directives["style-src"] == sha(style)
    assert directives["img-src"] == "data:"
    assert directives["base-uri"] == "'none'" and directives["form-action"] == "'none'"
    assert "unsafe" not in csp and "http" not in csp


def test_script_json_escapes_what_could_end_the_block() -> None:
    value = {"a": "</script><!--\u2028\u2029&amp;", "<k>": [1, ">"]}
    text = script_json(value)
    assert not re.search(r"[<>&\u2028\u2029]", text)
    assert json.loads(text) == value


def test_flaky_tests_come_first_then_failures() -> None:
    tests = [
        result("t::passed", Outcome.PASSED, failures=0, runs=1),
        result("t::failed", Outcome.FAILED, failures=3, runs=3),
        result("t::quarantined", Outcome.QUARANTINED, failures=3, runs=3),
        result("t::flaky", Outcome.FLAKY),
        result("t::error", Outcome.ERROR, failures=3, runs=3),
    ]
    data = report_data(run_report(tests))
    assert [row["i"] for row in data["tests"]] == [
        "t::flaky",
        "t::failed",
        "t::error",
        "t::quarantined",
        "t::passed",
    ]
    assert data["tests"][0]["w"] == "fp"
    assert set(data["details"]) == {"0", "1", "2", "3"}  # the passed test has none


def test_long_texts_are_clipped_with_a_marker_under_one_budget() -> None:
    big = "x" * 50_000 + "THE END"
    attempts = [
        AttemptResult(1, AttemptOutcome.FAILED, 1.0, message="boom", longrepr=big, stdout=big),
        AttemptResult(2, AttemptOutcome.FAILED, 1.0, message="boom", longrepr=big, stdout=big),
    ]
    tests = [
        TestResult(f"t::test_{n}", "t.py", 1, Outcome.FAILED, list(attempts)) for n in range(200)
    ]
    report = run_report(tests)
    data = report_data(report)
    first = data["details"]["0"]["attempts"][0]
    assert first["tb"].endswith("THE END") and "characters left out here" in first["tb"]
    assert len(first["tb"]) < 21_000 and len(first["out"]) < 9_000
    last = data["details"]["199"]["attempts"][1]
    assert last["tb"].startswith("[50,007 characters left out to keep this page small")
    assert data["limits"]["dropped"] > 0 and data["limits"]["clipped"] > 0
    page = render_report_html(report)
    assert len(page.encode()) < DETAIL_BUDGET + 500_000


def test_clip_and_budget() -> None:
    assert clip("short", 10, "x") == "short"
    clipped = clip("a" * 100 + "b" * 100, 40, "report.json")
    assert clipped.startswith("a" * 10) and clipped.endswith("b" * 30)
    assert "160 characters left out here; the whole text is in report.json" in clipped
    budget = Budget(1000)
    assert budget.take("y" * 800, 900, "w") == "y" * 800
    assert "left out to keep this page small" in budget.take("z" * 5000, 5000, "w")
    assert budget.take("", 10, "w") == ""


def test_ranges() -> None:
    assert ranges([9, 3, 4, 5, 11, 12]) == "3-5, 9, 11-12"
    assert ranges([]) == ""
    assert ranges([7]) == "7"


def test_unreadable_coverage_xml_gives_no_files(tmp_path: Path) -> None:
    (tmp_path / "coverage.xml").write_text("<coverage><class", encoding="utf-8")
    assert read_file_coverage(tmp_path / "coverage.xml") == ([], 0)
    assert read_file_coverage(tmp_path / "absent.xml") == ([], 0)


# -- real runs -------------------------------------------------------------------------


def test_run_writes_report_html_owned_and_per_file_coverage(report_dir: Path) -> None:
    page = (report_dir / "report.html").read_text(encoding="utf-8")
    manifest = json.loads((report_dir / ".flakewarden-report").read_text(encoding="utf-8"))
    assert "report.html" in manifest["files"]
    parsed = blocks(page)
    data = json.loads(parsed.scripts[0][1])
    report = report_of(report_dir)
    assert data["totals"] == report["totals"]
    assert data["tests"][0]["i"] == "test_flaky.py::test_flaky"
    assert HOSTILE_ID in [r["i"] for r in data["tests"]]
    assert HOSTILE not in page
    rows = {r["i"]: r for r in data["tests"]}
    assert rows["test_calc.py::test_quarantined"]["o"] == "quarantined"
    assert rows["test_calc.py::test_quarantined"]["q"] == 1
    files = {f[0]: f for f in data["coverage"]["files"]}
    assert files["pkg/calc.py"][1:3] == [6, 3] and files["pkg/calc.py"][5] == "5-7"
    flaky = data["details"]["0"]["attempts"]
    assert [a["o"] for a in flaky] == ["failed", "passed"]
    assert "flaked" in flaky[0]["tb"]
    assert len(data["attempts"]) == 3


def test_merge_and_publish_junit_write_it_too(tmp_path: Path) -> None:
    files = {"test_a.py": flaky_module("a"), "test_b.py": "def test_b():\n    pass\n"}
    project = Project(make_project(tmp_path / "proj", files, ini=ISOLATED_INI))
    shards = [project.run("--shard", f"{k}/2", report_dir=f"shard-{k}") for k in (1, 2)]
    for shard in shards:
        assert shard.returncode == 0, shard.stderr
        assert (shard.report_dir / "report.html").is_file()
    merged = tmp_path / "merged"
    done = subprocess.run(
        [PYTHON, "-m", "flakewarden", "merge", "--report-dir", str(merged)]
        + [str(s.report_dir) for s in shards],
        cwd=project.root,
        env=project.env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(blocks((merged / "report.html").read_text("utf-8")).scripts[0][1])
    assert sorted(r["i"] for r in data["tests"]) == ["test_a.py::test_a", "test_b.py::test_b"]
    assert data["tests"][0]["o"] == "flaky"
    assert len(data["run"]["merged_from"]) == 2

    junit = tmp_path / "junit.xml"
    shutil.copy(DATA / "junit-samples" / "pytest" / "pytest-rerunfailures.xml", junit)
    out = tmp_path / "from-junit"
    done = subprocess.run(
        [PYTHON, "-m", "flakewarden", "publish", "--junit", str(junit), "--report-dir", str(out)],
        cwd=tmp_path,
        env=project.env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode in (0, 1), done.stderr
    data = json.loads(blocks((out / "report.html").read_text("utf-8")).scripts[0][1])
    assert data["totals"] == report_of(out)["totals"]
    assert data["run"]["junit_from"]


@pytest.mark.parametrize("outcome", ["flaky", "failed"])
def test_the_rows_carry_what_the_table_shows(outcome: str) -> None:
    test = result("t::x", Outcome(outcome), failures=1 if outcome == "flaky" else 2, runs=2)
    [row] = report_data(run_report([test]))["tests"]
    assert row["o"] == outcome and row["m"] == "assert 1 == 2" and row["l"] == 7
    assert row["f"] == "tests/test_a.py"  # the id does not start with it
