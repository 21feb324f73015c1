"""flakewarden's merged coverage equals plain coverage.py's on the shapes real projects have.

Each project is built in a temporary directory and measured four ways by real subprocesses:
plain ``coverage run -m pytest`` and plain ``pytest --cov`` (the figures a team already trusts),
then ``flakewarden run --coverage`` and ``flakewarden run -- pytest --cov`` with one test that
fails once and is rerun. The per-file figures and the total of flakewarden's merged data file,
read back by ``coverage json`` in the project, must be plain coverage.py's exactly; report.json
must hold the same unrounded total and show it as ``coverage report`` does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple, Optional

import pytest
from helpers.project import make_project as write_project
from test_run import COVERED_PACKAGE

from flakewarden.inside import plugin as pytest_plugin
from flakewarden.runner.process import plugin_dir, plugin_env

# The package of test_run's coverage tests: a function only the flaky test reaches.
MODULE = COVERED_PACKAGE.lstrip("\n")

TESTS = """\
from pkg.mod import used


def test_used():
    assert used(1) == "positive"
"""

# One line whatever happens, so a failed first run executes exactly the lines a passing run
# does: plain runs (no FW_FLAKE) pass; under flakewarden it fails once, then passes on rerun.
FLAKY = """\
import os

from pkg.mod import only_in_flaky


def test_flaky():
    flag = os.environ.get("FW_FLAKE", "")
    assert not (flag and not os.path.exists(flag) and open(flag, "w").close() is None), "flaked"
    assert only_in_flaky() == 3
