"""Attacks on the job log, end to end: what a hostile test can make the runner act on.

Each test runs the real CLI on a real pytest project (or against the GitHub
emulator over loopback) and reads its output the way actions/runner does
(``workflow_commands``: the ``::`` form, the legacy ``##[`` form anywhere in a
line, ``stop-commands`` fences). Only flakewarden's own commands may appear.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import emulator_env, flaky, write_report
from helpers.project import Project, flaky_module
from helpers.workflow_commands import command_stream, only_ours

from flakewarden import cli


def actions_env(project: Project, tmp_path: Path) -> dict[str, str]:
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(tmp_path / "outputs"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
        "GITHUB_WORKSPACE": str(project.root),
    }


REAL_FAILURE = "def test_real():\n    assert 1 == 2, 'a real failure'\n"


@pytest.mark.parametrize("quiet", [False, True], ids=["echoed", "quiet"])
def test_a_legacy_stop_commands_in_a_test_id_does_not_silence_annotations(
    project: Project, tmp_path: Path, quiet: bool
) -> None:
    project.write(
        "tests/test_flaky.py",
        flaky_module("f").replace(
            "def test_f():",
            "import pytest\n\n"
            "@pytest.mark.parametrize('n', [1], ids=['x##[stop-commands]hide'])\ndef test_f(n):",
        ),
    )
    project.write("tests/test_real.py", REAL_FAILURE)
    args = ("-q",) if quiet else ()
    result = project.run(*args, env=actions_env(project, tmp_path))
    assert result.returncode == 1, result.stdout + result.stderr
    flaky_id = "tests/test_flaky.py::test_f[x##[stop-commands]hide]"
    assert result.outcomes[flaky_id] == "flaky"  # the data keeps the exact id
    annotations = only_ours(command_stream(result.stdout + "\n" + result.stderr), fenced=not quiet)
    titles = [(c.name, c.properties.get("title")) for c in annotations]
    assert titles == [
        ("error", "Failed test: tests/test_real.py::test_real"),
        ("warning", f"Flaky test: {flaky_id}"),
    ]
    assert "FLAKY-TEST-DETECTED: tests/test_flaky.py::test_f[x##\\x5bstop-commands]hide]" in (
        result.stdout
    )


@pytest.mark.parametrize("quiet", [False, True], ids=["echoed", "quiet"])
def test_an_import_time_legacy_error_is_not_an_annotation(
    project: Project, tmp_path: Path, quiet: bool
) -> None:
    project.write("tests/conftest.py", "raise RuntimeError('##[error]INJECTED by conftest')\n")
    project.write("tests/test_a.py", "def test_a():\n    pass\n")
    args = ("-q",) if quiet else ()
    result = project.run(*args, env=actions_env(project, tmp_path))
    assert result.returncode == 4, result.stdout + result.stderr
    assert "INJECTED by conftest" in result.stderr  # said, as data
    annotations = only_ours(command_stream(result.stdout + "\n" + result.stderr), fenced=not quiet)
    assert not [c for c in annotations if "INJECTED" in c.data], annotations


def test_a_child_ending_without_a_newline_still_resumes_commands(
    project: Project, tmp_path: Path
) -> None:
    # The last thing the test process writes is "bye", with no newline, at exit.
    project.write(
        "tests/conftest.py",
        "import atexit, os\n\natexit.register(lambda: os.write(1, b'bye'))\n",
    )
    project.write("tests/test_real.py", REAL_FAILURE)
    result = project.run("--reruns", "0", env=actions_env(project, tmp_path))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "bye\n::" in result.stdout
    annotations = only_ours(command_stream(result.stdout), fenced=True)
    assert [c.properties["title"] for c in annotations] == [
        "Failed test: tests/test_real.py::test_real"
    ]


HOSTILE_IDS = [
    "tests/test_x.py::test_x[x##[stop-commands]hide]",
    "tests/test_x.py::test_y[##[error]INJECTED]",
    "::error::INJECTED",
    "\u3000::warning::INJECTED",
]


def test_issues_prints_hostile_ids_inertly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report_dir = write_report(tmp_path / "report", [flaky(i) for i in HOSTILE_IDS])
    with GitHubEmulator() as emu:
        emulator_env(monkeypatch, emu)
        monkeypatch.setenv("GITHUB_ACTIONS", "true")
        code = cli.main(["issues", "--report-dir", str(report_dir)])
        out = capsys.readouterr()
    assert code == 0, out
    assert len(emu.open_issues()) == len(HOSTILE_IDS)
    assert out.out.count("FLAKY-TEST-DETECTED") == len(HOSTILE_IDS)
    assert out.out.count(": opened #") == len(HOSTILE_IDS)
    assert only_ours(command_stream(out.out + "\n" + out.err), fenced=False) == []


def test_issues_warning_after_hostile_ids_still_reaches_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report_dir = write_report(tmp_path / "report", [flaky(HOSTILE_IDS[0])])
    emulator_env(monkeypatch, None)  # nothing listening: one warning, fail-open
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_REPOSITORY")
    assert cli.main(["issues", "--report-dir", str(report_dir)]) == 0
    out = capsys.readouterr()
    [warning] = only_ours(command_stream(out.out + "\n" + out.err), fenced=False)
    assert warning.name == "warning"
    assert "not filed for 1 flaky test:" in warning.data


# -- --report-dir .: only what flakewarden wrote is ever replaced ----------------------


def test_report_dir_dot_keeps_a_users_files_across_runs(project: Project) -> None:
    project.write("tests/test_flaky.py", flaky_module("f"))
    first = project.run(report_dir=".")
    assert first.returncode == 0, first.stdout + first.stderr
    assert (project.root / "attempts" / "2" / "results.jsonl").exists()
    # The user's own files land next to (and inside) the report after the first run.
    notes = project.write("attempts/notes.txt", "my notes")
    xml = project.write("coverage.xml", "<coverage/>")
    refused = project.run(report_dir=".")
    assert refused.returncode == 4
    assert "already holds coverage.xml that flakewarden did not write" in refused.stderr
    assert xml.read_text() == "<coverage/>"
    assert notes.read_text() == "my notes"
    xml.unlink()
    (project.root / "tests" / ".counter-f").unlink()
    project.write("tests/test_flaky.py", "def test_f():\n    pass\n")
    second = project.run(report_dir=".")
    assert second.returncode == 0, second.stdout + second.stderr
    assert notes.read_text() == "my notes"  # kept, inside flakewarden's own directory
    assert not (project.root / "attempts" / "2").exists()  # the first run's rerun is gone
    assert second.outcomes == {"tests/test_flaky.py::test_f": "passed"}
    manifest = json.loads((project.root / ".flakewarden-report").read_text())
    assert "attempts/notes.txt" not in manifest["files"]
    assert "attempts/1/output.log" in manifest["files"]


def test_a_run_that_died_is_cleaned_up_without_touching_others_files(tmp_path: Path) -> None:
    from flakewarden.reports.report_json import claim_directory

    owned = ("attempts", "report.json")
    out = tmp_path / "out"
    claim_directory(out, owned)  # the run starts...
    (out / "attempts" / "1").mkdir(parents=True)
    (out / "attempts" / "1" / "results.jsonl").write_text("stale\n")
    notes = out / "attempts" / "notes.txt"
    notes.write_text("mine")
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    manifest = json.loads((out / ".flakewarden-report").read_text())
    # ...and dies before listing its files; a test even rewrote the manifest.
    manifest["foreign"].append("attempts/notes.txt")
    manifest["files"] = ["../outside.txt", "/etc/hostname"]
    (out / ".flakewarden-report").write_text(json.dumps(manifest))
    claim_directory(out, owned)
    assert not (out / "attempts" / "1").exists()
    assert notes.read_text() == "mine"
    assert outside.read_text() == "precious"


def test_a_foreign_file_inside_an_attempt_directory_is_refused(tmp_path: Path) -> None:
    from flakewarden.errors import UsageError
    from flakewarden.reports.report_json import claim_directory, record_written

    out = tmp_path / "out"
    claim_directory(out, ("attempts",))
    (out / "attempts" / "1").mkdir(parents=True)
    record_written(out)
    mine = out / "attempts" / "1" / "output.log"
    mine.write_text("not flakewarden's")
    with pytest.raises(UsageError, match=r"already holds attempts/1/output\.log"):
        claim_directory(out, ("attempts",))
    assert mine.read_text() == "not flakewarden's"


# -- detached writers: nothing a test started outlives its attempt -----------------------

DETACHED_WRITER = """
import os, sys, time
from pathlib import Path

