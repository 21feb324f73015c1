"""summary.py: the job summary's content, escaping and the 1 MiB cap."""

from __future__ import annotations

import re

import pytest
from helpers.report_builders import result, run_report

from flakewarden.model import Attempt, CoverageSummary, Outcome, RunReport, Subtest, TestResult
from flakewarden.reports.markdown import CELL_LIMIT, escape
from flakewarden.reports.summary import SUMMARY_LIMIT, render_summary

MIB = 1024 * 1024


def report(tests: list[TestResult], *, exit_code: int = 0, **extra: object) -> RunReport:
    rep = run_report(
        tests,
        rootdir="/ws",
        attempts=[Attempt(1, ["python", "-m", "pytest"], "initial")],
        exit_code=exit_code,
        started_at="",
        finished_at="",
    )
    for key, value in extra.items():
        setattr(rep, key, value)
    return rep


def table_rows(text: str, heading: str) -> list[list[str]]:
    """Cells of the table under ``heading``, split on unescaped pipes as GFM does."""
    section = text.split(heading, 1)[1]
    rows = []
    for line in section.splitlines():
        if line.startswith("### "):
            break
        if line.startswith("|") and not line.startswith("|---"):
            cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            rows.append([c.strip() for c in cells])
    return rows[1:]  # without the header row


def test_totals_and_table_of_flaky_and_failed_tests() -> None:
    rep = report(
        [
            result("t.py::test_flaky", Outcome.FLAKY, message="E1 boom"),
            result("t.py::test_ok", Outcome.PASSED, failures=0, runs=1),
            result("t.py::test_broken", Outcome.FAILED, failures=3, runs=3, line=12),
        ],
        exit_code=1,
    )
    text = render_summary(rep, artifact_name="flakewarden-test-0-attempt-1")
    assert text.startswith("## flakewarden: failed (1 flaky, 1 failed)\n")
    assert "| 3 | 1 | 1 | 1 | 0 | 0 | 0 |" in text
    assert table_rows(text, "### Failed and flaky tests") == [
        [
            "failed",
            r"t.py:\:test\_broken",
            "3 of 3 failed",
            "assert 1 == 2",
            r"tests/test\_a.py:12",
        ],
        ["flaky", r"t.py:\:test\_flaky", "1 of 2 failed", "E1 boom", r"tests/test\_a.py:7"],
    ]
    assert "**flakewarden-test-0-attempt-1**" in text
    assert "### Quarantined tests" not in text
    assert "did not fit" not in text


def test_green_run_says_passed_and_has_no_table() -> None:
    text = render_summary(report([result("t.py::ok", Outcome.PASSED, failures=0, runs=1)]))
    assert text.startswith("## flakewarden: passed\n")
    assert "### Failed and flaky tests" not in text
    assert "artifact" not in text  # no name given, none invented


def test_quarantined_tests_have_their_own_section() -> None:
    rep = report(
        [
            result("t.py::q", Outcome.QUARANTINED, failures=3, runs=3),
            result("t.py::flaky", Outcome.FLAKY),
        ]
    )
    text = render_summary(rep)
    assert [r[1] for r in table_rows(text, "### Failed and flaky tests")] == [r"t.py:\:flaky"]
    assert table_rows(text, "### Quarantined tests") == [
        ["quarantined", r"t.py:\:q", "3 of 3 failed", "assert 1 == 2", r"tests/test\_a.py:7"]
    ]
    assert "do not fail the job" in text


def test_coverage_section() -> None:
    cov = CoverageSummary(percent=78.126, precision=2, fail_under=80.0, files_combined=3)
    text = render_summary(report([], coverage=cov))
    assert (
        "Coverage: **78.13%** (below the 80% threshold: total of 78.13 is less than "
        "fail-under=80.00), combined from 3 data files across attempts."
    ) in text
    # coverage.py's default precision is 0: shown as `coverage report` shows it, no more digits.
    default = CoverageSummary(percent=78.19047619047619, files_combined=1)
    assert "Coverage: **78%**, combined" in render_summary(report([], coverage=default))
    # A report.json written before the precision was kept shows the digits it holds.
    old = CoverageSummary.from_json({"percent": 78.0, "fail_under": 80, "files_combined": 2})
    assert "Coverage: **78%** (below the 80% threshold)," in render_summary(
        report([], coverage=old)
    )
    cov_ok = CoverageSummary(percent=95.0, fail_under=80.0, files_combined=2)
    assert "(meets the 80% threshold)" in render_summary(report([], coverage=cov_ok))
    assert "### Coverage" not in render_summary(report([]))


