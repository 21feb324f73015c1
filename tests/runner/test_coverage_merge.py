"""Per-attempt coverage files combine to exactly the coverage of one in-process run.

Every data file here is written by a real pytest or ``coverage run`` subprocess on a small
project built under a temporary directory; the expected totals come from real ``coverage report``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, NamedTuple, Optional

import coverage
import coverage.files
import pytest
from helpers.project import ISOLATED_INI
from helpers.project import make_project as write_project

from flakewarden.runner.coverage_merge import attempt_env, find_data_files, is_injected, merge

MODULE = """\
def alpha(x):
    if x > 0:
        result = "positive"
    else:
        result = "other"
    return result


def beta(items):
    total = 0
    for item in items:
        total += item
    if total > 10:
        return "big"
    return "small"
"""

TESTS = """\
from pkg.mod import alpha, beta


def test_alpha():
    assert alpha(1) == "positive"


def test_beta():
    assert beta([1]) == "small"
"""

# precision and a report-only omit: a merge that ignored the project's config would differ.
COVERAGERC = """\
[run]
source = pkg
{run_extra}

[report]
precision = 2
omit = */ignored.py

[paths]
source =
    pkg/
    */relocated/pkg/
"""


def make_project(root: Path, run_extra: str = "") -> Path:
    files = {
        "pkg/__init__.py": "",
        "pkg/mod.py": MODULE,
        "pkg/ignored.py": "def unused():\n    return 1\n",
        "tests/test_mod.py": TESTS,
        ".coveragerc": COVERAGERC.format(run_extra=run_extra),
    }
    return write_project(root, files, ini=ISOLATED_INI, verbatim=True)


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    """The test process's environment without anything that steers coverage or pytest."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("COV_CORE_", "COVERAGE_", "PYTEST_"))
    }
    env.update(extra)
    return env


def run(cwd: Path, *args: str, env: Optional[dict[str, str]] = None) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=cwd,
        env=clean_env(env or {}),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, f"{args} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def pytest_cov_attempt(project: Path, attempt_dir: Path, *selection: str) -> Path:
    run(project, "pytest", "--cov=pkg", *selection, env=attempt_env(attempt_dir))
    return attempt_dir / ".coverage"


def coverage_run_attempt(project: Path, attempt_dir: Path, *selection: str) -> Path:
    run(project, "coverage", "run", "-m", "pytest", *selection, env=attempt_env(attempt_dir))
    return attempt_dir / ".coverage"


def reported_total(project: Path, data_file: Path) -> float:
    """The unrounded total coverage.py reports for one data file, in the project's config."""
    return float(coverage_json(project, data_file)["totals"]["percent_covered"])


def coverage_json(project: Path, data_file: Path) -> dict[str, Any]:
    """What `coverage json` says of one data file, run in the project (per file and totals)."""
    assert not [p for p in data_file.parent.iterdir() if p.name.startswith(".coverage.")], (
        "a .coverage.* file beside it would make the figures ambiguous"
    )
    out = data_file.parent.parent / f"{data_file.parent.name}.json"
    run(project, "coverage", "json", f"--data-file={data_file}", "-o", str(out))
    data: dict[str, Any] = json.loads(out.read_text())
    out.unlink()
    return data


def in_process_total(project: Path, work: Path) -> float:
    """One run of the whole suite in one process, as a team measures without reruns."""
    data_file = coverage_run_attempt(project, work / "in-process")
    return reported_total(project, data_file)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Lines(NamedTuple):
    project: Path
    expected: float  # the in-process total, unrounded, from `coverage json`
    cov_alpha: Path  # attempts with pytest-cov, each selecting one test
    cov_beta: Path
    run_alpha: Path  # attempts with `coverage run`
    run_beta: Path
    alpha_digest_before_beta: str


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> Lines:
    work = tmp_path_factory.mktemp("lines")
    project = make_project(work / "project")
    attempts = work / "report" / "attempts"
    cov_alpha = pytest_cov_attempt(project, attempts / "1", "-k", "alpha")
    alpha_digest = digest(cov_alpha)
    cov_beta = pytest_cov_attempt(project, attempts / "2", "-k", "beta")
    return Lines(
        project=project,
        expected=in_process_total(project, work),
        cov_alpha=cov_alpha,
        cov_beta=cov_beta,
        run_alpha=coverage_run_attempt(project, attempts / "3", "-k", "alpha"),
        run_beta=coverage_run_attempt(project, attempts / "4", "-k", "beta"),
        alpha_digest_before_beta=alpha_digest,
    )