HERE = Path(__file__).parent


def test_leaves_a_writer_behind():
    flakewarden = os.getppid()
    if os.fork() == 0:
        os.setsid()  # out of the attempt's process group
        if os.fork() == 0:
            (HERE / "writer.pid").write_text(str(os.getpid()))
            log = os.open(f"/proc/{flakewarden}/fd/1", os.O_WRONLY)
            give_up = time.monotonic() + 20
            while time.monotonic() < give_up:
                try:
                    os.kill(flakewarden, 0)
                except ProcessLookupError:
                    break  # flakewarden is gone: the output fence is closed
                time.sleep(0.05)
            os.write(log, b"::error title=DETACHED::written after flakewarden exited\\n")
            (HERE / "wrote").write_text("yes")
        os._exit(0)
    os.wait()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="subreaper: Linux only")
def test_a_detached_writer_is_ended_with_its_attempt(project: Project, tmp_path: Path) -> None:
    project.write("tests/test_detach.py", DETACHED_WRITER)
    try:
        result = project.run("-q", env=actions_env(project, tmp_path))
        assert result.returncode == 0, result.stdout + result.stderr
        # -q: the tests' output is not echoed, so there is nothing to fence.
        assert only_ours(command_stream(result.stdout + "\n" + result.stderr), fenced=False) == []
        assert not (project.root / "tests" / "wrote").exists()
        log = (result.report_dir / "attempts" / "1" / "output.log").read_text()
        assert "[flakewarden] ended 1 process(es) the command left running" in log
    finally:
        pid_file = project.root / "tests" / "writer.pid"
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_a_test_that_deletes_the_report_directory_is_said_so(project: Project) -> None:
    project.write(
        "tests/test_rm.py",
        """
        import os, shutil
        from pathlib import Path

        def test_a():
            pass

        def test_deletes_the_report():
            marker = Path(__file__).with_name(".deleted")
            if not marker.exists():
                marker.write_text("x")
                shutil.rmtree(Path(os.environ["FLAKEWARDEN_RESULTS"]).parents[2])
        """,
    )
    result = project.run()
    assert result.returncode == 3, result.stdout + result.stderr
    last = result.stderr.splitlines()[-1]
    assert last == (
        "flakewarden: error: attempt 1: the report directory was deleted while the tests ran "
        f"(by a test?), so what they recorded is lost: {result.report_dir}"
    )
    assert "is it a pytest command" not in result.stderr
    assert result.report["problems"] == [last.removeprefix("flakewarden: error: ")]
    again = project.run()  # the report written after is flakewarden's, and replaced
    assert again.returncode == 0, again.stdout + again.stderr