def test_states_how_many_annotations_did_not_fit() -> None:
    tests = [result(f"t.py::flaky_{i}", Outcome.FLAKY) for i in range(14)]
    tests += [result(f"t.py::failed_{i}", Outcome.FAILED, failures=3, runs=3) for i in range(12)]
    text = render_summary(report(tests, exit_code=1))
    assert (
        "6 annotations did not fit GitHub's limit of 10 per type per step (2 errors, 4 warnings)"
        in text
    )
    # Every test is still in the table.
    assert len(table_rows(text, "### Failed and flaky tests")) == 26


@pytest.mark.parametrize(
    ("raw", "forbidden", "expected"),
    [
        ("a|b", "a|b", "a\\|b"),
        ("<script>alert(1)</script>", "<script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("<!-- hide", "<!--", "&lt;!-- hide"),
        ("@octocat", "@octocat", "@\u200boctocat"),
        ("see #123", "#123", "see #\u200b123"),
        ("::error::x ##[group]y", "##[", ":\\:error:\\:x #\u200b#\u200b\\[group\\]y"),
        ("https://e.com www.e.com", "://", "https:\\//e.com www\\.e.com"),
        ("`code`", "`code`", "\\`code\\`"),
        ("[x](javascript:alert(1))", "[x](", "\\[x\\]\\(javascript:alert(1))"),
        ("**bold**", "**bold**", "\\*\\*bold\\*\\*"),
    ],
)
def test_escaping(raw: str, forbidden: str, expected: str) -> None:
    escaped = escape(raw, CELL_LIMIT)
    assert forbidden not in escaped
    assert escaped == expected  # every character still shown, none of them markup
    # Each run of line breaks becomes one space: one line, no visible character dropped.
    assert escape(raw + "\nsecond line\r\n", CELL_LIMIT) == expected + " second line"


def test_hostile_id_stays_in_its_cell() -> None:
    hostile = "t.py::test[a|b|c\n## Heading <img src=x> @everyone `x`]"
    rep = report([result(hostile, Outcome.FLAKY, message="x | y\n- item @me")])
    text = render_summary(rep)
    rows = table_rows(text, "### Failed and flaky tests")
    assert len(rows) == 1
    assert len(rows[0]) == 5  # the pipes did not make new cells
    assert "\n## Heading" not in text
    assert "<img" not in text
    assert "@everyone" not in text and "@me" not in text


def test_long_cells_are_cut() -> None:
    rep = report([result("t.py::t", Outcome.FLAKY, message="x" * 5000)])
    [row] = table_rows(render_summary(rep), "### Failed and flaky tests")
    assert row[3] == "x" * 499 + "…"  # CELL_LIMIT (500) characters, the last one the ellipsis


def test_default_cap_is_safely_below_one_mib() -> None:
    assert SUMMARY_LIMIT < MIB
    tests = [
        result(f"tests/test_many.py::test_{i}_" + "n" * 200, Outcome.FLAKY, message="m" * 400)
        for i in range(3000)
    ]
    text = render_summary(report(tests), artifact_name="evidence")
    size = len(text.encode("utf-8"))
    assert size <= SUMMARY_LIMIT
    rows = table_rows(text, "### Failed and flaky tests")
    assert 0 < len(rows) < 3000
    assert f"**{3000 - len(rows)} rows left out**" in text
    # What follows the table survives the cut.
    assert "**evidence**" in text


# Up to 2000 bytes even the rows' heading and the 1.5 kB of problems above them do not fit
# with a row: the text is cut, last resort; at 10,000 it is cut by whole rows.
@pytest.mark.parametrize(
    ("limit", "by_rows"), [(50, False), (400, False), (2000, False), (10_000, True)]
)
def test_any_limit_is_respected(limit: int, by_rows: bool) -> None:
    tests = [result(f"t.py::test_{i}", Outcome.FAILED, failures=3, runs=3) for i in range(200)]
    problems = ["a problem " * 30] * 5
    text = render_summary(report(tests, exit_code=1, problems=problems), limit=limit)
    assert len(text.encode("utf-8")) <= limit
    if by_rows:
        rows = table_rows(text, "### Failed and flaky tests")
        assert f"**{200 - len(rows)} rows left out**" in text  # every one of the 200 told
        assert "Summary truncated" not in text
    else:
        # The notice itself is cut at 50 bytes: its first 30 still say it.
        assert "**Summary truncated**" in text and "rows left out" not in text


def test_multibyte_text_counts_bytes_not_characters() -> None:
    tests = [result(f"t.py::test_{i}_ünïcødé_✓✓✓", Outcome.FLAKY) for i in range(500)]
    text = render_summary(report(tests), limit=20_000)
    size = len(text.encode("utf-8"))
    rows = [line for line in text.splitlines() if line.startswith("| ") and "ünïcødé" in line]
    row_bytes = max(len(row.encode("utf-8")) + 1 for row in rows)
    assert size <= 20_000
    # Cut by whole rows, every one of the 500 accounted for, none cut by the last resort.
    assert f"**{500 - len(rows)} rows left out**" in text and "Summary truncated" not in text
    # The bytes are used up to the 300 reserved for the notice (within a row or two)...
    assert 20_000 - 300 - 2 * row_bytes < size
    # ...while in characters there is room for ten more rows: the limit counted bytes.
    assert len(text) + 10 * row_bytes < 20_000


def test_cutoff_problems_and_collection_errors_are_stated() -> None:
    rep = report([], exit_code=1, cutoff=True, max_failures=10, problems=["exit code 3 | odd"])
    rep.attempts[0].collection_errors = ["ERROR collecting t2.py"]
    text = render_summary(rep)
    assert "More than 10 tests failed, so none were rerun" in text
    assert r"- exit code 3 \| odd" in text
    assert "- Collection error: ERROR collecting t2.py" in text


def _with_subtests(test: TestResult, *outcomes_by_attempt: list[tuple[str, str]]) -> TestResult:
    for attempt, subtests in zip(test.attempts, outcomes_by_attempt):
        attempt.subtests = [
            Subtest(
                description,
                outcome,
                longrepr="E   ValueError: bad|cell" if outcome == "failed" else "",
            )
            for description, outcome in subtests
        ]
    return test


def test_failed_subtests_are_named_with_their_outcome_on_every_attempt() -> None:
    flaky = _with_subtests(
        result("t.py::test_flaky", Outcome.FLAKY, message="subtest (i=1) failed: ValueError"),
        [("(i=0)", "passed"), ("(i=1)", "failed")],
        [("(i=0)", "passed"), ("(i=1)", "passed")],
    )
    text = render_summary(report([flaky]))
    assert table_rows(text, "### Failed subtests") == [
        [r"t.py:\:test\_flaky", "(i=1)", "failed, passed", r"ValueError: bad\|cell"],
    ]


def test_a_disagreement_with_pytest_is_a_warning_block_at_the_top() -> None:
    rep = report([result("t.py::ok", Outcome.PASSED, failures=0, runs=1)])
    rep.attempts[0].disagreements = ["failed: pytest 1, flakewarden 0", "pytest failed <b>x|y</b>"]
    text = render_summary(rep)
    head = text.partition("| Tests |")[0]
    assert "> [!WARNING]" in head
    assert (
        "> - Attempt 1: failed: pytest 1, flakewarden 0; pytest failed &lt;b&gt;x\\|y&lt;/b&gt;"
        in head
    )
    clean = render_summary(report([result("t.py::ok", Outcome.PASSED, failures=0, runs=1)]))
    assert "[!WARNING]" not in clean
