"""The configuration file: every key optional, one clear line for each mistake, exit 4."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.project import PYTEST, PYTHON, Project, flaky_module

from flakewarden.config import Config, QuarantinePolicy, find_default, load
from flakewarden.errors import ConfigError
from flakewarden.model.environment import DEFAULT_PATTERNS

FULL = """
reruns: 3
max_failures: 5
quarantine_policy:
  min_failures: 4
  require_stress_verdict: true
  stress_runs: 300
  allowed_verdicts: [not-reproducible, flaky, order-dependent]
  verdict_max_age_days: 7
  enter_failure_rate: 0.2
  exit_failure_rate: 0.02
  min_runs_to_release: 80
  max_days: 21
known_race_patterns: docs/races.md
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ".github" / "flakewarden.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_full_file(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)
    config = load(None, tmp_path)
    assert config.source == path
    assert config.reruns == 3
    assert config.max_failures == 5
    assert config.known_race_patterns == "docs/races.md"
    assert config.quarantine_policy == QuarantinePolicy(
        min_failures=4,
        require_stress_verdict=True,
        stress_runs=300,
        allowed_verdicts=("not-reproducible", "flaky", "order-dependent"),
        verdict_max_age_days=7,
        enter_failure_rate=0.2,
        exit_failure_rate=0.02,
        min_runs_to_release=80,
        max_days=21,
    )


def test_no_file_and_empty_file_give_defaults(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    assert load(None, tmp_path) == Config()
    write(tmp_path, "")
    assert load(None, tmp_path).reruns == 2


def test_default_found_from_a_subdirectory_but_not_past_the_repo(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    write(repo, "reruns: 1\n")
    assert find_default(repo / "src" / "deep") == repo / ".github" / "flakewarden.yml"
    inner = repo / "vendored"
    (inner / ".git").mkdir(parents=True)
    assert find_default(inner) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rerns: 2\n", "rerns: unknown key; did you mean 'reruns'?"),
        ("rerun: 2\n", "rerun must be a mapping, got 2"),
        ("rerun:\n  only: 3\n", "rerun.only: expected a pattern or a list of patterns, got 3"),
        ("retry:\n  count_as_flakey: true\n", "did you mean 'count_as_flaky'?"),
        (
            "quarantine_policy:\n  min_failure: 3\n",
            "quarantine_policy.min_failure: unknown key; did you mean 'min_failures'?",
        ),
        ("reruns: two\n", "reruns: expected a whole number, got 'two'"),
        ("reruns: -1\n", "reruns: must be 0 or more, got -1"),
        ("max_failures: true\n", "max_failures: expected a whole number, got True"),
        (
            "quarantine_policy:\n  enter_failure_rate: 1.5\n",
            "quarantine_policy.enter_failure_rate: must be above 0 and at most 1, got 1.5",
        ),
        (
            "quarantine_policy:\n  require_stress_verdict: 'yes'\n",
            "quarantine_policy.require_stress_verdict: expected true or false, got 'yes'",
        ),
        (
            "quarantine_policy:\n  allowed_verdicts: [flaky, race]\n",
            "quarantine_policy.allowed_verdicts: 'race' can never allow a quarantine",
        ),
        (
            "quarantine_policy:\n  allowed_verdicts: [deterministic]\n",
            "'deterministic' can never allow a quarantine",
        ),
        (
            "quarantine_policy:\n  allowed_verdicts: [flakey]\n",
            "unknown verdict 'flakey'; did you mean 'flaky'?",
        ),
        (
            "quarantine_policy:\n  enter_failure_rate: 0.1\n  exit_failure_rate: 0.1\n",
            "exit_failure_rate (0.1) must be below enter_failure_rate (0.1)",
        ),
        ("quarantine_policy:\n  min_runs: 0\n", "quarantine_policy.min_runs: must be 1 or more"),
        ("history:\n  window_run: 20\n", "history.window_run: unknown key; did you mean"),
        (
            "history:\n  fell_over_share: 0\n",
            "history.fell_over_share: must be above 0 and at most 1, got 0",
        ),
        ("history:\n  window_runs: null\n", "window_runs and window_days cannot both be null"),
        ("history:\n  default_branch: ''\n", "history.default_branch: expected a non-empty"),
        ("history: 3\n", "history must be a mapping"),
        ("- reruns\n", "the file must be a mapping"),
        ("quarantine_policy: 3\n", "quarantine_policy must be a mapping"),
        ("reruns: [1\n", "malformed YAML at line 2"),
        ("owners: [tests/]\n", "owners: expected a mapping of path patterns to owners"),
        ("owners:\n  tests/: '@not@valid'\n", "'@not@valid' is not @user, @org/team or an email"),
        ("owners:\n  '!tests/': '@a'\n", "expected a path pattern (no ! negation)"),
        ("owners:\n  tests/: [3]\n", "expected an owner or a list of owners, got [3]"),
        ("triage_label: 'a,b'\n", "triage_label: a label name of at most 50 characters"),
        ("notify:\n  webhook_url: ftp://x\n", "notify.webhook_url: expected an http(s) URL"),
        ("notify:\n  webhook: https://x\n", "notify.webhook: unknown key; did you mean"),
        ("causes:\n  environment: ['message:(']\n", "causes.environment: 'message:(' is not"),
        ("causes:\n  environmnet: [x]\n", "causes.environmnet: unknown key; did you mean"),
        ("causes:\n  builtin_environment: 1\n", "causes.builtin_environment: expected true"),
    ],
)
def test_errors_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load(None, tmp_path)
    assert message in str(info.value)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)
    assert info.value.exit_code == 4


