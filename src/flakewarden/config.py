"""The configuration file, ``.github/flakewarden.yml``: every key optional, every error one line.

Command-line options win over the file; the file wins over the defaults. An
unknown key, a wrong type or an out-of-range value is a ``ConfigError`` (exit 4)
naming the key's path and, for a misspelt key, the nearest valid one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple, Optional

from flakewarden.config_values import (
    Check,
    boolean,
    choice,
    label,
    nearest,
    number,
    optional_days,
    optional_percent,
    optional_runs,
    optional_seconds,
    owners,
    patterns,
    plain_text,
    shown,
    verdicts,
    webhook,
    whole,
)
from flakewarden.config_yaml import SHOWN, load_yaml
from flakewarden.errors import ConfigError
from flakewarden.model.environment import DEFAULT_PATTERNS
from flakewarden.model.verdicts import (
    FLAKY,
    NOT_REPRODUCIBLE,
    UNTOUCHED_POLICIES,
)

DEFAULT_PATH = Path(".github") / "flakewarden.yml"


# The three records below are NamedTuples, not dataclasses: ``flakewarden run`` reads its
# configuration before the tests start, and importing ``dataclasses`` (it brings ``inspect``
# and ``ast``) would delay every run's first test by ~14 ms.


class QuarantinePolicy(NamedTuple):
    min_failures: int = 3
    require_stress_verdict: bool = True
    stress_runs: int = 200
    allowed_verdicts: tuple[str, ...] = (NOT_REPRODUCIBLE, FLAKY)
    verdict_max_age_days: float = 14
    # flaky / not-reproducible: the largest knob effect the stress runs may leave unexcluded
    max_knob_increase: float = 0.0025
    relative_knob_increase: float = 0.5
    enter_failure_rate: float = 0.15
    exit_failure_rate: float = 0.05
    min_runs_to_release: int = 50
    max_days: float = 30
    # The minimum sample: fewer runs in the history window and a test is ``new``, not scored.
    min_runs: int = 20


class HistoryWindow(NamedTuple):
    """The window the flake history scores over (``history:`` in the file)."""

    default_branch: Optional[str] = None  # else the repository's default, else main
    window_runs: Optional[int] = 50
    window_days: Optional[float] = None
    fell_over_share: float = 0.30  # a run where more tests failed is left out


class BurnIn(NamedTuple):
    """``flakewarden burn-in``'s settings (``burn_in:`` in the file)."""

    fail_on_flaky: bool = True  # a new test that failed any run fails the check (exit 1)
    budget_seconds: float = 120.0  # for all the selected tests together
    cap: int = 40  # at most this many tests are stressed


class BlameSettings(NamedTuple):
    """``flakewarden run --base``'s settings (``blame:`` in the file)."""

    base: Optional[str] = None  # the ref to compare with; "auto": the pull request's base
    untouched_failures: str = "report"  # report | warn | ignore-in-gate
    check_base: bool = False  # run untouched failures on the merge base too
    base_timeout: float = 600.0  # seconds the base check may take


class CauseSettings(NamedTuple):
    """How failures are grouped into causes (``causes:`` in the file)."""

    environment: tuple[str, ...] = DEFAULT_PATTERNS  # what tells the environment's causes
    # Most tests rerun, past --max-failures, for causes of the environment's.
    environment_rerun_limit: int = 200
    storm_tests: int = 3  # a cause that hits this many tests in a run files one cause issue


class Config(NamedTuple):
    reruns: int = 2
    max_failures: int = 10
    fail_on_flaky: bool = False
    cov_fail_under: Optional[float] = None
    report_dir: str = "flakewarden-report"
    attempt_timeout: Optional[float] = None  # seconds a test process may run
    fork_reruns: bool = True  # reruns forked from a warm pytest where safe
    quarantine_policy: QuarantinePolicy = QuarantinePolicy()
    history: HistoryWindow = HistoryWindow()
    burn_in: BurnIn = BurnIn()
    blame: BlameSettings = BlameSettings()
    known_race_patterns: str = "known-race-patterns.md"
    # Seconds all of a step's GitHub bookkeeping may take before it gives up (fail-open).
    issues_deadline: float = 60
    quarantine_read_deadline: float = 15
    # Path patterns to owners, CODEOWNERS' syntax; wins over the repository's CODEOWNERS.
    owners: tuple[tuple[str, tuple[str, ...]], ...] = ()
    triage_label: str = "flake-triage"  # on a new flake issue nobody owns
    # notify.webhook_url: one message per new flake issue and escalation (a secret in
    # FLAKEWARDEN_WEBHOOK_URL wins; a URL in a committed file is no secret).
    webhook_url: Optional[str] = None
    # rerun.only / rerun.except: which failures are rerun, by what they raised.
    rerun_only: tuple[str, ...] = ()
    rerun_except: tuple[str, ...] = ()
    # retry.count_as_flaky: a test that passed only after in-test retries files like a flake.
    retry_count_as_flaky: bool = False
    causes: CauseSettings = CauseSettings()
    source: Optional[Path] = None  # the file read, if any


POLICY_KEYS: dict[str, Check] = {
    "min_failures": whole(1),
    "require_stress_verdict": boolean,
    "stress_runs": whole(1),
    "allowed_verdicts": verdicts,
    "verdict_max_age_days": number(0, 3650, low_open=True),
    "max_knob_increase": number(0, 1),
    "relative_knob_increase": number(0, 10),
    "enter_failure_rate": number(0, 1, low_open=True),
    "exit_failure_rate": number(0, 1),
    "min_runs_to_release": whole(1),
    "max_days": number(0, 3650, low_open=True),
    "min_runs": whole(1),
}
NOTIFY_KEYS: dict[str, Check] = {"webhook_url": webhook}
RERUN_KEYS: dict[str, Check] = {"only": patterns, "except": patterns}
RETRY_KEYS: dict[str, Check] = {"count_as_flaky": boolean}
CAUSE_KEYS: dict[str, Check] = {
    "environment": patterns,
    "builtin_environment": boolean,
    "environment_rerun_limit": whole(0),
    "storm_tests": whole(2),
}

