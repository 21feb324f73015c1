"""The plugin's record of the test modules a session collected, selected or not."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers.project import PYTEST, Project

from flakewarden.runner.process import plugin_dir, plugin_env
from flakewarden.runner.process_results import read_results


def test_collected_files_include_modules_whose_tests_were_all_deselected(
    project: Project,
) -> None:
    # pytest imported tests/test_b.py though -k kept none of its tests: importing it is
    # part of the session, so the record names it.
    project.write("tests/test_a.py", "def test_victim():\n    pass\n")
    project.write("tests/test_b.py", "def test_other():\n    pass\n")
    project.write("tests/test_empty.py", "VALUE = 1\n")
    results_file = project.root / "results.jsonl"
    with plugin_dir() as directory:
        env = plugin_env(directory, results_file)
        env.pop("PYTEST_XDIST_WORKER", None)
        subprocess.run(
            [*PYTEST, "-k", "test_victim", "tests/"],
            cwd=project.root,
            env=env,
            capture_output=True,
            check=False,
        )
    results = read_results(results_file)
    assert results.collected == ["tests/test_a.py::test_victim"]
    assert results.collected_files == ["tests/test_a.py", "tests/test_b.py", "tests/test_empty.py"]


def test_collected_files_fall_back_to_the_files_of_the_ids(tmp_path: Path) -> None:
    # An xdist controller hears no collect reports: the files of the ids stand for them.
    path = tmp_path / "results.jsonl"
    record = {"kind": "collected", "ids": ["t/test_a.py::x", "t/test_b.py::y", "t/test_a.py::z"]}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert read_results(path).collected_files == ["t/test_a.py", "t/test_b.py"]