"""

PYTEST_ARGS = ["-p", "no:randomly", "-p", "no:cacheprovider", "-q"]


class Shape(NamedTuple):
    files: dict[str, str]
    cov_arg: str  # what is given to pytest-cov
    package: str = "pkg"  # where the package lives, relative to the project


SHAPES = {
    # Most real projects: no coverage configuration anywhere; everything that runs is measured.
    "no-config": Shape(files={}, cov_arg="--cov"),
    "source": Shape(files={".coveragerc": "[run]\nsource = pkg\n"}, cov_arg="--cov"),
    "paths": Shape(
        files={
            ".coveragerc": (
                "[paths]\nsource =\n    pkg/\n    */site-packages/pkg/\n[report]\nprecision = 2\n"
            )
        },
        cov_arg="--cov",
    ),
    "relative-files": Shape(
        files={".coveragerc": "[run]\nrelative_files = true\n[report]\nprecision = 1\n"},
        cov_arg="--cov",
    ),
    "cov-with-package": Shape(files={}, cov_arg="--cov=pkg"),
    "src-layout": Shape(
        files={"pytest.ini": "[pytest]\npythonpath = src\n"}, cov_arg="--cov", package="src/pkg"
    ),
}


def make_project(root: Path, shape: Shape) -> Path:
    files = {
        f"{shape.package}/__init__.py": "",
        f"{shape.package}/mod.py": MODULE,
        "tests/test_used.py": TESTS,
        "tests/test_flaky.py": FLAKY,
        **shape.files,
    }
    return write_project(root, files, ini=None)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything of this test run that steers coverage or pytest."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("COV_CORE_", "COVERAGE_", "PYTEST_", "FW_", "FLAKEWARDEN_"))
    }
    env.update(extra)
    return env


def run(cwd: Path, *args: str, env: Optional[dict[str, str]] = None, code: int = 0) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=cwd,
        env=env or clean_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == code, f"{args} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"
    return proc.stdout


def figures(project: Path, data_file: Path) -> dict[str, Any]:
    """What ``coverage json`` says of a data file, from the project: per file and the total."""
    out = data_file.parent / "figures.json"
    run(project, "coverage", "json", f"--data-file={data_file}", "-o", str(out))
    data = json.loads(out.read_text())
    out.unlink()
    per_file = {
        name: {
            "summary": entry["summary"],
            "executed_lines": entry["executed_lines"],
            "missing_lines": entry["missing_lines"],
        }
        for name, entry in data["files"].items()
    }
    return {"files": per_file, "totals": data["totals"]}


def plain(project: Path, mode: str, shape: Shape, work: Path) -> dict[str, Any]:
    """The figures of one plain run of the whole suite, as a team measures without flakewarden."""
    data_dir = work / f"plain-{mode}"
    data_dir.mkdir()
    env = clean_env(COVERAGE_FILE=str(data_dir / ".coverage"))
    if mode == "coverage-run":
        run(project, "coverage", "run", "-m", "pytest", *PYTEST_ARGS, env=env)
    else:
        run(project, "pytest", *PYTEST_ARGS, shape.cov_arg, "--cov-report=", env=env)
    return figures(project, data_dir / ".coverage")


def flakewarden(project: Path, mode: str, shape: Shape, work: Path) -> tuple[dict[str, Any], Path]:
    report_dir = work / f"report-{mode}"
    env = clean_env(FW_FLAKE=str(work / f"flaked-{mode}"))
    options = ["--coverage"] if mode == "coverage-run" else []
    command = [sys.executable, "-m", "pytest", *PYTEST_ARGS]
    if mode == "pytest-cov":
        command.append(shape.cov_arg)
    out = run(
        project,
        "flakewarden",
        "run",
        *options,
        "--report-dir",
        str(report_dir),
        "--",
        *command,
        env=env,
    )
    assert "FLAKY-TEST-DETECTED: tests/test_flaky.py::test_flaky" in out
    report: dict[str, Any] = json.loads((report_dir / "report.json").read_text())
    return report, report_dir


# --cov=pkg shapes only what pytest-cov measures; under `coverage run` it is the no-config case.
CASES = [
    (shape_name, mode)
    for shape_name in SHAPES
    for mode in ("coverage-run", "pytest-cov")
    if not (shape_name == "cov-with-package" and mode == "coverage-run")
]


@pytest.mark.parametrize(("shape_name", "mode"), CASES)
def test_merged_figures_equal_plain_coverage(tmp_path: Path, shape_name: str, mode: str) -> None:
    shape = SHAPES[shape_name]
    project = make_project(tmp_path / "project", shape)
    expected = plain(project, mode, shape, tmp_path)

    report, report_dir = flakewarden(project, mode, shape, tmp_path)

    coverage = report["coverage"]
    assert coverage["errors"] == []
    assert coverage["files_combined"] == 2  # the first run and the rerun of the flaky test
    merged = figures(project, report_dir / ".coverage")
    assert merged == expected
    assert not any("flakewarden" in name for name in merged["files"])
    assert coverage["percent"] == expected["totals"]["percent_covered"]
    assert coverage["percent_display"] == expected["totals"]["percent_covered_display"]


@pytest.mark.parametrize("shape_name", ["no-config", "src-layout"])
def test_plain_coverage_run_and_pytest_cov_agree(tmp_path: Path, shape_name: str) -> None:
    """Without configuration both plain ways measure the same, so flakewarden's two ways agree.

    Each of flakewarden's ways equals its plain counterpart (above); this closes the square.
    """
    shape = SHAPES[shape_name]
    project = make_project(tmp_path / "project", shape)
    by_run = plain(project, "coverage-run", shape, tmp_path)
    by_cov = plain(project, "pytest-cov", shape, tmp_path)
    assert by_run == by_cov
    assert "tests/test_flaky.py" in by_run["files"]  # no config: the tests are measured too


def test_pytest_cov_report_in_the_attempt_does_not_show_the_plugin(tmp_path: Path) -> None:
    """pytest-cov's own report and coverage.xml, written inside an attempt, are the project's."""
    project = make_project(tmp_path / "project", SHAPES["no-config"])
    report_dir = tmp_path / "report"
    out = run(
        project,
        "flakewarden",
        "run",
        "--report-dir",
        str(report_dir),
        "--",
        sys.executable,
        "-m",
        "pytest",
        *PYTEST_ARGS,
        "--cov",
        "--cov-report=term",
        f"--cov-report=xml:{tmp_path / 'attempt.xml'}",
        env=clean_env(),
    )
    plain_out = run(project, "pytest", *PYTEST_ARGS, "--cov", "--cov-report=term", env=clean_env())
    table = [line for line in out.splitlines() if line.startswith(("pkg", "tests", "TOTAL"))]
    plain_table = [
        line for line in plain_out.splitlines() if line.startswith(("pkg", "tests", "TOTAL"))
    ]
    assert table == plain_table
    assert "flakewarden" not in (tmp_path / "attempt.xml").read_text()
    assert "flakewarden_pytest_plugin" not in out


def test_the_plugins_tracebacks_still_show_its_source(tmp_path: Path) -> None:
    """The plugin runs under a name coverage.py skips, yet an error in it reads as usual."""
    project = make_project(tmp_path / "project", SHAPES["no-config"])
    bad_select = tmp_path / "select.json"
    bad_select.write_text("not json")
    with plugin_dir() as directory:
        env = plugin_env(directory, tmp_path / "results.jsonl", select=bad_select, base=clean_env())
        done = subprocess.run(
            [sys.executable, "-m", "pytest", *PYTEST_ARGS],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    assert done.returncode == 3  # pytest's internal error
    frames = re.findall(
        r'File "<flakewarden_pytest_plugin/(\w+\.py)>", line (\d+).*\n\S*\s+(.+)', done.stdout
    )
    # The hook, then the part where FLAKEWARDEN_SELECT is read: each line as in its source.
    assert [part for part, _, _ in frames] == ["__init__.py", "selection.py"], done.stdout
    for part, line, shown in frames:
        source = (Path(pytest_plugin.__file__).parent / part).read_text().splitlines()
        assert shown.strip() == source[int(line) - 1].strip()
