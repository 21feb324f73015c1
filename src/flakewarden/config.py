"""The configuration file, ``.github/flakewarden.yml``: every key optional, every error one line.

Command-line options win over the file; the file wins over the defaults. An
unknown key, a wrong type or an out-of-range value is a ``ConfigError`` (exit 4)
naming the key's path and, for a misspelt key, the nearest valid one.
"""

from __future__ import annotations

import dataclasses
import difflib
from pathlib import Path
from typing import Any, Callable, Optional

from .errors import ConfigError

DEFAULT_PATH = Path(".github") / "flakewarden.yml"
VERDICTS = (
    "deterministic",
    "race",
    "order-dependent",
    "seed-dependent",
    "non-idempotent",
    "flaky",
    "not-reproducible",
    "error",
)
# A race or a real break is never quarantined, whatever a file says.
NEVER_QUARANTINE = ("race", "deterministic", "error")


@dataclasses.dataclass(frozen=True)
class QuarantinePolicy:
    min_failures: int = 3
    require_stress_verdict: bool = True
    stress_runs: int = 200
    allowed_verdicts: tuple[str, ...] = ("not-reproducible", "flaky")
    verdict_max_age_days: float = 14
    enter_failure_rate: float = 0.15
    exit_failure_rate: float = 0.05
    min_runs_to_release: int = 50
    max_days: float = 30


@dataclasses.dataclass(frozen=True)
class Config:
    reruns: int = 2
    max_failures: int = 10
    fail_on_flaky: bool = False
    cov_fail_under: Optional[float] = None
    report_dir: str = "flakewarden-report"
    quarantine_policy: QuarantinePolicy = QuarantinePolicy()
    known_race_patterns: str = "known-race-patterns.md"
    source: Optional[Path] = None  # the file read, if any


Check = Callable[[str, Any], Any]


def _int(minimum: int) -> Check:
    def check(path: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: expected a whole number, got {value!r}")
        if value < minimum:
            raise ConfigError(f"{path}: must be {minimum} or more, got {value}")
        return value

    return check


def _number(low: float, high: float, *, low_open: bool = False) -> Check:
    def check(path: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{path}: expected a number, got {value!r}")
        if value > high or value < low or (low_open and value == low):
            bound = f"above {low:g}" if low_open else f"{low:g} or more"
            raise ConfigError(f"{path}: must be {bound} and at most {high:g}, got {value}")
        return float(value)

    return check


def _bool(path: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: expected true or false, got {value!r}")
    return value


def _text(path: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{path}: expected a non-empty string, got {value!r}")
    return value


def _optional_percent(path: str, value: Any) -> Optional[float]:
    return None if value is None else _number(0, 100)(path, value)


def _verdicts(path: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: expected a list of verdicts, got {value!r}")
    for verdict in value:
        if verdict in NEVER_QUARANTINE:
            raise ConfigError(
                f"{path}: {verdict!r} can never allow a quarantine "
                "(a race or a real break must be fixed, not hidden)"
            )
        if verdict not in VERDICTS:
            raise ConfigError(f"{path}: unknown verdict {verdict!r}{_nearest(verdict, VERDICTS)}")
    return tuple(value)


POLICY_KEYS: dict[str, Check] = {
    "min_failures": _int(1),
    "require_stress_verdict": _bool,
    "stress_runs": _int(1),
    "allowed_verdicts": _verdicts,
    "verdict_max_age_days": _number(0, 3650, low_open=True),
    "enter_failure_rate": _number(0, 1, low_open=True),
    "exit_failure_rate": _number(0, 1),
    "min_runs_to_release": _int(1),
    "max_days": _number(0, 3650, low_open=True),
}
TOP_KEYS: dict[str, Check] = {
    "reruns": _int(0),
    "max_failures": _int(0),
    "fail_on_flaky": _bool,
    "cov_fail_under": _optional_percent,
    "report_dir": _text,
    "known_race_patterns": _text,
}


def _nearest(key: str, choices: Any) -> str:
    match = difflib.get_close_matches(key, list(choices), n=1, cutoff=0.5)
    return f"; did you mean {match[0]!r}?" if match else ""


def _check_mapping(
    where: str, prefix: str, data: Any, keys: dict[str, Check], nested: tuple[str, ...] = ()
) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: {prefix or 'the file'} must be a mapping, got {data!r}")
    out: dict[str, Any] = {}
    valid = [*keys, *nested]
    for key, value in data.items():
        path = f"{prefix}{key}"
        if not isinstance(key, str) or key not in valid:
            raise ConfigError(f"{where}: {path}: unknown key{_nearest(str(key), valid)}")
        if key in keys:
            out[key] = keys[key](f"{where}: {path}", value)
    return out


def parse(data: Any, where: str) -> Config:
    """Validate already-loaded YAML data; ``where`` names the file in errors."""
    if data is None:
        data = {}
    top = _check_mapping(where, "", data, TOP_KEYS, nested=("quarantine_policy",))
    policy_data = data.get("quarantine_policy") or {}
    policy_values = _check_mapping(where, "quarantine_policy.", policy_data, POLICY_KEYS)
    policy = dataclasses.replace(QuarantinePolicy(), **policy_values)
    if policy.exit_failure_rate >= policy.enter_failure_rate:
        raise ConfigError(
            f"{where}: quarantine_policy.exit_failure_rate ({policy.exit_failure_rate:g}) must be "
            f"below enter_failure_rate ({policy.enter_failure_rate:g}), or tests flap in and out"
        )
    return dataclasses.replace(Config(), quarantine_policy=policy, **top)


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
    import yaml  # only when there is a file to read

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{path}: malformed YAML{at}: {problem}") from None
    return dataclasses.replace(parse(data, str(path)), source=path)
