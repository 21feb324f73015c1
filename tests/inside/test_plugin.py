"""The injected pytest plugin: standard library only, inert unless asked, faithful records."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

import parso
import pytest
from helpers.project import PYTEST, PYTHON, Project, flaky_module

from flakewarden.inside import fork_child
from flakewarden.inside import plugin as pytest_plugin
from flakewarden.runner.process import plugin_dir, plugin_env
from flakewarden.runner.process_results import read_results

PARTS = sorted(Path(pytest_plugin.__file__).parent.glob("*.py"))


@pytest.mark.parametrize("path", PARTS, ids=lambda p: p.name)
def test_plugin_imports_only_the_standard_library(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported: set[str] = set()
    # coverage.py, where blame measures with it: imported only inside a ``try`` whose
    # handler catches what a missing package raises, so the plugin runs without it.
    guarded = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.Try) and _catches_import_error(node)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    optional: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and id(node) in guarded:
            optional.update(alias.name.split(".")[0] for alias in node.names)
            continue
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            # Its own parts only, one level: the stub's finder knows no deeper package.
            assert node.level == 1, ast.dump(node)
            parts = [node.module] if node.module else [a.name for a in node.names]
            assert all((path.parent / f"{part}.py").is_file() for part in parts), parts
    # pytest itself is running the plugin; everything else must be stdlib.
    outside = {m for m in imported if m not in sys.stdlib_module_names} - {"pytest", "_pytest"}
    assert outside == set()
    assert optional - {"pytest"} <= {"coverage"}  # pytest: a bare interpreter has none
    assert "__future__" in imported


def _catches_import_error(node: ast.Try) -> bool:
    names = set()
    for handler in node.handlers:
        caught = handler.type
        for part in caught.elts if isinstance(caught, ast.Tuple) else [caught]:
            names.add(part.id if isinstance(part, ast.Name) else "")
    return bool(names & {"ImportError", "Exception"})


def test_each_part_of_the_plugin_stays_readable() -> None:
    lines = {part.name: len(part.read_text(encoding="utf-8").splitlines()) for part in PARTS}
    assert {"__init__.py", "recorder.py", "selection.py", "evidence.py"} <= set(lines)
    assert {name: count for name, count in lines.items() if count > 400} == {}


# They run inside the tested interpreter, which may be the oldest Python supported.
IN_TESTED_INTERPRETER = (*PARTS, Path(fork_child.__file__))


def _python_3_9() -> Optional[str]:
    """A Python 3.9 that runs (a pyenv shim on PATH may not)."""
    candidates = [str(p) for p in sorted(Path.home().glob(".pyenv/versions/3.9*/bin/python3.9"))]
    candidates.append(shutil.which("python3.9") or "")
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if probe.returncode == 0 and probe.stdout.strip() == "(3, 9)":
            return candidate
    return None


@pytest.mark.parametrize("path", IN_TESTED_INTERPRETER, ids=lambda p: p.name)
def test_plugin_parses_as_python_3_9(path: Path) -> None:
    # parso's grammar of 3.9 is the real one (``ast.parse(feature_version=)`` is
    # best-effort and takes, for one, parenthesized context managers).
    grammar = parso.load_grammar(version="3.9")
    errors = grammar.iter_errors(grammar.parse(path.read_text(encoding="utf-8")))
    assert [(e.start_pos, e.message) for e in errors] == []
    newer = grammar.parse("with (open('a') as f, open('b') as g):\n    pass\n")
    assert list(grammar.iter_errors(newer)), "the 3.9 grammar must refuse 3.10 syntax"


def test_plugin_and_fork_server_load_in_a_real_python_3_9() -> None:
    python = _python_3_9()
    if python is None:
        pytest.skip("no Python 3.9 interpreter on this machine (python3.9 or pyenv)")
    # The plugin as it is injected (the stub, its finder, each part), and the fork server.
    load = (
        "import importlib.util, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "import flakewarden_pytest_plugin as plugin\n"
        "assert callable(plugin.record_retry) and plugin.evidence.MAX_RAISED\n"
        "spec = importlib.util.spec_from_file_location('m', sys.argv[2])\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "print(sys.version_info[:2])\n"
    )
    with plugin_dir() as directory:
        done = subprocess.run(
            [python, "-I", "-c", load, str(directory), str(fork_child.__file__)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(3, 9)"


def _requirements(name: str) -> list[str]:
    """The distributions ``name`` needs on this interpreter (environment markers applied)."""
    from packaging.requirements import Requirement

    needed = []
    for text in importlib.metadata.requires(name) or []:
        requirement = Requirement(text)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            needed.append(requirement.name)
    return needed


def _top_level(name: str) -> list[Path]:
    """What a distribution installed at the top of site-packages: its packages and metadata."""
    dist = importlib.metadata.distribution(name)
    tops = set()
    for file in dist.files or []:
        first = file.parts[0]
        if first.endswith(".data") or first in ("..", "__pycache__"):
            continue
        tops.add(Path(str(dist.locate_file(first))))
    return sorted(tops)


def _bare_env_with_only_pytest(tmp_path: Path) -> Path:
    """A venv whose only third-party packages are pytest and its own dependencies."""
    venv = tmp_path / "bare"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    for name in ("pytest", *_requirements("pytest")):
        for top in _top_level(name):
            (shelf / top.name).symlink_to(top)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "shelf.pth").write_text(str(shelf) + "\n")
    return venv / "bin" / "python"


def test_tested_environment_needs_nothing_installed(project: Project, tmp_path: Path) -> None:
    python = _bare_env_with_only_pytest(tmp_path)
    probe = subprocess.run(
        [str(python), "-c", "import coverage"], capture_output=True, text=True, check=False
    )
    assert probe.returncode != 0, "the bare environment must not see our dependencies"
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    result = project.run(command=[str(python), "-m", "pytest"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outcomes == {"tests/test_flaky.py::test_flaky": "flaky"}


def test_plugin_is_inert_without_results_file(project: Project) -> None:
    project.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    with plugin_dir() as directory:
        env = plugin_env(directory, project.root / "unused.jsonl")
        del env["FLAKEWARDEN_RESULTS"]
        done = subprocess.run(
            [*PYTEST, "-q"], cwd=project.root, env=env, capture_output=True, text=True
        )
    assert done.returncode == 0, done.stdout
    assert not (project.root / "unused.jsonl").exists()
    assert list(project.root.glob("*.jsonl")) == []


def test_records_phases_output_order_and_collection_errors(project: Project) -> None:
    project.write(
        "tests/test_mix.py",
        """
        import sys

        def test_first():
            pass

        def test_noisy_failure():
            print("to stdout")
            print("to stderr", file=sys.stderr)
            assert 0, "boom"
        """,
    )
    project.write("tests/test_broken.py", "raise ImportError('cannot import thing')\n")
    results_file = project.root / "results.jsonl"
    with plugin_dir() as directory:
        env = plugin_env(directory, results_file)
        env.pop("PYTEST_XDIST_WORKER", None)
        subprocess.run(
            [*PYTEST, "--continue-on-collection-errors"],
            cwd=project.root,
            env=env,
            capture_output=True,
            check=False,
        )
    results = read_results(results_file)
    assert results.config is not None
    assert results.config["rootdir"] == str(project.root)
    assert results.exitstatus == 1
    assert results.order == [
        "tests/test_mix.py::test_first",
        "tests/test_mix.py::test_noisy_failure",
    ]
    noisy = results.tests[1]
    assert [(p.when, p.outcome) for p in noisy.phases] == [
        ("setup", "passed"),
        ("call", "failed"),
        ("teardown", "passed"),
    ]
    assert noisy.stdout == "to stdout\n"
    assert noisy.stderr == "to stderr\n"
    assert [r.index for r in results.tests] == [0, 1]
    assert results.collect_errors[0][0] == "tests/test_broken.py"
    assert "cannot import thing" in results.collect_errors[0][1]
    assert all(json.loads(line) for line in results_file.read_text().splitlines())


def test_huge_failure_text_is_clipped(project: Project) -> None:
    project.write(
        "tests/test_big.py",
        """
        def test_big():
            assert False, "x" * 200_000
        """,
    )
    results_file = project.root / "results.jsonl"
    with plugin_dir() as directory:
        subprocess.run(
            PYTEST,
            cwd=project.root,
            env=plugin_env(directory, results_file),
            capture_output=True,
            check=False,
        )
    record = read_results(results_file).tests[0]
    text = record.phases[1].longrepr
    # The first and last 10,000 characters (MAX_TEXT // 2 each), the cut counted between.
    head, cut, tail = re.split(r"\n\[\.\.\. (\d+) characters cut by flakewarden \.\.\.\]\n", text)
    assert (len(head), len(tail)) == (10_000, 10_000)
    assert head.startswith("def test_big():") and tail.endswith("test_big.py:2: AssertionError")
    # Only the message's x's were cut: kept and cut, all 200,000 are there (the source
    # line's "x" aside).
    assert head.count("x") - 1 + int(cut) + tail.count("x") == 200_000
    assert os.path.getsize(results_file) < 100_000


def test_sigterm_keeps_buffered_records_and_still_kills(project: Project) -> None:
    started = project.root / "started"
    project.write(
        "tests/test_order.py",
        f"""
        import time
        from pathlib import Path

        def test_quick():
            pass

        def test_hangs():
            Path({str(started)!r}).write_text("x")
            time.sleep(60)
        """,
    )
    results_file = project.root / "results.jsonl"
    with plugin_dir() as directory:
        child = subprocess.Popen(
            PYTEST,
            cwd=project.root,
            env=plugin_env(directory, results_file),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(600):
            if started.exists():
                break
            time.sleep(0.05)
        assert started.exists(), "test_hangs never started: the signal would test nothing"
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == -signal.SIGTERM  # it still dies by the signal
    results = read_results(results_file)
    assert [record.id for record in results.tests] == ["tests/test_order.py::test_quick"]
    assert results.exitstatus is None


def _record(project: Project, *args: str) -> list[dict[str, Any]]:
    results_file = project.root / "results.jsonl"
    results_file.unlink(missing_ok=True)
    with plugin_dir() as directory:
        env = plugin_env(directory, results_file)
        env.pop("PYTEST_XDIST_WORKER", None)
        subprocess.run(
            [*PYTEST, *args], cwd=project.root, env=env, capture_output=True, check=False
        )
    return [json.loads(line) for line in results_file.read_text().splitlines()]


def test_records_subtests_apart_from_phases_and_pytest_s_own_counts(project: Project) -> None:
    project.write(
        "tests/test_sub.py",
        """
        import unittest

        class T(unittest.TestCase):
            def test_sub(self):
                for i in range(2):
                    with self.subTest(i=i):
                        print("in", i)
                        self.assertEqual(i, 0)
        """,
    )
    for verbosity in ([], ["-qq"]):
        records = _record(project, *verbosity)
        (test,) = [r for r in records if r["kind"] == "test"]
        # The TestCase's own call passes; the failure is only in its subtest.
        assert [(p["when"], p["outcome"]) for p in test["phases"]] == [
            ("setup", "passed"),
            ("call", "passed"),
            ("teardown", "passed"),
        ]
        subtests = test["subtests"]
        assert [(s["description"], s["outcome"]) for s in subtests] == [
            ("(i=0)", "passed"),
            ("(i=1)", "failed"),
        ]
        assert "AssertionError: 1 != 0" in subtests[1]["longrepr"]
        (stats,) = [r for r in records if r["kind"] == "pytest_stats"]
        # The line itself varies (-qq shows "1 subtests passed"); the split does not.
        assert {k: stats["summary"][k] for k in ("failed", "passed")} == {"failed": 1, "passed": 1}
        assert stats["tests"] == {"passed": 1}
        assert stats["subtests"] == {"passed": 1, "failed": 1}
        assert stats["failed_ids"] == ["tests/test_sub.py::T::test_sub"]
    records = _record(project, "-p", "no:terminal")
    assert [r["kind"] for r in records if r["kind"] == "pytest_stats"] == []
    assert [r["kind"] for r in records][-1] == "session"


def test_a_test_the_session_ended_inside_is_still_recorded(project: Project) -> None:
    project.write(
        "tests/test_exit.py",
        """
        import pytest

        def test_exit():
            pytest.exit("enough")
        """,
    )
    records = _record(project)
    (test,) = [r for r in records if r["kind"] == "test"]
    assert test["id"] == "tests/test_exit.py::test_exit"
    assert test["unfinished"] == "_pytest.outcomes.Exit: enough"
    assert test["line"] == 3


def test_a_skip_inside_the_call_keeps_its_reason(project: Project) -> None:
    project.write(
        "tests/test_skip.py",
        """
        import pytest

        def test_skips():
            pytest.skip("not on this machine")
        """,
    )
    (test,) = [r for r in _record(project) if r["kind"] == "test"]
    call = [p for p in test["phases"] if p["when"] == "call"]
    assert call == [
        {
            "when": "call",
            "outcome": "skipped",
            "duration": call[0]["duration"],
            "longrepr": "Skipped: not on this machine",
        }
    ]
