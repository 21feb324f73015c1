"""Blame where people look: annotations, the job summary and the console's BLAME lines."""

from __future__ import annotations

import io
import re
from typing import Optional

import pytest
from helpers.report_builders import result, run_report
from helpers.workflow_commands import parse_commands, runner_lines

from flakewarden.actions import runtime
from flakewarden.model import Attempt, Outcome, RunReport, TestResult
from flakewarden.model.blame import BaseCheck, BlameRun, TestChange
from flakewarden.reports.annotations import ERROR, NOTICE, WARNING, plan_annotations
from flakewarden.reports.blame_lines import blame_lines
from flakewarden.reports.summary import render_summary

HOSTILE_WHY = "no coverage ::error::owned <script>alert(1)</script> a|b ##[warning]x\n::x::"
HOSTILE_FILE = "src/a|b::error::<script>.py"

TOUCHES = TestChange("touches", {"src/shop/cart.py": [(10, 11), (20, 20)]})
UNTOUCHED = TestChange("untouched")
FAILS = BaseCheck("fails", "1a2b3c4d5e6f7a8b")
PASSES = BaseCheck("passes", "1a2b3c4d5e6f7a8b")


def judged(
    test_id: str,
    outcome: Outcome,
    change: Optional[TestChange],
    base: Optional[BaseCheck] = None,
) -> TestResult:
    failures, runs = (1, 2) if outcome == Outcome.FLAKY else (3, 3)
    test = result(test_id, outcome, failures=failures, runs=runs)
    test.change, test.base = change, base
    return test


def report(tests: list[TestResult], blame: Optional[BlameRun] = None) -> RunReport:
    failed = any(t.outcome in (Outcome.FAILED, Outcome.ERROR) for t in tests)
    return run_report(
        tests,
        rootdir="/ws",
        attempts=[Attempt(1, ["python", "-m", "pytest"], "initial")],
        exit_code=1 if failed else 0,
        blame=blame,
    )


def blame_run(policy: str = "report", ignored: tuple[str, ...] = ()) -> BlameRun:
    return BlameRun(
        base="origin/main",
        merge_base="1a2b3c4d5e6f7a8b9c0d",
        files=["src/shop/cart.py", "src/shop/tax.py"],
        changed_lines=12,
        policy=policy,
        ignored=list(ignored),
    )


def emitted(rep: RunReport) -> list[tuple[str, dict[str, str], str]]:
    stream = io.StringIO()
    runtime.emit_annotations(plan_annotations(rep, "/ws"), stream)
    out = stream.getvalue()
    # One physical line per annotation, whatever blame's text held.
    assert len([line for line in runner_lines(out) if line]) == len(
        plan_annotations(rep).annotations
    )
    return parse_commands(out)


# -- annotations ---------------------------------------------------------------


def test_annotations_say_what_each_failure_ran_and_how_the_base_did() -> None:
    rep = report(
        [
            judged("t.py::test_cart", Outcome.FAILED, TOUCHES, PASSES),
            judged("t.py::test_clock", Outcome.FLAKY, UNTOUCHED, FAILS),
            judged("t.py::test_io", Outcome.FLAKY, TestChange("unknown", why="it forks")),
            judged("t.py::test_plain", Outcome.FAILED, None),
        ],
        blame_run(),
    )
    by_title = {props["title"]: (kind, data) for kind, props, data in emitted(rep)}
    kind, data = by_title["Failed test: t.py::test_cart"]
    assert kind == ERROR
    assert "\nRan 3 changed lines in src/shop/cart.py. Passes on the base.\n" in data
    kind, data = by_title["Flaky test: t.py::test_clock"]
    assert kind == WARNING
    assert "\nRan none of this pull request's changes. Fails on the base too.\n" in data
    _, data = by_title["Flaky test: t.py::test_io"]
    assert "\nCannot tell whether it ran the change: it forks.\n" in data
    assert "on the base" not in data  # no base check, nothing said about one
    _, data = by_title["Failed test: t.py::test_plain"]
    assert "change" not in data and "base" not in data


def test_a_reason_ending_in_a_full_stop_gets_one() -> None:
    change = TestChange("unknown", why="the test spawns a process.")
    base = BaseCheck("error", why="the base does not install.")
    rep = report([judged("t.py::test_a", Outcome.FAILED, change, base)], blame_run())
    [(_, _, data)] = emitted(rep)
    assert (
        "Cannot tell whether it ran the change: the test spawns a process. "
        "Could not be run on the base: the base does not install.\n"
    ) in data