def test_attempt_env_points_coverage_file_into_the_attempt_dir(tmp_path: Path) -> None:
    env = attempt_env(tmp_path / "attempts" / "1")
    assert env == {"COVERAGE_FILE": str(tmp_path / "attempts" / "1" / ".coverage")}
    assert (tmp_path / "attempts" / "1").is_dir()


@pytest.mark.parametrize("kind", ["cov", "run"])
def test_merged_reruns_equal_one_in_process_run(lines: Lines, tmp_path: Path, kind: str) -> None:
    alpha, beta = (
        (lines.cov_alpha, lines.cov_beta) if kind == "cov" else (lines.run_alpha, lines.run_beta)
    )
    merged = merge([alpha, beta], tmp_path / "report", cwd=lines.project)
    only_alpha = merge([alpha], tmp_path / "alpha", cwd=lines.project)
    only_beta = merge([beta], tmp_path / "beta", cwd=lines.project)

    assert merged.errors == []
    assert merged.percent == lines.expected
    assert merged.files_combined == 2
    assert merged.branch is False
    assert only_alpha.percent is not None and only_beta.percent is not None
    assert merged.percent > only_alpha.percent
    assert merged.percent > only_beta.percent
    # Each single attempt is what `coverage report` says of it alone.
    assert only_alpha.percent == reported_total(lines.project, alpha)


def test_pytest_cov_and_coverage_run_attempts_merge_together(lines: Lines, tmp_path: Path) -> None:
    merged = merge([lines.cov_alpha, lines.run_beta], tmp_path / "report", cwd=lines.project)
    assert merged.errors == []
    assert merged.percent == lines.expected


def test_pytest_cov_cleanup_does_not_reach_other_attempts(lines: Lines, tmp_path: Path) -> None:
    # Attempt 2 ran after attempt 1 in its own folder: attempt 1's data is untouched.
    assert lines.cov_alpha.is_file()
    assert digest(lines.cov_alpha) == lines.alpha_digest_before_beta

    # The hazard the separate folders avoid: pytest-cov erases stray .coverage.* next to its file.
    shared = tmp_path / "shared"
    shared.mkdir()
    stray = shared / ".coverage.attempt1"
    shutil.copyfile(lines.cov_alpha, stray)
    pytest_cov_attempt(lines.project, shared, "-k", "beta")
    assert not stray.exists()


def test_inputs_are_kept_and_reports_written(lines: Lines, tmp_path: Path) -> None:
    inputs = [lines.cov_alpha, lines.cov_beta]
    before = [digest(path) for path in inputs]
    report_dir = tmp_path / "report"
    # Stray parallel files in the report dir must be neither combined nor deleted.
    report_dir.mkdir()
    stray = report_dir / ".coverage.stray"
    shutil.copyfile(lines.run_alpha, stray)

    summary = merge(inputs, report_dir, cwd=lines.project)

    assert [digest(path) for path in inputs] == before
    assert stray.is_file()
    assert summary.data_file == ".coverage"
    assert summary.xml_file == "coverage.xml"
    merged = coverage.CoverageData(basename=str(report_dir / ".coverage"))
    merged.read()
    assert {Path(f).name for f in merged.measured_files()} == {
        "__init__.py",
        "mod.py",
        "ignored.py",
    }

    root = ET.parse(report_dir / "coverage.xml").getroot()
    filenames = {cls.get("filename") for cls in root.iter("class")}
    assert "mod.py" in {Path(str(name)).name for name in filenames}
    assert not any(str(name).endswith("ignored.py") for name in filenames)  # [report] omit
    # The same paths `coverage xml` writes for the merged data, from the project directory.
    cli_dir = tmp_path / "cli"
    cli_dir.mkdir()
    shutil.copyfile(report_dir / ".coverage", cli_dir / ".coverage")
    run(
        lines.project,
        "coverage",
        "xml",
        f"--data-file={cli_dir / '.coverage'}",
        "-o",
        str(cli_dir / "coverage.xml"),
    )
    cli_root = ET.parse(cli_dir / "coverage.xml").getroot()
    assert filenames == {cls.get("filename") for cls in cli_root.iter("class")}
    assert [s.text for s in root.iter("source")] == [s.text for s in cli_root.iter("source")]


