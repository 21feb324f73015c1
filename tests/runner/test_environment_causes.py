"""Causes of the environment's: told apart by their signature, said so in every report."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.cause_projects import storm_project

from flakewarden.model.environment import DEFAULT_PATTERNS, environment_pattern
from flakewarden.model.signatures import Signature, mask
from flakewarden.reports.annotations import rank_annotations
from flakewarden.reports.report_json import read_report


@pytest.mark.parametrize(
    ("exception", "message", "pattern"),
    [
        ("ConnectionRefusedError", "[Errno 111] Connection refused", "type:ConnectionRefusedError"),
        (
            "ConnectionResetError",
            "[Errno 104] Connection reset by peer",
            "type:ConnectionResetError",
        ),
        ("gaierror", "[Errno -2] Name or service not known", "type:gaierror"),
        ("OSError", "getaddrinfo failed", "message:(?i)name or service"),
        ("TimeoutError", "timed out", "^(?:TimeoutError|timeout): timed out$"),
        ("HTTPError", "HTTP Error 503: Service Unavailable", "message:(?i)\\bN\\b.{0,20}"),
        ("HTTPError", "HTTP Error 429: Too Many Requests", "message:(?i)\\bN\\b.{0,20}"),
        ("HTTPError", "HTTP Error 504: Gateway Time-out", "message:(?i)\\bN\\b.{0,20}"),
        (
            "HTTPError",
            "503 Server Error: Service Unavailable for url: https://pypi.example/simple",
            "message:(?i)\\bN\\b.{0,20}",
        ),
        (
            "HTTPStatusError",
            "Server error '502 Bad Gateway' for url 'https://x.example'",
            "message:(?i)\\bN\\b.{0,20}",
        ),
        ("OSError", "[Errno 28] No space left on device: '/tmp/x'", "message:(?i)no space"),
        ("MemoryError", "", "type:MemoryError"),
        ("failure", "the process was killed by SIGKILL (signal 9)", "message:was killed by"),
    ],
)
def test_the_built_in_patterns_know_the_environment(
    exception: str, message: str, pattern: str
) -> None:
    found = environment_pattern(Signature(exception, mask(message), ""), DEFAULT_PATTERNS)
    assert found.startswith(pattern), found


@pytest.mark.parametrize(
    ("exception", "message"),
    [
        ("AssertionError", "assert 3 == 4"),
        ("TimeoutError", "the worker did not answer in N seconds"),  # a test's own deadline
        ("HTTPError", "HTTP Error 500: Internal Server Error"),
        ("KeyError", "'service unavailable flag'"),
        ("ValueError", "connection refused is not a valid state"),
    ],
)
def test_what_a_test_does_wrong_is_not_the_environment(exception: str, message: str) -> None:
    assert environment_pattern(Signature(exception, mask(message), ""), DEFAULT_PATTERNS) == ""


def test_a_refused_database_is_the_environment_and_a_test_flaking_alone_is_not(
    tmp_path: Path,
) -> None:
    project = storm_project(tmp_path / "p", storm=4, modules=2)
    result = project.run("-q")
    assert result.returncode == 0, result.stdout + result.stderr
    storm, loner = result.report["causes"]
    assert storm["environment"] is True
    assert storm["environment_pattern"] == "type:ConnectionRefusedError"
    assert loner["environment"] is False and "environment_pattern" not in loner
    summary = (result.report_dir / "summary.md").read_text(encoding="utf-8")
    assert "all 4 passed on a rerun; the environment, not the tests (it matches " in summary
    annotations = rank_annotations(read_report(result.report_dir), None)
    titles = sorted(a.title for a in annotations)
    assert titles == [
        *(f"Failed because of the environment: {test}" for test in sorted(storm["tests"])),
        "Flaky test: tests/test_loner.py::test_alone",
    ]
    said = next(a for a in annotations if a.title.endswith(storm["tests"][0]))
    assert said.message.startswith(
        "The environment failed it (type:ConnectionRefusedError), then it passed on a rerun"
    )


def test_the_configured_patterns_decide_what_the_environment_is(tmp_path: Path) -> None:
    project = storm_project(tmp_path / "p", storm=2, modules=1)
    project.write(
        ".github/flakewarden.yml",
        """
        causes:
          builtin_environment: false
          environment: ['message:the cache was not warm']
        """,
    )
    result = project.run("-q")
    assert result.returncode == 0, result.stdout + result.stderr
    flags = {c["tests"][0].rpartition("::")[2]: c["environment"] for c in result.report["causes"]}
    assert flags == {"test_query_0": False, "test_alone": True}