@pytest.mark.parametrize(
    ("policy", "change", "base", "kind"),
    [
        ("report", UNTOUCHED, FAILS, ERROR),
        ("warn", UNTOUCHED, FAILS, WARNING),
        ("warn", UNTOUCHED, PASSES, ERROR),  # the base passes: the change may have broken it
        ("warn", TOUCHES, FAILS, ERROR),  # it ran the change
        ("warn", TestChange("unknown"), FAILS, ERROR),
        ("warn", UNTOUCHED, None, ERROR),  # the base was not checked
        ("warn", UNTOUCHED, BaseCheck("error", why="no venv"), ERROR),  # nor could it be
    ],
)
def test_warn_policy_downgrades_only_untouched_failures_failing_on_the_base(
    policy: str, change: TestChange, base: Optional[BaseCheck], kind: str
) -> None:
    rep = report([judged("t.py::test_a", Outcome.FAILED, change, base)], blame_run(policy))
    [(got, props, data)] = emitted(rep)
    assert got == kind
    assert props["title"] == "Failed test: t.py::test_a"
    said = "A warning, not an error (blame.untouched_failures: warn)"
    assert (said in data) == (kind == WARNING)


def test_ignore_in_gate_says_the_test_does_not_block_the_merge() -> None:
    rep = report(
        [
            judged("t.py::test_ignored", Outcome.FAILED, UNTOUCHED, FAILS),
            judged("t.py::test_kept", Outcome.FAILED, TOUCHES, FAILS),
        ],
        blame_run("ignore-in-gate", ignored=("t.py::test_ignored",)),
    )
    by_title = {props["title"]: (kind, data) for kind, props, data in emitted(rep)}
    kind, data = by_title["Failed test, not blocking the merge: t.py::test_ignored"]
    assert kind == WARNING
    assert (
        "\nThis does not block the merge: it ran none of this pull request's changes "
        "and fails on the base too.\n\n"
    ) in data
    assert "Ran none" not in data  # said once, in the gate's note
    kind, data = by_title["Failed test: t.py::test_kept"]
    assert kind == ERROR and "block the merge" not in data


def test_quarantined_stays_a_notice_whatever_the_policy() -> None:
    test = judged("t.py::test_q", Outcome.QUARANTINED, UNTOUCHED, FAILS)
    rep = report([test], blame_run("ignore-in-gate", ignored=("t.py::test_q",)))
    [(kind, _, data)] = emitted(rep)
    assert kind == NOTICE
    assert "Ran none of this pull request's changes. Fails on the base too." in data


def test_hostile_reason_and_file_form_no_workflow_command() -> None:
    change = TestChange("touches", {HOSTILE_FILE: [(1, 1)]})
    rep = report(
        [
            judged("t.py::test_a", Outcome.FAILED, change, BaseCheck("error", why=HOSTILE_WHY)),
            judged("t.py::test_b", Outcome.FLAKY, TestChange("unknown", why=HOSTILE_WHY)),
        ],
        blame_run(),
    )
    commands = emitted(rep)
    # Exactly the two annotations: nothing in the reasons became a command of its own.
    assert [(kind, props["title"]) for kind, props, _ in commands] == [
        (ERROR, "Failed test: t.py::test_a"),
        (WARNING, "Flaky test: t.py::test_b"),
    ]
    # The runner hands back the text exactly as blame wrote it.
    assert f"Ran 1 changed line in {HOSTILE_FILE}." in commands[0][2]
    assert f"Could not be run on the base: {HOSTILE_WHY}" in commands[0][2]
    assert f"Cannot tell whether it ran the change: {HOSTILE_WHY}" in commands[1][2]


# -- the job summary -----------------------------------------------------------


