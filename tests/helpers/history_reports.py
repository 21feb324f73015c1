"""Real report directories for the history tests, written once by real ``flakewarden run``s."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from .github_emulator import GitHubEmulator
from .project import ISOLATED_INI, Project, flaky_module, make_project


class IngestJob(NamedTuple):
    """A job that ingests from GitHub (the ``ingest_job`` fixture)."""

    work: Path  # the job's working directory, the current one
    emu: GitHubEmulator


@pytest.fixture(scope="session")
def report_dirs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two runs of a project with a stable, a flaky and a broken test.

    The flake's counter file is kept, so it fails its first attempt in the first run only.
    """
    other = """
        def test_stable():
            pass

        def test_broken():
            assert False, "broken"
        """
    root = tmp_path_factory.mktemp("history") / "proj"
    files = {"test_flaky.py": flaky_module("flaky"), "test_other.py": other}
    project = Project(make_project(root, files, ini=ISOLATED_INI))
    dirs = []
    for n in (1, 2):
        done = project.run("-q", report_dir=f"report-{n}")
        assert done.returncode == 1, done.stderr
        dirs.append(done.report_dir)
    return dirs


def as_github_run(
    report_dir: Path, target: Path, run_id: int, attempt: int = 1, **context: Any
) -> Path:
    """A copy of a real report as the action would have written it in run ``run_id``."""
    data = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    data["context"].update(
        {
            "repository": "octo-org/octo-repo",
            "workflow": "CI",
            "run_id": run_id,
            "run_attempt": attempt,
            "job": "tests",
            "event": "push",
            "branch": "main",
            **context,
        }
    )
    target.mkdir(parents=True, exist_ok=True)
    (target / "report.json").write_text(json.dumps(data), encoding="utf-8")
    (target / "junit.xml").write_text("<testsuites/>", encoding="utf-8")
    return target