def test_environment_patterns_add_to_the_built_in_list_or_replace_it(tmp_path: Path) -> None:
    write(tmp_path, "causes:\n  environment: ['message:flaky mirror', 'type:DbDown']\n")
    added = load(None, tmp_path).causes.environment
    assert added == (*DEFAULT_PATTERNS, "message:flaky mirror", "type:DbDown")
    write(tmp_path, "causes:\n  builtin_environment: false\n  environment: 'type:DbDown'\n")
    assert load(None, tmp_path).causes.environment == ("type:DbDown",)


def test_explicit_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"config file .*nope\.yml not found"):
        load(Path("nope.yml"), tmp_path)


def test_yaml_is_loaded_safely(tmp_path: Path) -> None:
    write(tmp_path, "reruns: !!python/object/apply:os.system ['echo owned']\n")
    with pytest.raises(ConfigError, match="malformed YAML"):
        load(None, tmp_path)


def test_run_reads_the_file_and_the_command_line_wins(project: Project) -> None:
    (project.root / ".git").mkdir()
    project.write(".github/flakewarden.yml", "reruns: 0\nreport_dir: from-config\n")
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    # The file says no reruns: the flake fails the run.
    from_file = project.run(report_dir="r1")
    assert from_file.returncode == 1
    assert len(from_file.report["attempts"]) == 1
    # The command line says one rerun: it wins.
    (project.root / "tests" / ".counter-flaky").unlink()
    from_cli = project.run("--reruns", "1", report_dir="r2")
    assert from_cli.returncode == 0
    assert from_cli.outcomes == {"tests/test_flaky.py::test_flaky": "flaky"}


def test_run_with_a_bad_config_exits_4(project: Project) -> None:
    project.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    project.write("bad.yml", "reruns: lots\n")
    result = project.run("--config", "bad.yml")
    assert result.returncode == 4
    assert result.stderr.strip() == (
        f"flakewarden: error: {project.root / 'bad.yml'}: reruns: expected a whole number, "
        "got 'lots'"
    )
    assert not (result.report_dir / "report.json").exists()


def test_no_fail_on_flaky_overrides_the_file(project: Project) -> None:
    project.write("flakewarden.yml", "fail_on_flaky: true\n")
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    strict = project.run("--config", "flakewarden.yml", report_dir="r1")
    assert strict.returncode == 1
    (project.root / "tests" / ".counter-flaky").unlink()
    relaxed = project.run("--config", "flakewarden.yml", "--no-fail-on-flaky", report_dir="r2")
    assert relaxed.returncode == 0
    assert relaxed.outcomes == {"tests/test_flaky.py::test_flaky": "flaky"}


# -- hostile documents: bounded before use, one short line, exit 4 ---------------------


