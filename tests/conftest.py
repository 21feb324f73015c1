"""The suite's shared fixtures: a hermetic environment, a project, a GitHub emulator.

What they build lives in ``helpers/``, which test modules import directly.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import checked_emulator, emulator_env
from helpers.hermetic import ambient
from helpers.history_reports import IngestJob
from helpers.project import ISOLATED_INI, Project, make_project


@pytest.fixture(scope="session", autouse=True)
def _hermetic_session() -> Iterator[None]:
    """No job's variable reaches a session or module fixture, or the children they start.

    Removed here, after collection, not at start-up: an outer ``flakewarden run`` that
    runs this suite has its plugin read its own variables while pytest collects.
    """
    with pytest.MonkeyPatch.context() as patch:
        for name in ambient(os.environ):
            patch.delenv(name)
        yield


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts without the job's variables, even if one before it set some."""
    for name in ambient(os.environ):
        monkeypatch.delenv(name)


@pytest.fixture
def one_stress_at_a_time() -> Iterator[None]:
    """Serialise the corpus's stress runs, also across pytest-xdist workers.

    Each stress run loads the machine on purpose (CPU burners); several at once
    would be each other's ambient load and blur the timing evidence of all. A test whose
    evidence is order, seeds or state (never timing) does without it and runs in the
    parallel part of the suite.
    """
    path = os.path.join(tempfile.gettempdir(), "flakewarden-stress-corpus.lock")
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the stress tests ``serial``: they measure timing under CPU burners on purpose.

    The project's test command (``.ci/run``, docs/development.md) runs everything else on
    xdist workers and then these alone, so that no other test's load blurs the timing evidence
    they assert on.
    """
    for item in items:
        if "one_stress_at_a_time" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.serial)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """An empty project with a pytest config that fixes order and caches nothing."""
    return Project(make_project(tmp_path / "proj", {}, ini=ISOLATED_INI))


@pytest.fixture
def emulator() -> Iterator[GitHubEmulator]:
    """The GitHub emulator on loopback; every exchange with it must match GitHub's schemas."""
    yield from checked_emulator()


@pytest.fixture
def ingest_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[IngestJob]:
    """A job that ingests from GitHub: its own working directory (the current one), and its
    environment pointed at a fresh emulator."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    with GitHubEmulator() as emu:
        emulator_env(monkeypatch, emu)
        yield IngestJob(work, emu)
