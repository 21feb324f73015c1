"""The configuration file, ``.github/flakewarden.yml``: every key optional, every error one line.

Command-line options win over the file; the file wins over the defaults. An
unknown key, a wrong type or an out-of-range value is a ``ConfigError`` (exit 4)
naming the key's path and, for a misspelt key, the nearest valid one.
"""

from __future__ import annotations

import math
import re
import reprlib
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

from flakewarden.config_yaml import SHOWN, load_yaml
from flakewarden.errors import ConfigError
from flakewarden.model.environment import DEFAULT_PATTERNS
from flakewarden.model.verdicts import (
    FLAKY,
    INCONCLUSIVE,
    NEVER_QUARANTINE,
    NOT_REPRODUCIBLE,
    UNTOUCHED_POLICIES,
    VERDICTS,
)

DEFAULT_PATH = Path(".github") / "flakewarden.yml"
MAX_ATTEMPT_TIMEOUT = 10 * 24 * 3600.0  # seconds: ten days is no limit at all


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


Check = Callable[[str, Any], Any]

#: The largest whole number any key takes.
MAX_WHOLE = 1_000_000_000

_repr = reprlib.Repr()
_repr.maxlevel, _repr.maxlist, _repr.maxtuple, _repr.maxdict = 2, 4, 4, 4
_repr.maxstring, _repr.maxother, _repr.maxlong = SHOWN, SHOWN, 40


