"""The environment every test starts from: none of the job's, wherever the suite runs.

Inside a GitHub Actions job every step sees ``GITHUB_EVENT_PATH``, ``GITHUB_TOKEN``,
``GITHUB_STEP_SUMMARY`` and the rest; a test that read them in-process, or a child it
started, would pass on a laptop and fail (or publish) in the job. The suite's conftest
removes them for every test; a test that needs one sets it itself (``monkeypatch.setenv``
or the ``env`` it gives a child).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

# What a CI job, a runner or an outer flakewarden run puts in the environment.
AMBIENT_PREFIXES = ("GITHUB_", "RUNNER_", "ACTIONS_", "FLAKEWARDEN_")
AMBIENT_NAMES = frozenset({"CI"})
# What the outer pytest (xdist, coverage, the outer flakewarden's plugin) passes down:
# a pytest a test starts must be configured by that test alone.
PYTEST_LEAKS = frozenset(
    {
        "PYTEST_ADDOPTS",
        "PYTEST_XDIST_WORKER",
        "PYTEST_XDIST_WORKER_COUNT",
        "PYTEST_XDIST_TESTRUNUID",
        "COVERAGE_FILE",
    }
)
# Settings of the suite itself, not of any job: where downloaded corpora are cached, the
# browser the page tests drive, where they keep their screenshots.
SUITE_SETTINGS = frozenset(
    {"FLAKEWARDEN_CORPUS_CACHE", "FLAKEWARDEN_CHROMIUM", "FLAKEWARDEN_SCREENSHOTS"}
)


def is_ambient(name: str) -> bool:
    """True for a variable a test must not inherit."""
    if name in SUITE_SETTINGS:
        return False
    return name in AMBIENT_NAMES or name in PYTEST_LEAKS or name.startswith(AMBIENT_PREFIXES)


def ambient(names: Iterable[str]) -> list[str]:
    return sorted(name for name in names if is_ambient(name))


def clean_env(
    extra: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``base`` (default: this process's environment) without the ambient variables,
    then ``extra``: the environment a test's child starts from."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if not is_ambient(k)}
    env.update(extra or {})
    return env
