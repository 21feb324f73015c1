"""Rewriting a pytest command line for reruns: keep every option, replace the selection."""

from __future__ import annotations

from pathlib import Path

import pytest

from flakewarden.runner import pytest_args
from flakewarden.runner.pytest_args import PytestCommand, locate, rerun_args


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["python", "-m", "pytest", "-q"], PytestCommand(["python", "-m", "pytest"], ["-q"])),
        (["/venv/bin/pytest", "tests"], PytestCommand(["/venv/bin/pytest"], ["tests"])),
        (["py.test"], PytestCommand(["py.test"], [])),
        (
            ["python", "-m", "coverage", "run", "-m", "pytest", "-x"],
            PytestCommand(["python", "-m", "coverage", "run", "-m", "pytest"], ["-x"]),
        ),
        (["make", "test"], None),
        (["tox", "-e", "py311"], None),
    ],
)
def test_locate(command: list[str], expected: PytestCommand | None) -> None:
    assert locate(command) == expected


def test_split_with_invocation_requires_pytest_to_agree() -> None:
    command = ["python", "-m", "pytest", "-q", "tests"]
    assert pytest_args.split_with_invocation(command, ["-q", "tests"]) == PytestCommand(
        ["python", "-m", "pytest"], ["-q", "tests"]
    )
    # pytest received something else (a wrapper rewrote it): do not trust our split.
    assert pytest_args.split_with_invocation(command, ["tests"]) is None


def test_rerun_args_drop_selection_keep_options(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("")
    (tmp_path / "tests" / "test_b.py").write_text("")
    args = [
        "-p", "xdist", "-n", "2", "-o", "xfail_strict=true", "-c", "ci.ini",
        "--import-mode=importlib", "--count", "3", "--cov=src", "--cov-report", "xml",
        "--cov-fail-under=80", "-k", "slow and not db", "-m", "integration",
        "--deselect", "tests/test_a.py::test_x", "--lf", "-x", "--maxfail=2",
        "--junitxml=out.xml", "--timeout", "30", "tests", "tests/test_b.py",
    ]  # fmt: skip
    out = rerun_args(
        args,
        positionals=["tests", "tests/test_b.py"],
        node_ids=[
            "tests/test_a.py::test_p[a::b]",
            "tests/test_b.py::T::test_q",
            "tests/test_a.py::t",
        ],
        rootdir=tmp_path,
    )
    assert out == [
        "-p", "xdist", "-n", "2", "-o", "xfail_strict=true", "-c", "ci.ini",
        "--import-mode=importlib", "--count", "3", "--cov=src", "--timeout", "30",
        "--cov-fail-under=0", "--cov-report=", f"--rootdir={tmp_path}",
        str(tmp_path / "tests" / "test_a.py"), str(tmp_path / "tests" / "test_b.py"),
    ]  # fmt: skip


def test_rerun_args_clusters_and_inline_values(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("")
    out = rerun_args(
        ["-xvs", "-kfoo", "-mslow", "--deselect=t.py::a", "--rootdir", str(tmp_path)],
        positionals=[],
        node_ids=["t.py::a"],
        rootdir=tmp_path,
    )
    assert out == ["-vs", "--rootdir", str(tmp_path), str(tmp_path / "t.py")]


def test_positional_equal_to_an_option_value_removes_the_positional(tmp_path: Path) -> None:
    """Matching from the end removes the trailing path, not the option's value."""
    (tmp_path / "t.py").write_text("")
    out = rerun_args(
        ["--basetemp", "tests", "tests"],
        positionals=["tests"],
        node_ids=["t.py::a"],
        rootdir=tmp_path,
    )
    assert out == ["--basetemp", "tests", f"--rootdir={tmp_path}", str(tmp_path / "t.py")]


def test_unnamed_files_fall_back_to_the_original_selection(tmp_path: Path) -> None:
    out = rerun_args(
        ["-q", "pkg"], positionals=["pkg"], node_ids=["pkg/sub::test_x"], rootdir=tmp_path
    )
    assert out == ["-q", f"--rootdir={tmp_path}", "pkg"]


def test_cov_fail_under_is_read_and_stripped() -> None:
    assert pytest_args.cov_fail_under(["--cov", "--cov-fail-under=85.5"]) == 85.5
    assert pytest_args.cov_fail_under(["--cov-fail-under", "70"]) == 70
    assert pytest_args.cov_fail_under(["--cov"]) is None
    assert pytest_args.without_cov_fail_under(["--cov", "--cov-fail-under", "70", "-q"]) == [
        "--cov",
        "-q",
    ]


def test_measures_coverage() -> None:
    assert pytest_args.measures_coverage(["--cov"])
    assert pytest_args.measures_coverage(["--cov=src"])
    assert not pytest_args.measures_coverage(["--cov-report=xml"])
    assert not pytest_args.measures_coverage(["-q"])
