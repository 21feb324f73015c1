"""Narrow reruns: ``rerun.only`` / ``rerun.except`` match what a failure raised, its chain
included; a failure held back is reported ``failed`` with the reason, never rerun."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.project import BUMP_BY_NAME, PYTEST, Project

from flakewarden.config import load
from flakewarden.errors import ConfigError
from flakewarden.model.raised import Raised
from flakewarden.model.rerun_policy import RerunPolicy, check, matched

TIMEOUT = Raised("builtins.TimeoutError", ("builtins.OSError", "builtins.Exception"), "slow")
RESET = Raised(
    "builtins.ConnectionResetError",
    ("builtins.ConnectionError", "builtins.OSError", "builtins.Exception"),
    "peer reset",
)
WRAPPED = Raised("builtins.RuntimeError", ("builtins.Exception",), "fetch failed")
READ_TIMEOUT = Raised(
    "requests.exceptions.ReadTimeout",
    ("requests.exceptions.Timeout", "requests.exceptions.RequestException", "builtins.OSError"),
    "HTTPSConnectionPool(host='api'): Read timed out. (read timeout=5)",
)


@pytest.mark.parametrize(
    ("pattern", "raised", "expected"),
    [
        ("TimeoutError", [TIMEOUT], "TimeoutError"),
        ("builtins.TimeoutError", [TIMEOUT], "TimeoutError"),
        ("OSError", [TIMEOUT], "TimeoutError"),  # a base class
        ("ConnectionError", [WRAPPED, RESET], "ConnectionResetError"),  # the chain
        ("requests.exceptions.Timeout", [READ_TIMEOUT], "ReadTimeout"),
        ("exceptions.ReadTimeout", [READ_TIMEOUT], "ReadTimeout"),  # a dotted tail
        ("Timeout", [READ_TIMEOUT], "ReadTimeout"),  # the base's name, and in the message
        ("eadTimeout", [READ_TIMEOUT], "ReadTimeout"),  # as a regex, on "type: message"
        ("type:eadTimeout", [READ_TIMEOUT], None),  # a name is whole, never a fragment
        ("type:TimeoutError", [WRAPPED], None),
        ("message:Read timed out", [READ_TIMEOUT], "ReadTimeout"),
        ("message:ReadTimeout", [READ_TIMEOUT], "ReadTimeout"),  # the type is in the line
        ("message:^builtins\\.RuntimeError: fetch", [WRAPPED, RESET], "RuntimeError"),
        ("message:TimeoutError", [WRAPPED, RESET], None),
        ("AssertionError", [TIMEOUT], None),
        ("TimeoutError", [], None),
    ],
)
def test_a_pattern_matches_a_name_a_base_the_chain_or_the_message(
    pattern: str, raised: list[Raised], expected: str | None
) -> None:
    assert matched(pattern, raised) == expected


def test_the_policy_says_why_a_failure_is_not_rerun() -> None:
    only = RerunPolicy(only=("TimeoutError", "ConnectionError"))
    assert only.refusal([TIMEOUT]) == ""
    assert only.refusal([WRAPPED, RESET]) == ""
    assert only.refusal([WRAPPED]) == "not rerun: RuntimeError is not in rerun.only"
    assert only.refusal([WRAPPED, TIMEOUT]) == ""  # a timeout in its context chain
    assert (
        only.refusal([], crash="killed by SIGSEGV")
        == "not rerun: the process crashed, and rerun.only reruns only the exceptions it names"
    )
    exclude = RerunPolicy(exclude=("AssertionError", "message:fetch failed"))
    assert exclude.refusal([TIMEOUT]) == ""
    assert exclude.refusal([]) == ""  # a crash is rerun unless rerun.only says otherwise
    assert (
        exclude.refusal([WRAPPED, RESET])
        == "not rerun: RuntimeError is in rerun.except (message:fetch failed)"
    )
    both = RerunPolicy(only=("OSError",), exclude=("ConnectionResetError",))
    assert both.refusal([TIMEOUT]) == ""
    assert both.refusal([RESET]) == (
        "not rerun: ConnectionResetError is in rerun.except (ConnectionResetError)"
    )
    assert not RerunPolicy().active and both.active


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("(", "is not a regular expression"),
        ("", "non-empty"),
        ("type:", "names nothing"),
        ("x" * 501, "at most 500"),
    ],
)
def test_a_bad_pattern_is_refused_with_its_reason(pattern: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        check(pattern)


def test_the_config_file_takes_rerun_only_and_except(tmp_path: Path) -> None:
    path = tmp_path / "flakewarden.yml"
    path.write_text("rerun:\n  only: [TimeoutError, 'message:503']\n  except: AssertionError\n")
    config = load(path, tmp_path)
    assert config.rerun_only == ("TimeoutError", "message:503")
    assert config.rerun_except == ("AssertionError",)
    path.write_text("rerun:\n  only: ['[']\n")
    with pytest.raises(ConfigError, match=r"rerun\.only: '\[' is not a regular expression"):
        load(path, tmp_path)
    path.write_text("rerun:\n  exept: [x]\n")
    with pytest.raises(ConfigError, match="did you mean 'except'"):
        load(path, tmp_path)


SUITE = (
    """