def alias_bomb(levels: int = 9) -> str:
    """The billion laughs as one config value: 9**9 strings if anything expands it."""
    lines = ["reruns:", "  - &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for previous, name in zip("abcdefghij", "bcdefghijk"[: levels - 1]):
        lines.append(f"  - &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def run_cli(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI, capped at 1 GiB and 120 s: a bomb that goes off fails, not hangs.

    The time cap is generous: a loaded machine starting Python must not be taken for a bomb.
    """
    return subprocess.run(
        [PYTHON, "-m", "flakewarden", *args],
        cwd=project.root,
        env=project.env(),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_memory,
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (alias_bomb(), "more than 32 YAML aliases"),
        ("reruns: " + "1" * 5000 + "\n", "a value at line 1 is over 4096 characters"),
        ("reruns: " + "9" * 4000 + "\n", "reruns: must be at most 100, got 999"),
        ("reruns: " + "[" * 50 + "]" * 50 + "\n", "nested deeper than 20 levels"),
        ("cov_fail_under: .nan\n", "cov_fail_under: expected a finite number, got nan"),
        ("cov_fail_under: .inf\n", "cov_fail_under: expected a finite number, got inf"),
        (
            "quarantine_policy:\n  exit_failure_rate: .nan\n",
            "quarantine_policy.exit_failure_rate: expected a finite number, got nan",
        ),
        ("report_dir: [" + "x, " * 50 + "]\n", "report_dir: expected a non-empty string, got"),
    ],
    ids=["alias-bomb", "5000-digits", "4000-digits", "deep", "nan", "inf", "policy-nan", "list"],
)
def test_a_hostile_config_is_a_short_config_error(
    project: Project, text: str, message: str
) -> None:
    project.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    project.write("hostile.yml", text)
    result = run_cli(project, "run", "--config", "hostile.yml", "--", *PYTEST)
    assert result.returncode == 4, result.stderr[-500:]
    [line] = result.stderr.splitlines()
    assert line.startswith(f"flakewarden: error: {project.root / 'hostile.yml'}: "), line
    assert message in line
    assert len(line) < 200 + len(str(project.root)), line


def test_an_alias_bomb_within_the_alias_limit_is_never_expanded(tmp_path: Path) -> None:
    # 27 aliases stay under the limit; the error quotes a few items only.
    write(tmp_path, alias_bomb(levels=4).replace("reruns:", "cov_fail_under:"))
    with pytest.raises(ConfigError) as info:
        load(None, tmp_path)
    assert "cov_fail_under: expected a number, got [[" in str(info.value)
    assert len(str(info.value)) < 200 + len(str(tmp_path))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--cov-fail-under", "nan"],
            "--cov-fail-under: expected 0 or more and at most 100, got nan",
        ),
        (
            ["--cov-fail-under", "inf"],
            "--cov-fail-under: expected 0 or more and at most 100, got inf",
        ),
        (
            ["--cov-fail-under=-inf"],
            "--cov-fail-under: expected 0 or more and at most 100, got -inf",
        ),
        (["--reruns", "1" * 5000], "--reruns: expected at most 100, got '1111"),
        (["--reruns", "101"], "--reruns: expected at most 100, got 101"),
        (["--max-failures", "x" * 5000], "--max-failures: expected a whole number, got 'xxx"),
    ],
)
def test_non_finite_or_huge_options_are_usage_errors(
    project: Project, args: list[str], message: str
) -> None:
    result = run_cli(project, "run", *args, "--", *PYTEST)
    assert result.returncode == 4, result.stderr
    line = result.stderr.splitlines()[-1]
    assert message in line
    assert len(line) < 200, line


def test_stress_budget_must_be_finite(project: Project) -> None:
    result = run_cli(project, "stress", "t.py::t", "--budget-seconds", "inf", "--", *PYTEST)
    assert result.returncode == 4, result.stderr
    assert "--budget-seconds: expected seconds, a finite one, got 'inf'" in result.stderr


def test_a_non_finite_cov_fail_under_in_the_pytest_command_is_a_usage_error(
    project: Project,
) -> None:
    project.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    result = run_cli(project, "run", "--", *PYTEST, "--cov=.", "--cov-fail-under=nan")
    assert result.returncode == 4, result.stdout + result.stderr
    assert "--cov-fail-under expects a finite number, got 'nan'" in result.stderr