HISTORY_KEYS: dict[str, Check] = {
    "default_branch": plain_text,
    "window_runs": optional_runs,
    "window_days": optional_days,
    "fell_over_share": number(0, 1, low_open=True),
}
BURN_IN_KEYS: dict[str, Check] = {
    "fail_on_flaky": boolean,
    "budget_seconds": number(0, 24 * 3600, low_open=True),
    "cap": whole(1, 10_000),
}
BLAME_KEYS: dict[str, Check] = {
    "base": plain_text,
    "untouched_failures": lambda path, value: choice(path, value, UNTOUCHED_POLICIES),
    "check_base": boolean,
    "base_timeout": number(0, 24 * 3600, low_open=True),
}
TOP_KEYS: dict[str, Check] = {
    "reruns": whole(0, 100),
    "max_failures": whole(0),
    "fail_on_flaky": boolean,
    "cov_fail_under": optional_percent,
    "report_dir": plain_text,
    "known_race_patterns": plain_text,
    "issues_deadline": number(0, 3600, low_open=True),
    "quarantine_read_deadline": number(0, 3600, low_open=True),
    "attempt_timeout": optional_seconds,
    "fork_reruns": boolean,
    "owners": owners,
    "triage_label": label,
}


def _check_mapping(
    where: str, prefix: str, data: Any, keys: dict[str, Check], nested: tuple[str, ...] = ()
) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where}: {prefix.rstrip('.') or 'the file'} must be a mapping, got {shown(data)}"
        )
    out: dict[str, Any] = {}
    valid = [*keys, *nested]
    for key, value in data.items():
        if not isinstance(key, str) or key not in valid:
            name = key[:SHOWN] if isinstance(key, str) else shown(key)
            raise ConfigError(f"{where}: {prefix}{name}: unknown key{nearest(name, valid)}")
        path = f"{prefix}{key}"
        if key in keys:
            out[key] = keys[key](f"{where}: {path}", value)
    return out


def parse(data: Any, where: str) -> Config:
    """Validate already-loaded YAML data; ``where`` names the file in errors."""
    if data is None:
        data = {}
    top = _check_mapping(
        where,
        "",
        data,
        TOP_KEYS,
        nested=(
            "quarantine_policy",
            "history",
            "burn_in",
            "blame",
            "notify",
            "rerun",
            "retry",
            "causes",
        ),
    )
    causes = _check_mapping(where, "causes.", data.get("causes") or {}, CAUSE_KEYS)
    builtin = DEFAULT_PATTERNS if causes.get("builtin_environment", True) else ()
    burn_in = _check_mapping(where, "burn_in.", data.get("burn_in") or {}, BURN_IN_KEYS)
    blame = _check_mapping(where, "blame.", data.get("blame") or {}, BLAME_KEYS)
    notify = _check_mapping(where, "notify.", data.get("notify") or {}, NOTIFY_KEYS)
    rerun = _check_mapping(where, "rerun.", data.get("rerun") or {}, RERUN_KEYS)
    retry = _check_mapping(where, "retry.", data.get("retry") or {}, RETRY_KEYS)
    policy_data = data.get("quarantine_policy") or {}
    policy_values = _check_mapping(where, "quarantine_policy.", policy_data, POLICY_KEYS)
    policy = QuarantinePolicy(**policy_values)
    if policy.exit_failure_rate >= policy.enter_failure_rate:
        raise ConfigError(
            f"{where}: quarantine_policy.exit_failure_rate ({policy.exit_failure_rate:g}) must be "
            f"below enter_failure_rate ({policy.enter_failure_rate:g}), or tests flap in and out"
        )
    history_values = _check_mapping(where, "history.", data.get("history") or {}, HISTORY_KEYS)
    history = HistoryWindow(**history_values)
    if history.window_runs is None and history.window_days is None:
        raise ConfigError(
            f"{where}: history: window_runs and window_days cannot both be null (no window)"
        )
    return Config(
        quarantine_policy=policy,
        history=history,
        burn_in=BurnIn(**burn_in),
        blame=BlameSettings(**blame),
        webhook_url=notify.get("webhook_url"),
        rerun_only=rerun.get("only", ()),
        rerun_except=rerun.get("except", ()),
        retry_count_as_flaky=retry.get("count_as_flaky", False),
        causes=CauseSettings(
            environment=(*builtin, *causes.get("environment", ())),
            environment_rerun_limit=causes.get("environment_rerun_limit", 200),
            storm_tests=causes.get("storm_tests", 3),
        ),
        **top,
    )


def find_default(start: Path) -> Optional[Path]:
    """``.github/flakewarden.yml`` in ``start`` or a parent, up to the repository root."""
    for directory in (start, *start.parents):
        candidate = directory / DEFAULT_PATH
        if candidate.is_file():
            return candidate
        if (directory / ".git").exists():
            return None
    return None


def load(path: Optional[Path], cwd: Path) -> Config:
    """Read the file named by ``--config``, else the default one if present, else defaults."""
    explicit = path is not None
    if path is None:
        path = find_default(cwd)
        if path is None:
            return Config()
    elif not path.is_absolute():
        path = cwd / path
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"config file {path} not found") from None
        return Config()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
    return parse(load_yaml(text, str(path)), str(path))._replace(source=path)