def test_merging_again_into_the_same_report_dir_starts_fresh(lines: Lines, tmp_path: Path) -> None:
    report_dir = tmp_path / "report"
    merge([lines.cov_alpha, lines.cov_beta], report_dir, cwd=lines.project)
    again = merge([lines.cov_alpha], report_dir, cwd=lines.project)
    assert again.percent == reported_total(lines.project, lines.cov_alpha)
    nothing = merge([tmp_path / "gone"], report_dir, cwd=lines.project)
    assert nothing.percent is None
    assert not (report_dir / ".coverage").exists()
    assert not (report_dir / "coverage.xml").exists()


def test_each_bad_file_is_named_and_the_rest_still_combined(lines: Lines, tmp_path: Path) -> None:
    bad = tmp_path / "attempts"
    bad.mkdir()
    truncated = bad / "truncated.coverage"
    data = lines.cov_beta.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    empty = bad / "empty.coverage"
    empty.write_bytes(b"")
    missing = bad / "missing.coverage"
    other_sqlite = bad / "other.sqlite"
    with sqlite3.connect(other_sqlite) as db:
        db.execute("create table results (name text)")
    db.close()
    nothing = bad / "nothing"
    run(
        lines.project,
        "coverage",
        "run",
        "--source=not_a_package",
        "-m",
        "pytest",
        "-k",
        "alpha",
        env=attempt_env(nothing),
    )
    nothing_measured = nothing / ".coverage"
    bad_files = [truncated, empty, missing, other_sqlite, nothing_measured]
    before = {path: digest(path) for path in bad_files if path.exists()}

    summary = merge(
        [lines.cov_alpha, *bad_files, lines.cov_beta], tmp_path / "report", cwd=lines.project
    )

    assert summary.percent == lines.expected
    assert summary.files_combined == 2
    assert len(summary.errors) == len(bad_files)
    messages = dict(zip(bad_files, summary.errors))
    for path, message in messages.items():
        assert str(path) in message, message
        assert "\n" not in message
    assert "truncated or corrupt" in messages[truncated]
    assert "empty (0 bytes)" in messages[empty]
    assert "missing" in messages[missing]
    assert "is not coverage data" in messages[other_sqlite]
    assert "measures no file" in messages[nothing_measured]
    assert {path: digest(path) for path in before} == before


def test_every_file_bad_gives_errors_and_no_percent(lines: Lines, tmp_path: Path) -> None:
    empty = tmp_path / "empty.coverage"
    empty.write_bytes(b"")
    report_dir = tmp_path / "report"
    summary = merge([empty, tmp_path / "gone"], report_dir, cwd=lines.project, fail_under=80)
    assert summary.percent is None
    assert summary.files_combined == 0
    assert len(summary.errors) == 2
    assert summary.below_threshold is False
    assert not (report_dir / "coverage.xml").exists()

    none = merge([], tmp_path / "none", cwd=lines.project)
    assert none.percent is None
    assert none.errors == ["no coverage data file was written by any attempt"]