JOB = {"RUNNER_TRACKING_ID": "github_6d1a0f3e", "GITHUB_RUN_ID": "77", "GITHUB_JOB": "test"}


@pytest.mark.parametrize("same_job", [True, False], ids=["same-job", "other-job"])
def test_flaky_tests_are_listed_once_per_job(
    project: Project,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    same_job: bool,
) -> None:
    project.write("tests/test_flaky.py", flaky_module("f"))
    run = project.run(env={**actions_env(project, tmp_path), **JOB})
    assert run.returncode == 0, run.stdout + run.stderr
    with GitHubEmulator() as emu:
        emulator_env(monkeypatch, emu)
        monkeypatch.setenv("GITHUB_ACTIONS", "true")
        for key, value in JOB.items():
            monkeypatch.setenv(key, value)
        if not same_job:  # the report came from another job (a downloaded artifact)
            monkeypatch.setenv("RUNNER_TRACKING_ID", "github_0b7c9d21")
        assert cli.main(["issues", "--report-dir", str(run.report_dir)]) == 0
        issues = capsys.readouterr().out
    assert len(emu.open_issues()) == 1
    log = run.stdout + issues
    assert log.count("FLAKY-TEST-DETECTED: tests/test_flaky.py::test_f") == (1 if same_job else 2)
    if same_job:
        assert "flakewarden: 1 flaky test in report.json (FLAKY-TEST-DETECTED above" in issues


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a##[error]b", "a##\\x5berror]b"),
        ("#\u00ad#\u200b[error]", "#\u00ad#\u200b\\x5berror]"),  # invisible characters between
        ("#[#[", "#\\x5b#\\x5b"),
        ("::error::x", "\\x3a:error::x"),
        ("\u3000 ::warning::x", "\u3000 \\x3a:warning::x"),
        ("tests/a.py::test[1]", "tests/a.py::test[1]"),  # ordinary ids are left alone
        ("x\ud800y", "x\\ud800y"),  # a lone surrogate cannot crash the console
    ],
)
def test_one_line_leaves_no_command_to_find(text: str, shown: str) -> None:
    from flakewarden.console import one_line

    assert one_line(text) == shown
    assert command_stream(one_line(text)) == []
