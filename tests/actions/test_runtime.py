"""runtime.py: annotations parsed back as the runner parses them; limits, paths, outputs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Optional

import pytest
from helpers.report_builders import result, run_report
from helpers.workflow_commands import parse_commands, read_output_file, runner_lines

from flakewarden.actions import runtime
from flakewarden.model import Attempt, CoverageSummary, Outcome, RunReport, Subtest, TestResult
from flakewarden.reports import annotations

# -- report builders -----------------------------------------------------------


def report(
    tests: list[TestResult],
    *,
    rootdir: str = "/ws/project",
    exit_code: int = 0,
    collection_errors: Optional[list[str]] = None,
    coverage: Optional[CoverageSummary] = None,
) -> RunReport:
    return run_report(
        tests,
        rootdir=rootdir,
        attempts=[
            Attempt(1, ["python", "-m", "pytest"], "initial", 1, 0.1, [], collection_errors or [])
        ],
        exit_code=exit_code,
        started_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T00:00:01Z",
        coverage=coverage,
    )


HOSTILE_ID = "tests/test_a.py::test_x[::error file=/etc/passwd::owned%0A\r\n::add-mask::x,a:b]"
HOSTILE_MESSAGE = "boom\n::set-output name=outcome::passed\r\n##[error]legacy 100% , : ::warning::x"


def emitted(plan: annotations.AnnotationPlan) -> str:
    stream = io.StringIO()
    runtime.emit_annotations(plan, stream)
    return stream.getvalue()


# -- escaping ------------------------------------------------------------------


def test_hostile_test_name_cannot_emit_a_second_command() -> None:
    rep = report([result(HOSTILE_ID, Outcome.FLAKY, message=HOSTILE_MESSAGE)])
    out = emitted(annotations.plan_annotations(rep, "/ws"))

    commands = parse_commands(out)
    assert len(commands) == 1
    name, properties, data = commands[0]
    assert name == "warning"
    # Every property survives the runner's unescaping exactly, and no other property appears.
    assert properties == {
        "title": f"Flaky test: {HOSTILE_ID}",
        "file": "project/tests/test_a.py",
        "line": "7",
    }
    assert HOSTILE_MESSAGE in data
    # One physical line (plus the final newline), whatever the message held.
    assert len([line for line in runner_lines(out) if line]) == 1


@pytest.mark.parametrize("kind", [Outcome.FAILED, Outcome.FLAKY, Outcome.QUARANTINED])
def test_every_kind_round_trips_percent_colons_and_commas(kind: Outcome) -> None:
    test_id = "t.py::test[100%25,a:b%0A%3A]"
    message = "50% done, a:b %0A literal"
    rep = report([result(test_id, kind, failures=2, runs=2, message=message)], exit_code=1)
    commands = parse_commands(emitted(annotations.plan_annotations(rep, "/ws")))
    assert len(commands) == 1
    _, properties, data = commands[0]
    assert properties["title"].endswith(test_id)
    assert message in data


def test_command_carries_only_the_properties_that_are_set() -> None:
    rep = report([result("t.py::test_a", Outcome.FLAKY)], rootdir="/elsewhere")
    line = emitted(annotations.plan_annotations(rep, "/ws")).strip()
    # No empty "file=,line=,endLine=" left over from unset fields.
    assert line.startswith("::warning title=Flaky test%3A t.py%3A%3Atest_a::")
    assert parse_commands(line)[0][1] == {"title": "Flaky test: t.py::test_a"}


def test_warning_message_names_attempts_and_first_failure_line() -> None:
    rep = report([result("t.py::test_a", Outcome.FLAKY, failures=1, runs=2, message="E1 boom")])
    [(_, _, data)] = parse_commands(emitted(annotations.plan_annotations(rep, "/ws")))
    first_line = data.splitlines()[0]
    assert "1 of 2 attempts failed" in first_line
    assert first_line.endswith(": E1 boom")


# -- ranking and limits ----------------------------------------------------------


def test_kinds_follow_outcomes() -> None:
    rep = report(
        [
            result("t.py::flaky", Outcome.FLAKY),
            result("t.py::failed", Outcome.FAILED, failures=3, runs=3),
            result("t.py::quarantined", Outcome.QUARANTINED, failures=3, runs=3),
            result("t.py::passed", Outcome.PASSED, failures=0, runs=1),
            result("t.py::errored", Outcome.ERROR, failures=3, runs=3),
        ],
        exit_code=1,
    )
    commands = parse_commands(emitted(annotations.plan_annotations(rep, "/ws")))
    assert [(name, props["title"]) for name, props, _ in commands] == [
        ("error", "Failed test: t.py::failed"),
        ("error", "Test error: t.py::errored"),
        ("warning", "Flaky test: t.py::flaky"),
        ("notice", "Quarantined test: t.py::quarantined"),
    ]


def test_limits_keep_ten_of_each_kind_hard_failures_first_and_count_the_rest() -> None:
    tests = [result(f"t.py::flaky_{i:02d}", Outcome.FLAKY) for i in range(13)]
    tests += [
        result(f"t.py::failed_{i:02d}", Outcome.FAILED, failures=3, runs=3) for i in range(11)
    ]
    tests += [
        result(f"t.py::quarantined_{i:02d}", Outcome.QUARANTINED, failures=3, runs=3)
        for i in range(4)
    ]
    rep = report(tests, exit_code=1, collection_errors=["ERROR collecting t2.py"])
    plan = annotations.plan_annotations(rep, "/ws")

    assert plan.dropped == {"error": 2, "warning": 3, "notice": 0}
    assert plan.total_dropped == 5
    commands = parse_commands(emitted(plan))
    kinds = [name for name, _, _ in commands]
    assert kinds == ["error"] * 10 + ["warning"] * 10 + ["notice"] * 4
    titles = [props["title"] for _, props, _ in commands]
    # The first failures in report order; the collection error ranked after them is dropped.
    assert titles[:10] == [f"Failed test: t.py::failed_{i:02d}" for i in range(10)]
    assert "Collection error" not in titles
    assert titles[10:20] == [f"Flaky test: t.py::flaky_{i:02d}" for i in range(10)]


def test_collection_errors_are_errors_after_failed_tests() -> None:
    rep = report(
        [result("t.py::failed", Outcome.FAILED, failures=3, runs=3)],
        exit_code=1,
        collection_errors=["ERROR collecting t2.py: ImportError"],
    )
    commands = parse_commands(emitted(annotations.plan_annotations(rep, "/ws")))
    assert [(n, p["title"]) for n, p, _ in commands] == [
        ("error", "Failed test: t.py::failed"),
        ("error", "Collection error"),
    ]
    assert commands[1][2] == "ERROR collecting t2.py: ImportError"


# -- paths ---------------------------------------------------------------------


def test_paths_relative_to_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    root = workspace / "sub" / "project"
    root.mkdir(parents=True)
    assert annotations.workspace_path(str(root), "tests/test_a.py", str(workspace)) == (
        "sub/project/tests/test_a.py"
    )
    # rootdir equal to the workspace
    assert annotations.workspace_path(str(workspace), "t.py", str(workspace)) == "t.py"


@pytest.mark.parametrize(
    ("rootdir", "file"),
    [
        ("/elsewhere/project", "tests/test_a.py"),  # outside the workspace
        ("{ws}", "../outside/test_a.py"),  # escapes upwards
        ("{ws}", ""),  # no file recorded
        ("", "tests/test_a.py"),  # no rootdir: cannot tell
    ],
)
def test_paths_outside_the_workspace_get_no_file(tmp_path: Path, rootdir: str, file: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    root = rootdir.format(ws=workspace)
    assert annotations.workspace_path(root, file, str(workspace)) is None
    rep = report([result("t.py::test_a", Outcome.FLAKY, file=file)], rootdir=root)
    [(_, properties, _)] = parse_commands(
        emitted(annotations.plan_annotations(rep, str(workspace)))
    )
    assert "file" not in properties
    assert "line" not in properties


def test_no_workspace_means_no_file() -> None:
    assert annotations.workspace_path("/ws/project", "t.py", None) is None


def test_symlinked_workspace_still_attaches(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "project").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    assert annotations.workspace_path(str(real / "project"), "t.py", str(link)) == "project/t.py"


def test_missing_line_attaches_file_only() -> None:
    rep = report([result("t.py::test_a", Outcome.FLAKY, line=None)])
    [(_, properties, _)] = parse_commands(emitted(annotations.plan_annotations(rep, "/ws")))
    assert properties == {"title": "Flaky test: t.py::test_a", "file": "project/tests/test_a.py"}


# -- outputs and publish ---------------------------------------------------------


@pytest.mark.parametrize(
    ("exit_code", "outcome"),
    [(0, "passed"), (1, "failed"), (2, "interrupted"), (3, "error"), (5, "no-tests")],
)
def test_outcome_names(exit_code: int, outcome: str) -> None:
    assert runtime.outcome_of(report([], exit_code=exit_code)) == outcome


def test_publish_writes_annotations_summary_and_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "project").mkdir(parents=True)
    output = tmp_path / "output"
    summary = tmp_path / "summary"
    output.write_text("", encoding="utf-8")
    summary.write_text("earlier step text\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    rep = report(
        [
            result("t.py::flaky", Outcome.FLAKY),
            result("t.py::ok", Outcome.PASSED, failures=0, runs=1),
            result("t.py::ok2", Outcome.PASSED, failures=0, runs=1),
        ],
        rootdir=str(workspace / "project"),
        coverage=CoverageSummary(percent=91.256, precision=2),
    )
    runtime.publish(rep, tmp_path / "report", artifact_name="flakewarden-test-0-attempt-1")

    commands = parse_commands(capsys.readouterr().out)
    assert [(n, p.get("file"), p.get("line")) for n, p, _ in commands] == [
        ("warning", "project/tests/test_a.py", "7")
    ]
    assert read_output_file(output) == {
        "outcome": "flaky",
        "passed": "2",
        "failed": "0",
        "flaky": "1",
        "quarantined": "0",
        "quarantine-known": "0",
        "report-dir": str(tmp_path / "report"),
        "coverage": "91.26",
    }
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step text\n## flakewarden: passed (1 flaky)")
    assert "flakewarden\\-test" not in text  # artifact names are not over-escaped
    assert "**flakewarden-test-0-attempt-1**" in text


def test_outputs_cannot_be_forged_by_a_value_with_newlines(tmp_path: Path) -> None:
    output = tmp_path / "output"
    output.write_text("", encoding="utf-8")
    forged = tmp_path / "dir\noutcome=passed"
    runtime.write_outputs(
        {"report-dir": str(forged), "outcome": "failed"}, {"GITHUB_OUTPUT": str(output)}
    )
    assert read_output_file(output) == {"report-dir": str(forged), "outcome": "failed"}


def test_publish_outside_actions_writes_no_files(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
    runtime.publish(report([result("t.py::flaky", Outcome.FLAKY)]), Path("r"))
    assert len(parse_commands(capsys.readouterr().out)) == 1


# -- the publish subcommand ------------------------------------------------------


def _cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flakewarden", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_publish_command_reads_a_saved_report(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "project").mkdir(parents=True)
    report_dir = workspace / "project" / "flakewarden-report"
    report_dir.mkdir()
    rep = report(
        [result(HOSTILE_ID, Outcome.FLAKY, message=HOSTILE_MESSAGE)],
        rootdir=str(workspace / "project"),
    )
    (report_dir / "report.json").write_text(json.dumps(rep.to_json()), encoding="utf-8")
    output = tmp_path / "output"
    summary = tmp_path / "summary"
    output.touch()
    summary.touch()
    secret = f"ghs_{uuid.uuid4().hex}"
    env = {
        **os.environ,
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_TOKEN": secret,
    }
    proc = _cli(
        ["publish", "--report-dir", str(report_dir), "--artifact-name", "evidence"],
        env,
        workspace,
    )
    assert proc.returncode == 0, proc.stderr
    commands = parse_commands(proc.stdout)
    assert len(commands) == 1
    assert commands[0][1]["title"] == f"Flaky test: {HOSTILE_ID}"
    assert read_output_file(output)["flaky"] == "1"
    assert "**evidence**" in summary.read_text(encoding="utf-8")
    for text in (proc.stdout, proc.stderr, summary.read_text(encoding="utf-8")):
        assert secret not in text


def test_publish_command_without_a_report_is_a_clear_error(tmp_path: Path) -> None:
    proc = _cli(["publish", "--report-dir", str(tmp_path / "none")], dict(os.environ), tmp_path)
    assert proc.returncode == 4
    assert proc.stderr.strip().startswith("flakewarden: error: ")
    assert "report.json not found" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_publish_command_rejects_a_corrupt_report(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text('{"schema": 1, "tests": [{}]}', encoding="utf-8")
    proc = _cli(["publish", "--report-dir", str(tmp_path)], dict(os.environ), tmp_path)
    assert proc.returncode == 3
    assert "not a valid flakewarden report" in proc.stderr


def test_annotation_names_the_failed_subtests_by_attempt() -> None:
    test = result("tests/test_a.py::test_sub", Outcome.FLAKY, message="subtest (i=1) failed: E")
    test.attempts[0].subtests = [Subtest("(i=1)", "failed", longrepr="E   ValueError: x")]
    test.attempts[1].subtests = [Subtest("(i=1)", "passed")]
    (annotation,) = annotations.plan_annotations(report([test])).annotations
    assert annotation.message.startswith(
        "Failed, then passed on a rerun (1 of 2 attempts failed): subtest (i=1) failed: E\n"
        "Failed subtests, by attempt: (i=1) failed, passed\n"
    )


def test_a_disagreement_with_pytest_is_a_warning_ahead_of_the_flakes() -> None:
    flakes = [result(f"tests/test_a.py::test_{n}", Outcome.FLAKY) for n in range(12)]
    rep = report(flakes)
    rep.attempts[0].disagreements = ["failed: pytest 1, flakewarden 0"]
    plan = annotations.plan_annotations(rep)
    first = plan.annotations[0]
    assert (first.kind, first.title) == ("warning", annotations.DISAGREEMENT_TITLE)
    assert first.message.startswith("attempt 1: flakewarden's records disagree")
    assert plan.dropped["warning"] == 3  # a flake is dropped, never the disagreement