def failed_rows(text: str) -> list[list[str]]:
    section = text.split("### Failed and flaky tests", 1)[1].split("\n### ", 1)[0]
    rows = [
        [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        for line in section.splitlines()
        if line.startswith("|") and not line.startswith("|---")
    ]
    return rows


def test_summary_has_a_blame_line_and_a_blame_column() -> None:
    rep = report(
        [
            judged("t.py::test_cart", Outcome.FAILED, TOUCHES, PASSES),
            judged("t.py::test_clock", Outcome.FLAKY, UNTOUCHED, FAILS),
            judged("t.py::test_io", Outcome.FLAKY, TestChange("unknown")),
            judged("t.py::test_old", Outcome.FLAKY, None),
        ],
        blame_run(),
    )
    text = render_summary(rep)
    assert (
        "**Blame:** Judged against origin/main (merge base 1a2b3c4d5e6f): 12 changed lines "
        "in 2 files; 1 failed test ran the change, 1 did not, 1 unknown.\n"
    ) in text
    # Near the top: before the tables.
    assert text.index("**Blame:**") < text.index("### Failed and flaky tests")
    head, *rows = failed_rows(text)
    assert head[-1] == "Blame"
    blame = {row[1]: row[-1] for row in rows}
    assert all(len(row) == len(head) for row in rows)
    assert blame == {
        "t.py:\\:test\\_cart": "ran 3 changed lines in src/shop/cart.py; passes on the base",
        "t.py:\\:test\\_clock": "ran none of this pull request's changes; fails on the base too",
        "t.py:\\:test\\_io": "cannot tell whether it ran the change",
        "t.py:\\:test\\_old": "",
    }


def test_summary_without_blame_keeps_its_five_columns() -> None:
    text = render_summary(report([judged("t.py::test_a", Outcome.FAILED, None)]))
    assert "Blame" not in text
    head, row = failed_rows(text)
    assert len(head) == len(row) == 5


def test_summary_says_why_blame_could_not_run_on_one_line() -> None:
    blame = BlameRun(base="main", unavailable="a shallow clone\n## fetch <b>more</b> | history")
    text = render_summary(report([judged("t.py::test_a", Outcome.FAILED, None)], blame))
    [line] = [line for line in text.splitlines() if line.startswith("**Blame:**")]
    assert line == (
        "**Blame:** not judged against main: a shallow clone #\u200b#\u200b fetch "
        "&lt;b&gt;more&lt;/b&gt; "
        "\\| history"
    )
    assert "Judged against" not in text


def test_summary_lists_the_tests_kept_out_of_the_gate() -> None:
    ignored = "t.py::test_x[a|b]"
    rep = report(
        [judged(ignored, Outcome.FAILED, UNTOUCHED, FAILS)],
        blame_run("ignore-in-gate", ignored=(ignored,)),
    )
    text = render_summary(rep)
    assert (
        "1 failed test did not block the merge (`blame.untouched_failures: ignore-in-gate`): "
        "each ran none of this pull request's changes and fails on the base too."
    ) in text
    assert "\n- t.py:\\:test\\_x\\[a\\|b\\]\n" in text


def test_summary_counts_the_failures_the_warn_policy_only_warned() -> None:
    rep = report(
        [
            judged("t.py::test_a", Outcome.FAILED, UNTOUCHED, FAILS),
            judged("t.py::test_b", Outcome.FAILED, UNTOUCHED, PASSES),
        ],
        blame_run("warn"),
    )
    assert "1 failed test ran none of this pull request's changes and fail" in render_summary(rep)


def test_summary_escapes_a_hostile_reason_and_file_in_its_cell() -> None:
    change = TestChange("touches", {HOSTILE_FILE: [(1, 2)]})
    rep = report(
        [judged("t.py::test_a", Outcome.FAILED, change, BaseCheck("error", why=HOSTILE_WHY))],
        blame_run(),
    )
    text = render_summary(rep)
    assert "<script>" not in text
    head, row = failed_rows(text)
    assert len(row) == len(head) == 6  # no pipe in the reason split the cell
    assert row[-1] == (
        "ran 2 changed lines in src/a\\|b:\\:error:\\:&lt;script&gt;.py; could not be run on "
        "the base: no coverage :\\:error:\\:owned &lt;script&gt;alert(1)&lt;/script&gt; a\\|b "
        "#\u200b#\u200b\\[warning\\]x :\\:x:\\:"
    )


# -- the console ---------------------------------------------------------------


def test_blame_lines_name_each_judged_test_failures_first() -> None:
    rep = report(
        [
            judged("t.py::test_clock", Outcome.FLAKY, UNTOUCHED, FAILS),
            judged("t.py::test_cart", Outcome.FAILED, TOUCHES),
            judged("t.py::test_old", Outcome.FAILED, None),
            judged("t.py::test_gate", Outcome.FAILED, UNTOUCHED, FAILS),
        ],
        blame_run("ignore-in-gate", ignored=("t.py::test_gate",)),
    )
    assert blame_lines(rep) == [
        "BLAME: t.py::test_cart (ran 3 changed lines in src/shop/cart.py)",
        "BLAME: t.py::test_gate (ran none of this pull request's changes; fails on the base "
        "too; not blocking the merge)",
        "BLAME: t.py::test_clock (ran none of this pull request's changes; fails on the base too)",
    ]


def test_blame_lines_under_warn_and_when_unavailable() -> None:
    warned = report([judged("t.py::t", Outcome.FAILED, UNTOUCHED, FAILS)], blame_run("warn"))
    assert blame_lines(warned) == [
        "BLAME: t.py::t (ran none of this pull request's changes; fails on the base too; "
        "a warning, not an error)"
    ]
    gone = report([], BlameRun(base="main", unavailable="shallow clone: fetch-depth: 0"))
    assert blame_lines(gone) == ["BLAME: not judged against main: shallow clone: fetch-depth: 0"]
    assert blame_lines(report([judged("t.py::t", Outcome.FAILED, None)])) == []


def test_blame_lines_are_one_inert_line_each() -> None:
    hostile_id = "t.py::test[\n::error::x]"
    change = TestChange("touches", {HOSTILE_FILE: [(1, 1)]})
    rep = report(
        [judged(hostile_id, Outcome.FAILED, change, BaseCheck("error", why=HOSTILE_WHY))],
        BlameRun(base="main\n::warning::y"),
    )
    rep.blame.unavailable = HOSTILE_WHY  # type: ignore[union-attr]
    lines = blame_lines(rep)
    assert len(lines) == 2
    out = "".join(line + "\n" for line in lines)
    assert len([line for line in runner_lines(out) if line]) == 2
    assert parse_commands(out) == []
    assert "##[" not in out
    assert lines[1].startswith("BLAME: t.py::test[\\n::error::x] (ran 1 changed line in ")