from pathlib import Path

import errors


def test_assertion():
    assert bump("assertion") > 5, "a real bug"


def test_timeout_once():
    if bump("timeout") == 1:
        raise TimeoutError("read timed out")


def test_chained_reset_once():
    if bump("reset") == 1:
        try:
            raise ConnectionResetError("peer reset")
        except ConnectionError as exc:
            raise RuntimeError("fetch failed") from exc


def test_service_unavailable_once():
    if bump("service") == 1:
        raise errors.ServiceUnavailable("503 from the price service")


def test_timeout_then_assertion():
    if bump("then") == 1:
        raise TimeoutError("first a timeout")
    assert False, "then a real bug"
"""
    + BUMP_BY_NAME
)


def _suite(project: Project) -> None:
    project.write("tests/errors.py", "class ServiceUnavailable(Exception):\n    pass\n")
    project.write("tests/test_suite.py", SUITE)


def test_only_the_failures_the_policy_names_are_rerun(project: Project) -> None:
    _suite(project)
    result = project.run(
        "--rerun-only",
        "TimeoutError",
        "--rerun-only",
        "ConnectionError",
        "--rerun-only",
        "type:errors.ServiceUnavailable",
    )
    assert result.returncode == 1, result.stdout + result.stderr
    tid = "tests/test_suite.py::test_"
    assert result.outcomes == {
        f"{tid}assertion": "failed",
        f"{tid}timeout_once": "flaky",
        f"{tid}chained_reset_once": "flaky",
        f"{tid}service_unavailable_once": "flaky",
        f"{tid}timeout_then_assertion": "failed",
    }
    held = result.test(f"{tid}assertion")
    assert held["not_rerun"] == "not rerun: AssertionError is not in rerun.only"
    assert [a["attempt"] for a in held["attempts"]] == [1]
    # Rerun for its timeout, it then failed an assertion: not rerun a second time.
    then = result.test(f"{tid}timeout_then_assertion")
    assert [a["attempt"] for a in then["attempts"]] == [1, 2]
    assert then["not_rerun"] == "not rerun: AssertionError is not in rerun.only"
    assert [r["type"] for r in then["attempts"][0]["raised"]] == ["builtins.TimeoutError"]
    chained = result.test(f"{tid}chained_reset_once")["attempts"][0]["raised"]
    assert [(r["type"], r["message"]) for r in chained] == [
        ("builtins.RuntimeError", "fetch failed"),
        ("builtins.ConnectionResetError", "peer reset"),
    ]
    assert "builtins.ConnectionError" in chained[1]["bases"]
    attempts = result.report["attempts"]
    rerun = [
        "timeout_once",
        "chained_reset_once",
        "service_unavailable_once",
        "timeout_then_assertion",
    ]
    assert [a["selected"] for a in attempts[1:]] == [[f"{tid}{name}" for name in rerun]]
    summary = (result.report_dir / "summary.md").read_text(encoding="utf-8")
    assert "2 failed tests were not rerun by the rerun policy" in summary
    assert "1 of 1 failed; not rerun: AssertionError is not in rerun.only" in summary
    assert (
        "NOT-RERUN: tests/test_suite.py::test_assertion "
        "(not rerun: AssertionError is not in rerun.only)" in result.stdout
    )


def test_rerun_except_from_the_config_holds_back_across_xdist_workers(
    project: Project,
) -> None:
    _suite(project)
    project.write(".github/flakewarden.yml", "rerun:\n  except: [AssertionError]\n")
    (project.root / ".git").mkdir()
    result = project.run(command=[*PYTEST, "-n", "2"])
    assert result.returncode == 1, result.stdout + result.stderr
    tid = "tests/test_suite.py::test_"
    assert result.outcomes[f"{tid}assertion"] == "failed"
    assert result.test(f"{tid}assertion")["not_rerun"] == (
        "not rerun: AssertionError is in rerun.except (AssertionError)"
    )
    assert result.outcomes[f"{tid}service_unavailable_once"] == "flaky"
    # What a worker's test raised reached the controller's records.
    first = result.test(f"{tid}service_unavailable_once")["attempts"][0]
    assert first["raised"][0]["type"] == "errors.ServiceUnavailable"
    assert result.test(f"{tid}timeout_then_assertion")["not_rerun"].endswith(
        "is in rerun.except (AssertionError)"
    )


def test_a_bad_pattern_on_the_command_line_is_a_usage_error(project: Project) -> None:
    _suite(project)
    result = project.run("--rerun-only", "ServiceUnavailable(")
    assert result.returncode == 4
    assert result.stderr.strip().splitlines()[-1] == (
        "flakewarden: error: argument --rerun-only: 'ServiceUnavailable(' is not a regular "
        "expression: missing ), unterminated subpattern at position 18"
    )
    assert not (project.root / "report").exists()
    assert list((project.root / "tests").glob("*.count")) == []  # no test ran