def test_report_dir_relative_to_the_callers_directory_and_cwd_restored(
    lines: Lines, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    summary = merge([lines.cov_alpha, lines.cov_beta], Path("out"), cwd=lines.project)
    assert summary.percent == lines.expected
    assert Path.cwd() == tmp_path
    assert (tmp_path / "out" / "coverage.xml").is_file()
    assert not (lines.project / "out").exists()
    # coverage.py's module-wide "relative to" directory follows us back too, so a Coverage
    # measuring this process still reports paths relative to where it runs.
    assert coverage.files.relative_filename(str(tmp_path / "a.py")) == "a.py"


def test_fail_under_applies_to_the_merged_total(lines: Lines, tmp_path: Path) -> None:
    merged_ok = merge(
        [lines.cov_alpha, lines.cov_beta],
        tmp_path / "ok",
        cwd=lines.project,
        fail_under=lines.expected,
    )
    assert merged_ok.fail_under == lines.expected
    assert merged_ok.below_threshold is False
    alone = merge(
        [lines.cov_alpha], tmp_path / "alone", cwd=lines.project, fail_under=lines.expected
    )
    assert alone.below_threshold is True


def test_fail_under_defaults_to_the_project_config(lines: Lines, tmp_path: Path) -> None:
    rc = tmp_path / "coveragerc"
    rc.write_text("[run]\nsource = pkg\n[report]\nfail_under = 99.5\nomit = */ignored.py\n")
    summary = merge(
        [lines.cov_alpha, lines.cov_beta], tmp_path / "r", cwd=lines.project, config_file=str(rc)
    )
    assert summary.fail_under == 99.5
    assert summary.below_threshold is True
    no_threshold = merge([lines.cov_alpha], tmp_path / "plain", cwd=lines.project)
    assert no_threshold.fail_under is None
    assert no_threshold.below_threshold is False


def test_a_config_coverage_cannot_read_is_one_error_line(lines: Lines, tmp_path: Path) -> None:
    # coverage.py raises ConfigError, which some 7.x releases do not make a CoverageException.
    rc = tmp_path / "coveragerc"
    rc.write_text("[run]\nbranch = maybe\n")
    summary = merge([lines.cov_alpha], tmp_path / "r", cwd=lines.project, config_file=str(rc))
    assert summary.percent is None
    [error] = summary.errors
    assert error == (
        f"cannot combine or report coverage: Couldn't read config file {rc}: Not a boolean: maybe"
    )


def test_branch_config_matches_coverage_report(lines: Lines, tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", run_extra="branch = true")
    attempts = tmp_path / "report" / "attempts"
    first = pytest_cov_attempt(project, attempts / "1", "-k", "alpha")
    second = pytest_cov_attempt(project, attempts / "2", "-k", "beta")
    expected = in_process_total(project, tmp_path)

    summary = merge([first, second], tmp_path / "report", cwd=project)

    assert summary.errors == []
    assert summary.branch is True
    assert summary.percent == expected
    # The same tests measured by lines give another total, so branches were really counted.
    assert summary.percent != lines.expected
    root = ET.parse(tmp_path / "report" / "coverage.xml").getroot()
    assert root.get("branch-rate") not in (None, "0")


def test_branch_and_line_data_are_not_mixed(lines: Lines, tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", run_extra="branch = true")
    branch_file = pytest_cov_attempt(project, tmp_path / "attempts" / "2", "-k", "beta")

    summary = merge([lines.cov_alpha, branch_file], tmp_path / "report", cwd=lines.project)

    assert summary.files_combined == 1
    assert summary.branch is False
    assert summary.percent == reported_total(lines.project, lines.cov_alpha)
    [message] = summary.errors
    assert str(branch_file) in message
    assert f"{lines.cov_alpha} measured lines" in message
    assert f"{branch_file} branches" in message
    assert "set branch the same way for every run" in message


def test_paths_remaps_data_measured_in_another_directory(lines: Lines, tmp_path: Path) -> None:
    elsewhere = make_project(tmp_path / "ci" / "relocated")
    remote = pytest_cov_attempt(elsewhere, tmp_path / "attempts" / "2", "-k", "beta")
    shutil.rmtree(elsewhere)  # only [paths] can find its source now

    summary = merge([lines.cov_alpha, remote], tmp_path / "report", cwd=lines.project)

    assert summary.errors == []
    assert summary.percent == lines.expected
    merged = coverage.CoverageData(basename=str(tmp_path / "report" / ".coverage"))
    merged.read()
    assert all(f.startswith(str(lines.project)) for f in merged.measured_files())

    # Without the project's [paths], the relocated file cannot be reported: named, not raised.
    plain = tmp_path / "plain.coveragerc"
    plain.write_text("[run]\nsource = pkg\n")
    unmapped = merge(
        [lines.cov_alpha, remote], tmp_path / "unmapped", cwd=lines.project, config_file=str(plain)
    )
    assert unmapped.percent is None
    assert len(unmapped.errors) == 1
    assert "relocated" in unmapped.errors[0]


def test_relative_files_combine_across_checkouts(tmp_path: Path) -> None:
    ci_checkout = make_project(tmp_path / "ci", run_extra="relative_files = true")
    local = make_project(tmp_path / "local", run_extra="relative_files = true")
    from_ci = pytest_cov_attempt(ci_checkout, tmp_path / "attempts" / "1", "-k", "alpha")
    from_local = pytest_cov_attempt(local, tmp_path / "attempts" / "2", "-k", "beta")
    expected = in_process_total(local, tmp_path)
    shutil.rmtree(ci_checkout)

    summary = merge([from_ci, from_local], tmp_path / "report", cwd=local)

    assert summary.errors == []
    assert summary.percent == expected
    merged = coverage.CoverageData(basename=str(tmp_path / "report" / ".coverage"))
    merged.read()
    assert sorted(merged.measured_files()) == [
        os.path.join("pkg", "__init__.py"),
        os.path.join("pkg", "ignored.py"),
        os.path.join("pkg", "mod.py"),
    ]


def test_xdist_parallel_files_are_found_and_merged(tmp_path: Path) -> None:
    # coverage run measures xdist workers through its subprocess patch; each worker and the
    # controller leave their own .coverage.* file, as a crashed pytest-cov worker would.
    project = make_project(tmp_path / "project", run_extra="parallel = true\npatch = subprocess")
    attempt_dir = tmp_path / "report" / "attempts" / "1"
    run(project, "coverage", "run", "-m", "pytest", "-n", "2", env=attempt_env(attempt_dir))
    (attempt_dir / ".coverage.x-journal").write_bytes(b"")  # SQLite's side file, never data

    found = find_data_files(attempt_dir)

    assert len(found) == 3
    assert all(path.name.startswith(".coverage.") for path in found)
    assert not any(path.name.endswith("-journal") for path in found)
    summary = merge(found, tmp_path / "report", cwd=project)
    assert summary.errors == []
    serial = make_project(tmp_path / "serial")
    assert summary.percent == in_process_total(serial, tmp_path / "serial-run")


def test_find_data_files_main_file_first(lines: Lines, tmp_path: Path) -> None:
    attempt_dir = tmp_path / "attempt"
    attempt_dir.mkdir()
    shutil.copyfile(lines.cov_beta, attempt_dir / ".coverage.worker1")
    shutil.copyfile(lines.cov_alpha, attempt_dir / ".coverage")
    (attempt_dir / ".coveragerc").write_text("")
    assert find_data_files(attempt_dir) == [
        attempt_dir / ".coverage",
        attempt_dir / ".coverage.worker1",
    ]
    assert find_data_files(tmp_path / "never-ran") == []


def cli_fails_under(project: Path, data_file: Path, fail_under: float, rcfile: str) -> bool:
    """Whether ``coverage report --fail-under`` itself fails this data (it exits 2)."""
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "coverage", "report", f"--rcfile={rcfile}"),
            *(f"--data-file={data_file}", f"--fail-under={fail_under}"),
        ],
        cwd=project,
        env=clean_env({}),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode in (0, 2), proc.stdout + proc.stderr
    return proc.returncode == 2


@pytest.mark.parametrize(
    ("precision", "thresholds"),
    [
        # The merged total is 83.333...%: coverage rounds it to the precision before comparing.
        (2, [83, 83.33, 83.34, 83.333, 83.3334, 100]),
        (0, [83, 83.4, 84, 100]),
    ],
)
def test_gate_judges_exactly_as_coverage_report_fail_under(
    lines: Lines, tmp_path: Path, precision: int, thresholds: list[float]
) -> None:
    rc = tmp_path / "coveragerc"
    rc.write_text(
        COVERAGERC.format(run_extra="").replace("precision = 2", f"precision = {precision}")
    )
    report_dir = tmp_path / "report"
    for fail_under in thresholds:
        summary = merge(
            [lines.cov_alpha, lines.cov_beta],
            report_dir,
            cwd=lines.project,
            config_file=str(rc),
            fail_under=fail_under,
        )
        assert summary.precision == precision
        expected = cli_fails_under(lines.project, report_dir / ".coverage", fail_under, str(rc))
        assert summary.below_threshold is expected, (fail_under, summary.percent)


def test_total_is_kept_unrounded_and_shown_as_coverage_report_shows_it(
    lines: Lines, tmp_path: Path
) -> None:
    summary = merge([lines.cov_alpha, lines.cov_beta], tmp_path / "report", cwd=lines.project)
    shown = coverage_json(lines.project, tmp_path / "report" / ".coverage")["totals"]
    assert summary.percent == shown["percent_covered"] == 250 / 3
    assert summary.precision == 2
    assert summary.percent_display == shown["percent_covered_display"] == "83.33"
    text = run(
        lines.project, "coverage", "report", f"--data-file={tmp_path / 'report' / '.coverage'}"
    )
    assert text.splitlines()[-1].split()[-1] == f"{summary.percent_display}%"


@pytest.mark.parametrize(
    ("measured", "injected"),
    [
        ("/tmp/flakewarden-plugin-ab12/flakewarden_pytest_plugin.py", True),
        ("tmp/flakewarden-plugin-ab12/flakewarden_pytest_plugin.py", True),  # relative_files
        (r"C:\Temp\flakewarden-plugin-ab12\flakewarden_pytest_plugin.py", True),
        ("/src/flakewarden/pytest_plugin.py", False),
        ("/work/flakewarden-plugin-notes.py", False),
        ("flakewarden_pytest_plugin.py", False),
    ],
)
def test_injected_files_are_known_by_their_folder(measured: str, injected: bool) -> None:
    assert is_injected(measured) is injected


def test_data_measuring_the_plugin_merges_without_it(lines: Lines, tmp_path: Path) -> None:
    """A data file that measured a plugin folder (gone since) merges to the project's figures."""
    plugin = tmp_path / "flakewarden-plugin-x1"
    plugin.mkdir()
    (plugin / "flakewarden_pytest_plugin.py").write_text(
        "def pytest_configure(config):\n    pass\n"
    )
    rc = tmp_path / "measure-all.coveragerc"
    rc.write_text(f"[run]\nsource =\n    pkg\n    {plugin}\n")
    attempt_dir = tmp_path / "attempts" / "1"
    run(
        lines.project,
        "coverage",
        "run",
        f"--rcfile={rc}",
        "-m",
        "pytest",
        "-p",
        "flakewarden_pytest_plugin",
        env={**attempt_env(attempt_dir), "PYTHONPATH": str(plugin)},
    )
    raw = coverage.CoverageData(basename=str(attempt_dir / ".coverage"))
    raw.read()
    assert any("flakewarden-plugin-x1" in f for f in raw.measured_files())
    shutil.rmtree(plugin)
    before = digest(attempt_dir / ".coverage")

    summary = merge([attempt_dir / ".coverage"], tmp_path / "report", cwd=lines.project)

    assert summary.errors == []
    assert summary.percent == lines.expected
    merged = coverage.CoverageData(basename=str(tmp_path / "report" / ".coverage"))
    merged.read()
    assert not any("flakewarden" in f for f in merged.measured_files())
    assert digest(attempt_dir / ".coverage") == before  # the evidence is untouched