def shown(value: Any) -> str:
    """A bad value as an error message quotes it: ``repr``, cut short, whatever its size."""
    text = _repr.repr(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _int(minimum: int, maximum: int = MAX_WHOLE) -> Check:
    def check(path: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: expected a whole number, got {shown(value)}")
        if value < minimum:
            raise ConfigError(f"{path}: must be {minimum} or more, got {shown(value)}")
        if value > maximum:
            raise ConfigError(f"{path}: must be at most {maximum}, got {shown(value)}")
        return value

    return check


def _number(low: float, high: float, *, low_open: bool = False) -> Check:
    def check(path: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{path}: expected a number, got {shown(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{path}: expected a finite number, got {shown(value)}")
        if value > high or value < low or (low_open and value == low):
            bound = f"above {low:g}" if low_open else f"{low:g} or more"
            raise ConfigError(f"{path}: must be {bound} and at most {high:g}, got {shown(value)}")
        return float(value)

    return check


def _bool(path: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: expected true or false, got {shown(value)}")
    return value


def _choice(path: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ConfigError(f"{path}: expected one of {', '.join(choices)}, got {shown(value)}")
    return str(value)


def _text(path: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{path}: expected a non-empty string, got {shown(value)}")
    return value


# CODEOWNERS' owner forms: @user, @org/team, an email address (``github.codeowners``).
_OWNER = re.compile(
    r"@[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}"
    r"|@[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9][A-Za-z0-9_.-]{0,99}"
    r"|[^@\s]+@[^@\s]+\.[^@\s]+"
)


def _owners(path: str, value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``owners:``, CODEOWNERS patterns to owners, in the file's order (the last match wins)."""
    if not isinstance(value, dict):
        raise ConfigError(
            f"{path}: expected a mapping of path patterns to owners, got {shown(value)}"
        )
    out = []
    for pattern, owners in value.items():
        where = f"{path}.{shown(pattern)}"
        if not isinstance(pattern, str) or not pattern.strip() or pattern.startswith("!"):
            raise ConfigError(
                f"{where}: expected a path pattern (no ! negation), got {shown(pattern)}"
            )
        names = [owners] if isinstance(owners, str) else owners
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ConfigError(
                f"{where}: expected an owner or a list of owners, got {shown(owners)}"
            )
        for name in names:
            if not _OWNER.fullmatch(name):
                raise ConfigError(
                    f"{where}: {shown(name)} is not @user, @org/team or an email address"
                )
        out.append((pattern.strip(), tuple(names)))
    return tuple(out)


def _label(path: str, value: Any) -> str:
    text = _text(path, value)
    if len(text) > 50 or any(c in text for c in ",\n\r"):
        raise ConfigError(
            f"{path}: a label name of at most 50 characters, no comma, got {shown(value)}"
        )
    return text


def _optional_percent(path: str, value: Any) -> Optional[float]:
    return None if value is None else _number(0, 100)(path, value)


def _optional_seconds(path: str, value: Any) -> Optional[float]:
    return None if value is None else _number(0, MAX_ATTEMPT_TIMEOUT, low_open=True)(path, value)


def _verdicts(path: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: expected a list of verdicts, got {shown(value)}")
    for verdict in value:
        if verdict in NEVER_QUARANTINE:
            why = (
                "the runs ended before a knob's effect was found or ruled out"
                if verdict == INCONCLUSIVE
                else "a race or a real break must be fixed, not hidden"
            )
            raise ConfigError(f"{path}: {shown(verdict)} can never allow a quarantine ({why})")
        if verdict not in VERDICTS:
            raise ConfigError(
                f"{path}: unknown verdict {shown(verdict)}{_nearest(verdict[:SHOWN], VERDICTS)}"
            )
    return tuple(value)


POLICY_KEYS: dict[str, Check] = {
    "min_failures": _int(1),
    "require_stress_verdict": _bool,
    "stress_runs": _int(1),
    "allowed_verdicts": _verdicts,
    "verdict_max_age_days": _number(0, 3650, low_open=True),
    "max_knob_increase": _number(0, 1),
    "relative_knob_increase": _number(0, 10),
    "enter_failure_rate": _number(0, 1, low_open=True),
    "exit_failure_rate": _number(0, 1),
    "min_runs_to_release": _int(1),
    "max_days": _number(0, 3650, low_open=True),
    "min_runs": _int(1),
}


def _optional_runs(path: str, value: Any) -> Optional[int]:
    return None if value is None else int(_int(1)(path, value))


def _optional_days(path: str, value: Any) -> Optional[float]:
    return None if value is None else _number(0, 3650, low_open=True)(path, value)


def _webhook(path: str, value: Any) -> Optional[str]:
    if value is None:
        return None
    text = _text(path, value)
    if not re.match(r"https?://[^/\s@]+(/\S*)?$", text):
        raise ConfigError(f"{path}: expected an http(s) URL without a user name or password")
    return text


def _patterns(path: str, value: Any) -> tuple[str, ...]:
    from flakewarden.model.rerun_policy import check

    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ConfigError(f"{path}: expected a pattern or a list of patterns, got {shown(value)}")
    for item in items:
        try:
            check(item)
        except ValueError as exc:
            raise ConfigError(f"{path}: {str(exc)[:200]}") from None
    return tuple(items)


NOTIFY_KEYS: dict[str, Check] = {"webhook_url": _webhook}
RERUN_KEYS: dict[str, Check] = {"only": _patterns, "except": _patterns}
RETRY_KEYS: dict[str, Check] = {"count_as_flaky": _bool}
CAUSE_KEYS: dict[str, Check] = {
    "environment": _patterns,
    "builtin_environment": _bool,
    "environment_rerun_limit": _int(0),
    "storm_tests": _int(2),
}

HISTORY_KEYS: dict[str, Check] = {
    "default_branch": _text,
    "window_runs": _optional_runs,
    "window_days": _optional_days,
    "fell_over_share": _number(0, 1, low_open=True),
}
BURN_IN_KEYS: dict[str, Check] = {
    "fail_on_flaky": _bool,
    "budget_seconds": _number(0, 24 * 3600, low_open=True),
    "cap": _int(1, 10_000),
}
BLAME_KEYS: dict[str, Check] = {
    "base": _text,
    "untouched_failures": lambda path, value: _choice(path, value, UNTOUCHED_POLICIES),
    "check_base": _bool,
    "base_timeout": _number(0, 24 * 3600, low_open=True),
}
TOP_KEYS: dict[str, Check] = {
    "reruns": _int(0, 100),
    "max_failures": _int(0),
    "fail_on_flaky": _bool,
    "cov_fail_under": _optional_percent,
    "report_dir": _text,
    "known_race_patterns": _text,
    "issues_deadline": _number(0, 3600, low_open=True),
    "quarantine_read_deadline": _number(0, 3600, low_open=True),
    "attempt_timeout": _optional_seconds,
    "fork_reruns": _bool,
    "owners": _owners,
    "triage_label": _label,
}


def _nearest(key: str, choices: Any) -> str:
    import difflib  # here: only a misspelt key needs it, every run would pay its import

    match = difflib.get_close_matches(key, list(choices), n=1, cutoff=0.5)
    return f"; did you mean {match[0]!r}?" if match else ""


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
            raise ConfigError(f"{where}: {prefix}{name}: unknown key{_nearest(name, valid)}")
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
